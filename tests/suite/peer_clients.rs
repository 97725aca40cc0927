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
//!
//! Codex CLI (npm `@openai/codex`, `.deps/codex`) the same way: `codex exec` with its own
//! `CODEX_HOME`, a custom `model_providers` entry whose `base_url` is the mock speaking the
//! Responses API, tern-fs and tern-shell as `[mcp_servers]`. Codex offers each MCP server's tools
//! inside a namespace tool (`mcp__fs` holding `read_file`, …) and sends the model the result as
//! `function_call_output` — `JSON.stringify(structuredContent)` when there is one, so the text
//! must be in it.
//!
//! `read_file` of a PNG (tern-fs returns an image block): Claude Code hands the model the image
//! itself; Codex, which passes on only `structuredContent`, the note naming its type and size.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::{bin, dep};
use tern_model::mock::{
    MockModelServer, MockResponse, RecordedRequest, responses::ResponsesTurn, script::AnthropicTurn,
};

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
    std::fs::write(root.join("shot.png"), super::images::png()).unwrap();
    let server = MockModelServer::start().await.unwrap();
    script(
        &server,
        vec![
            ("mcp__fs__read_file", json!({"path": "notes.txt"})),
            ("mcp__fs__read_file", json!({"path": "shot.png"})),
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
    let blocks = tool_results(&last);
    // read_file of an image: Claude Code hands the model tern-fs's image block, as an image.
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
        "data": super::images::PNG_B64}});
    assert!(
        blocks[1]["content"]
            .as_array()
            .is_some_and(|c| c.contains(&image)),
        "the image did not reach the model as an image: {}",
        blocks[1]
    );
    let mut results: Vec<String> = blocks.iter().map(result_text).collect();
    results.remove(1);
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

// ---- Codex CLI ----------------------------------------------------------------------------

/// The Codex CLI launcher installed by `.ci/install-test-deps` (npm `@openai/codex`, whose
/// per-platform optional dependency holds the native binary).
const CODEX: &str = "codex/node_modules/.bin/codex";

/// The `function_call_output` items of a Responses API request, in order, as
/// `(call_id, output)`; Codex sends an output as a string or as a list of `input_text` parts,
/// joined here with newlines.
fn call_outputs(request: &RecordedRequest) -> Vec<(String, String)> {
    request.json()["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            let output = match &i["output"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .map(|p| {
                        p["text"]
                            .as_str()
                            .map_or_else(|| p.to_string(), str::to_owned)
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            (i["call_id"].as_str().unwrap_or_default().to_owned(), output)
        })
        .collect()
}

/// Whether the request offers `tool` inside the namespace tool `namespace` (Codex offers an MCP
/// server `fs` as `{"type": "namespace", "name": "mcp__fs", "tools": [...]}`).
fn offers_in(request: &RecordedRequest, namespace: &str, tool: &str) -> bool {
    request.json()["tools"].as_array().is_some_and(|tools| {
        tools.iter().any(|t| {
            t["type"] == "namespace"
                && t["name"] == namespace
                && t["tools"]
                    .as_array()
                    .is_some_and(|inner| inner.iter().any(|f| f["name"] == tool))
        })
    })
}

/// The scripted Responses model: the `n`th call of `steps` (namespace, tool, arguments) once
/// `n` outputs came back, then a final message. A tool Codex did not offer is a 400, so the
/// run fails loudly instead of the model answering without it.
fn script_responses(server: &MockModelServer, steps: Vec<(&'static str, &'static str, Value)>) {
    server.respond_when(
        |r| r.method == "POST" && r.path.ends_with("/responses"),
        move |request| {
            let done = call_outputs(request).len();
            match steps.get(done) {
                Some((namespace, tool, args)) if offers_in(request, namespace, tool) => {
                    ResponsesTurn::new()
                        .namespaced_function_call(
                            &format!("fc_{done}"),
                            &format!("call_{done}"),
                            namespace,
                            tool,
                            &[&args.to_string()],
                        )
                        .completed()
                }
                Some((namespace, tool, _)) => MockResponse::json(
                    400,
                    &json!({"error": {"type": "invalid_request_error", "code": null,
                        "param": "tools",
                        "message": format!("mock: {namespace}.{tool} was not offered")}}),
                ),
                None => ResponsesTurn::new()
                    .message("msg_end", &["All done."])
                    .completed(),
            }
        },
    );
}

