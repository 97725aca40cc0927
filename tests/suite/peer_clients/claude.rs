//! Claude Code (npm `@anthropic-ai/claude-code`, installed into `.deps/claude-code` by
//! `.ci/install-test-deps`) as the client: headless (`claude --bare -p`), pointed at the mock
//! Anthropic server, the four servers from `--mcp-config`.
//!
//! No network beyond loopback: telemetry, updates and error reports are off, and any other
//! connection Claude Code might try goes to a proxy address where nothing listens.
//!
//! `read_file` of a PNG (tern-fs returns an image block): Claude Code hands the model the image
//! itself.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::dep;
use tern_model::mock::{MockModelServer, MockResponse, RecordedRequest, script::AnthropicTurn};

use super::{Expect, Step, Workspace};

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
fn script(server: &MockModelServer, steps: Vec<(String, Value)>) {
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
async fn claude_code_gets_the_real_output_of_every_tool_of_terns_servers() {
    let ws = Workspace::new().await;
    let steps = ws.steps();
    let name = |s: &Step| format!("mcp__{}__{}", s.server, s.tool);
    let server = MockModelServer::start().await.unwrap();
    script(
        &server,
        steps.iter().map(|s| (name(s), s.args.clone())).collect(),
    );
    let servers: serde_json::Map<String, Value> = ws
        .servers()
        .into_iter()
        .map(|s| {
            let env: serde_json::Map<String, Value> = s
                .env
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let entry = json!({"type": "stdio", "command": s.command, "args": s.args, "env": env});
            (s.name.to_owned(), entry)
        })
        .collect();
    let mut allowed: Vec<String> = steps.iter().map(name).collect();
    allowed.sort();
    allowed.dedup();
    let result = claude(
        &server,
        &ws.root,
        &json!({"mcpServers": servers}),
        &allowed.join(" "),
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
    let given: Vec<String> = blocks.iter().map(result_text).collect();
    ws.assert_given("Claude Code", &steps, &given);
    // read_file of an image: Claude Code hands the model tern-fs's image block, as an image.
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
        "data": super::super::images::PNG_B64}});
    for (step, block) in steps.iter().zip(&blocks) {
        if matches!(step.expect, Expect::Image) {
            assert!(
                block["content"]
                    .as_array()
                    .is_some_and(|c| c.contains(&image)),
                "the image did not reach the model as an image: {block}"
            );
        }
    }
}
