//! tern's built-in servers under another agent: Claude Code (npm `@anthropic-ai/claude-code`,
//! installed into `.deps/claude-code` by `.ci/install-test-deps`), headless (`claude -p`),
//! pointed at the mock Anthropic server, with tern-fs and tern-shell from `--mcp-config`.
//!
//! Claude Code shows the model only `JSON.stringify(structuredContent)` when a result has it
//! (anthropics/claude-code#54450): before issue 23 every `read_file` reached the model as
//! metadata without the file's text. The scripted model here calls tools one after another and
//! the test reads, in the next request Claude Code sends, what the model was given.
//!
//! No network beyond loopback: telemetry, updates and error reports are off, and any other
//! connection Claude Code might try goes to a proxy address where nothing listens.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::{bin, dep};
use tern_model::mock::{MockModelServer, MockResponse, RecordedRequest, script::AnthropicTurn};

/// The `tool_result` blocks of a request to the Messages API, in order.
fn tool_results(request: &RecordedRequest) -> Vec<Value> {
    let body = request.json();
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// What the model was given for one tool result, as one string (Claude Code sends a string or
/// a list of blocks).
fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i["text"]
                    .as_str()
                    .map_or_else(|| i.to_string(), str::to_string)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn offers(request: &RecordedRequest, tool: &str) -> bool {
    request.json()["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == tool))
}

/// Runs `claude -p PROMPT` in `cwd` against `server` with `mcp_config`; returns its JSON
/// result (`--output-format json`).
async fn claude(server: &MockModelServer, cwd: &Path, mcp_config: &Value, allowed: &str) -> Value {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("mcp.json");
    std::fs::write(&config, mcp_config.to_string()).unwrap();
    let out = tokio::process::Command::new(dep("claude-code/node_modules/.bin/claude"))
        .args(["--bare", "-p", "Do the task.", "--output-format", "json"])
        .arg("--mcp-config")
        .arg(&config)
        .args(["--strict-mcp-config", "--allowedTools", allowed])
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path().join(".claude"))
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        // Nothing but the model calls: no telemetry, updates, error reports or other traffic,
        // every MCP tool offered up front (no tool search), and a dead proxy for anything else.
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), out)
        .await
        .expect("claude did not finish in 90 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "claude failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: claude printed {stdout}"))
}

/// The scripted model: the `n`th tool call of `script` once `n` results came back, then a
/// final answer.
fn script(server: &MockModelServer, steps: Vec<(&'static str, Value)>) {
    server.respond_when(
        |_| true,
        move |request| {
            let done = tool_results(request).len();
            match steps.get(done) {
                Some((tool, input)) if offers(request, tool) => AnthropicTurn::new()
                    .tool_use(&format!("toolu_{done}"), tool, &[&input.to_string()])
                    .finish("tool_use"),
                Some((tool, _)) => MockResponse::json(
                    400,
                    &json!({"type": "error", "error": {"type": "invalid_request_error",
                        "message": format!("mock: {tool} was not offered")}}),
                ),
                None => AnthropicTurn::new().text(&["All done."]).finish("end_turn"),
            }
        },
    );
}

#[tokio::test]
async fn claude_code_gets_the_real_output_of_tern_fs_and_tern_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("notes.txt"),
        "the quokka line\nsecond: wombat-42\n",
    )
    .unwrap();
    let server = MockModelServer::start().await.unwrap();
    script(
        &server,
        vec![
            ("mcp__fs__read_file", json!({"path": "notes.txt"})),
            (
                "mcp__fs__edit_file",
                json!({"path": "notes.txt", "old_string": "wombat-42", "new_string": "numbat-7"}),
            ),
            (
                "mcp__fs__grep",
                json!({"pattern": "numbat", "output_mode": "content"}),
            ),
            (
                "mcp__shell__run",
                json!({"command": "echo platypus-$((6*7)); exit 3"}),
            ),
        ],
    );
    let root_s = root.to_string_lossy().into_owned();
    let config = json!({"mcpServers": {
        "fs": {"type": "stdio", "command": bin("tern-fs"), "args": ["--root", root_s]},
        "shell": {"type": "stdio", "command": bin("tern-shell"), "args": ["--root", root_s]},
    }});
    let result = claude(
        &server,
        &root,
        &config,
        "mcp__fs__read_file mcp__fs__edit_file mcp__fs__grep mcp__shell__run",
    )
    .await;
    assert_eq!(result["result"], "All done.", "{result}");
    // Claude Code calls `/v1/messages?beta=true`.
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST" && r.path.starts_with("/v1/messages"))
        .expect("claude asked the model");
    let results: Vec<String> = tool_results(&last).iter().map(result_text).collect();
    assert_eq!(results.len(), 4, "{results:#?}");
    // read_file: the file's lines themselves, numbered.
    assert!(
        results[0].contains("the quokka line") && results[0].contains("second: wombat-42"),
        "read_file reached the model without the file's text: {}",
        results[0]
    );
    // edit_file: the diff, not only the count of replacements.
    assert!(
        results[1].contains("-second: wombat-42") && results[1].contains("+second: numbat-7"),
        "edit_file reached the model without its diff: {}",
        results[1]
    );
    assert!(
        results[2].contains("notes.txt:2:second: numbat-7"),
        "{}",
        results[2]
    );
    // shell run: the output and the exit code.
    assert!(
        results[3].contains("platypus-42") && results[3].contains("exit code 3"),
        "run reached the model without its output: {}",
        results[3]
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "the quokka line\nsecond: numbat-7\n"
    );
}