/// `CODEX_HOME/config.toml`: the mock as a custom Responses provider, nothing else leaving the
/// machine (no analytics, feedback, OpenTelemetry or update check), no approval prompts, and
/// tern-fs and tern-shell as MCP servers rooted at `root`.
fn codex_config(server: &MockModelServer, root: &Path) -> String {
    let toml_str = |s: &str| Value::String(s.to_owned()).to_string();
    let root_s = toml_str(&root.to_string_lossy());
    format!(
        r#"model = "mock-model"
model_provider = "mock"
approval_policy = "never"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.mock]
name = "mock"
base_url = {base}
wire_api = "responses"
env_key = "MOCK_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.fs]
command = {fs}
args = ["--root", {root_s}]
default_tools_approval_mode = "approve"

[mcp_servers.shell]
command = {shell}
args = ["--root", {root_s}]
default_tools_approval_mode = "approve"
"#,
        base = toml_str(&format!("{}/v1", server.url())),
        fs = toml_str(&bin("tern-fs").to_string_lossy()),
        shell = toml_str(&bin("tern-shell").to_string_lossy()),
    )
}

/// Runs `codex exec PROMPT` in `cwd` with `config` as its whole configuration; returns its
/// stdout (the final message).
async fn codex(config: &str, cwd: &Path) -> String {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let out = tokio::process::Command::new(dep(CODEX))
        .args([
            "exec",
            "--strict-config",
            "--skip-git-repo-check",
            "--color",
            "never",
        ])
        .arg("Do the task.")
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .env("MOCK_MODEL_KEY", "sk-test-not-a-key")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("codex did not finish in 60 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "codex failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test]
async fn codex_gets_the_real_output_of_tern_fs_and_tern_shell() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("notes.txt"),
        "the quokka line\nsecond: wombat-42\n",
    )
    .unwrap();
    std::fs::write(root.join("shot.png"), super::images::png()).unwrap();
    let server = MockModelServer::start().await.unwrap();
    script_responses(
        &server,
        vec![
            ("mcp__fs", "read_file", json!({"path": "notes.txt"})),
            ("mcp__fs", "read_file", json!({"path": "shot.png"})),
            (
                "mcp__fs",
                "edit_file",
                json!({"path": "notes.txt", "old_string": "wombat-42", "new_string": "numbat-7"}),
            ),
            (
                "mcp__fs",
                "grep",
                json!({"pattern": "numbat", "output_mode": "content"}),
            ),
            (
                "mcp__shell",
                "run",
                json!({"command": "echo platypus-$((6*7)); exit 3"}),
            ),
        ],
    );
    let stdout = codex(&codex_config(&server, &root), &root).await;
    assert!(stdout.contains("All done."), "{stdout}");
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST" && r.path.ends_with("/responses"))
        .expect("codex asked the model");
    let image_item = last.json()["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output" && i["call_id"] == "call_1")
        .cloned()
        .unwrap();
    // read_file of an image: Codex passes on only `structuredContent` when a result has it
    // (see above), so its model learns what the file is, not what it shows.
    let said = image_item["output"].to_string();
    assert!(
        said.contains("image/png") && said.contains("70 bytes"),
        "{image_item}"
    );
    let mut outputs = call_outputs(&last);
    outputs.remove(1);
    let ids: Vec<&str> = outputs.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["call_0", "call_2", "call_3", "call_4"],
        "{outputs:#?}"
    );
    let results: Vec<&str> = outputs.iter().map(|(_, o)| o.as_str()).collect();
    // read_file: the file's lines themselves (numbered), not only metadata about them.
    assert!(
        results[0].contains("the quokka line") && results[0].contains("second: wombat-42"),
        "read_file reached the model without the file's text: {}",
        results[0]
    );
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
