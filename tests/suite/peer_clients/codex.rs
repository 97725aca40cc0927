//! Codex CLI (npm `@openai/codex`, `.deps/codex`) as the client: `codex exec` with its own
//! `CODEX_HOME`, a custom `model_providers` entry whose `base_url` is the mock speaking the
//! Responses API, the four servers as `[mcp_servers]`. Codex offers each MCP server's tools
//! inside a namespace tool (`mcp__fs` holding `read_file`, …) and sends the model the result as
//! `function_call_output` — `JSON.stringify(structuredContent)` when there is one, so the text
//! must be in it.
//!
//! `read_file` of a PNG (tern-fs returns an image block): Codex, which passes on only
//! `structuredContent`, gives its model the note naming the image's type and size.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::dep;
use tern_model::mock::{MockModelServer, MockResponse, RecordedRequest, responses::ResponsesTurn};

use super::{Expect, Step, Workspace, quoted};

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
fn script_responses(server: &MockModelServer, steps: Vec<(String, &'static str, Value)>) {
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
/// `servers` (`Workspace::servers`) as MCP servers whose tools need no approval.
fn codex_config(server: &MockModelServer, ws: &Workspace) -> String {
    let mut config = format!(
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
"#,
        base = quoted(Path::new(&format!("{}/v1", server.url()))),
    );
    for server in ws.servers() {
        let args: Vec<String> = server.args.iter().map(|a| quoted(Path::new(a))).collect();
        let env: Vec<String> = server
            .env
            .iter()
            .map(|(k, v)| format!("{k} = {}", quoted(Path::new(v))))
            .collect();
        // Codex starts a server with only a few variables of its own environment, plus `env`;
        // a sub-agent's run may take longer than Codex's default 60 s tool timeout on a busy
        // machine.
        config.push_str(&format!(
            "\n[mcp_servers.{}]\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n\
             default_tools_approval_mode = \"approve\"\nstartup_timeout_sec = 30\n\
             tool_timeout_sec = 120\n",
            server.name,
            quoted(&server.command),
            args.join(", "),
            env.join(", "),
        ));
    }
    config
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
async fn codex_gets_the_real_output_of_every_tool_of_terns_servers() {
    let ws = Workspace::new().await;
    let steps = ws.steps();
    let server = MockModelServer::start().await.unwrap();
    script_responses(
        &server,
        steps
            .iter()
            .map(|s: &Step| (format!("mcp__{}", s.server), s.tool, s.args.clone()))
            .collect(),
    );
    let stdout = codex(&codex_config(&server, &ws), &ws.root).await;
    assert!(stdout.contains("All done."), "{stdout}");
    let last = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "POST" && r.path.ends_with("/responses"))
        .expect("codex asked the model");
    let outputs = call_outputs(&last);
    let ids: Vec<String> = outputs.iter().map(|(id, _)| id.clone()).collect();
    let expected: Vec<String> = (0..steps.len()).map(|i| format!("call_{i}")).collect();
    assert_eq!(ids, expected, "{outputs:#?}");
    let given: Vec<String> = outputs.into_iter().map(|(_, o)| o).collect();
    ws.assert_given("Codex", &steps, &given);
    // read_file of an image: Codex passes on only `structuredContent` when a result has it
    // (see above), so its model learns what the file is, not what it shows.
    for (step, said) in steps.iter().zip(&given) {
        if matches!(step.expect, Expect::Image) {
            assert!(
                said.contains("image/png") && said.contains("70 bytes"),
                "{said}"
            );
        }
    }
}
