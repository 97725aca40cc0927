//! OpenTelemetry export: a real `tern run` sends its trace and metrics over OTLP/HTTP to a
//! receiver that decodes them with the official OpenTelemetry protobuf definitions
//! (`opentelemetry-proto`, Python); an MCP server (official Python SDK) reports the
//! `traceparent` it got in the request's `_meta`.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
    process::Stdio,
};

use serde_json::Value;
use tern_e2e::run_env::{CANARY, RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The receiver process and where it writes what it decoded.
struct Receiver {
    _child: tokio::process::Child,
    port: u16,
    out: std::path::PathBuf,
}

async fn receiver(dir: &Path) -> Receiver {
    let out = dir.join("otlp.jsonl");
    let mut child = tokio::process::Command::new(tern_e2e::dep("venv/bin/python"))
        .arg(tern_e2e::workspace_root().join("tests/interop/otlp_receiver.py"))
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .expect("the OTLP receiver did not start")
        .unwrap()
        .expect("the OTLP receiver printed no port")
        .trim()
        .parse()
        .unwrap();
    Receiver {
        _child: child,
        port,
        out,
    }
}

/// Every request the receiver decoded; a request it could not decode fails the test.
fn received(r: &Receiver) -> Vec<Value> {
    let text = std::fs::read_to_string(&r.out).unwrap_or_default();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for e in &entries {
        assert!(
            e.get("error").is_none(),
            "the receiver refused a request: {e}"
        );
    }
    entries
}

/// The spans of every trace request, with their resource's attributes.
fn spans(entries: &[Value]) -> Vec<(Value, Value)> {
    let mut out = Vec::new();
    for e in entries.iter().filter(|e| e["path"] == "/v1/traces") {
        for rs in e["body"]["resource_spans"].as_array().unwrap() {
            for ss in rs["scope_spans"].as_array().unwrap() {
                for span in ss["spans"].as_array().unwrap() {
                    out.push((span.clone(), rs["resource"].clone()));
                }
            }
        }
    }
    out
}

/// An attribute's value (`stringValue`, `intValue`, …) as JSON.
fn attr(span: &Value, key: &str) -> Option<Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let v = &a["value"];
            v.get("string_value")
                .or(v.get("int_value"))
                .or(v.get("double_value"))
                .or(v.get("bool_value"))
                .or(v.get("array_value"))
                .cloned()
                .unwrap_or(Value::Null)
        })
}

fn script(env: &RunEnv) {
    env.server.enqueue(
        AnthropicTurn::with_usage(1200, 300, 50)
            .text(&["Reading, and asking the meta server."])
            .tool_use("toolu_read", "fs__read_file", &[r#"{"path":"notes.txt"}"#])
            .tool_use("toolu_meta", "meta__echo_meta", &["{}"])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(200, 1500, 0)
            .text(&["ANSWER-MARKER: done."])
            .finish("end_turn"),
    );
}

fn setup(env: &RunEnv) {
    std::fs::write(
        env.dir.path().join("notes.txt"),
        format!("FILE-CONTENT-MARKER\nkey: {CANARY}\n"),
    )
    .unwrap();
    env.add_servers(&format!(
        "[mcp_servers.meta]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_sec = 60\nrequired = true\n",
        tern_e2e::dep("venv/bin/python").to_string_lossy(),
        tern_e2e::workspace_root()
            .join("tests/interop/meta_server.py")
            .to_string_lossy(),
    ));
}

#[tokio::test]
async fn a_run_exports_one_genai_trace_and_the_tool_server_sees_its_traceparent() {
    let env = RunEnv::new().await;
    setup(&env);
    let rx = receiver(env.home.path()).await;
    script(&env);
    let out = env
        .command(&[
            "run",
            "GOAL-MARKER: read the notes",
            "--output-format",
            "jsonl",
            "--allow",
            "meta__*",
        ])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", rx.port),
        )
        .env("OTEL_SERVICE_NAME", "tern-e2e")
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let events = env.events();
    let run_id = events[0]["run_id"].as_str().unwrap().to_string();

    let entries = received(&rx);
    assert!(
        entries
            .iter()
            .all(|e| e["content_type"] == "application/x-protobuf"),
        "{entries:#?}"
    );
    let spans = spans(&entries);
    let names: Vec<&str> = spans
        .iter()
        .map(|(s, _)| s["name"].as_str().unwrap())
        .collect();
    let trace_ids: HashSet<&str> = spans
        .iter()
        .map(|(s, _)| s["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(trace_ids.len(), 1, "one trace: {names:?}");
    let by_name: HashMap<&str, Vec<&Value>> = spans.iter().fold(HashMap::new(), |mut m, (s, _)| {
        m.entry(s["name"].as_str().unwrap()).or_default().push(s);
        m
    });
    // The tree: the run at the root, model calls and tool calls under it.
    let root = by_name["invoke_agent tern"][0];
    assert_eq!(root["parent_span_id"], "", "{root}");
    let root_id = root["span_id"].as_str().unwrap();
    let chats = &by_name["chat claude-sonnet-4-5"];
    assert_eq!(chats.len(), 2, "{names:?}");
    let read = by_name["execute_tool fs__read_file"][0];
    let meta = by_name["execute_tool meta__echo_meta"][0];
    for child in chats.iter().chain([&read, &meta]) {
        assert_eq!(child["parent_span_id"], root_id, "{child}");
    }
    assert_eq!(spans.len(), 5, "{names:?}");

    // GenAI attributes.
    assert_eq!(attr(root, "gen_ai.operation.name").unwrap(), "invoke_agent");
    assert_eq!(attr(root, "gen_ai.agent.id").unwrap(), run_id.as_str());
    assert_eq!(attr(root, "tern.run.status").unwrap(), "success");
    let first = chats
        .iter()
        .find(|c| attr(c, "tern.step").unwrap() == "1")
        .unwrap();
    assert_eq!(attr(first, "gen_ai.operation.name").unwrap(), "chat");
    assert_eq!(attr(first, "gen_ai.provider.name").unwrap(), "anthropic");
    assert_eq!(
        attr(first, "gen_ai.request.model").unwrap(),
        "claude-sonnet-4-5"
    );
    assert_eq!(attr(first, "gen_ai.usage.input_tokens").unwrap(), "1550");
    assert_eq!(attr(first, "gen_ai.usage.output_tokens").unwrap(), "42");
    assert_eq!(
        attr(first, "gen_ai.usage.cache_read.input_tokens").unwrap(),
        "300"
    );
    assert!(
        attr(first, "gen_ai.response.finish_reasons")
            .unwrap()
            .to_string()
            .contains("tool_use")
    );
    assert_eq!(first["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(attr(meta, "gen_ai.operation.name").unwrap(), "execute_tool");
    assert_eq!(attr(meta, "gen_ai.tool.name").unwrap(), "meta__echo_meta");
    assert_eq!(attr(meta, "gen_ai.tool.call.id").unwrap(), "toolu_meta");
    assert_eq!(attr(meta, "mcp.method.name").unwrap(), "tools/call");
    assert_eq!(attr(meta, "tern.mcp.server").unwrap(), "meta");
    assert_eq!(attr(meta, "tern.permission.decision").unwrap(), "allow");
    assert_eq!(attr(read, "tern.mcp.server").unwrap(), "fs");
    let resource = &spans[0].1;
    assert!(
        resource.to_string().contains("\"tern-e2e\""),
        "service.name: {resource}"
    );

    // The tool server saw the traceparent of its own execute_tool span.
    let echoed = of_type(&events, "tool_call_finished")
        .into_iter()
        .find(|c| c["call_id"] == "toolu_meta")
        .unwrap()["output"]
        .as_str()
        .unwrap()
        .to_string();
    let seen: Value = serde_json::from_str(&echoed).unwrap_or_else(|e| panic!("{e}: {echoed}"));
    let trace_id = trace_ids.iter().next().unwrap();
    assert_eq!(
        seen["traceparent"],
        format!("00-{trace_id}-{}-01", meta["span_id"].as_str().unwrap()),
        "{seen}"
    );

    // Token and duration metrics.
    let metrics: Vec<&Value> = entries
        .iter()
        .filter(|e| e["path"] == "/v1/metrics")
        .collect();
    let text = serde_json::to_string(&metrics).unwrap();
    for name in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "mcp.client.operation.duration",
    ] {
        assert!(text.contains(name), "{name} missing from {text}");
    }

    // No content by default: not the goal, the answer, a file's text or a key.
    let all = std::fs::read_to_string(&rx.out).unwrap();
    for marker in [
        "GOAL-MARKER",
        "ANSWER-MARKER",
        "FILE-CONTENT-MARKER",
        CANARY,
    ] {
        assert!(!all.contains(marker), "{marker} was exported");
    }
}

#[tokio::test]
async fn content_is_exported_only_when_asked_redacted_and_json_works_too() {
    let env = RunEnv::new().await;
    setup(&env);
    let rx = receiver(env.home.path()).await;
    script(&env);
    let out = env
        .command(&[
            "run",
            "GOAL-MARKER: read the notes",
            "--allow",
            "meta__*",
            "-c",
            "telemetry.capture_content=true",
        ])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", rx.port),
        )
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let entries = received(&rx);
    assert!(
        entries
            .iter()
            .all(|e| e["content_type"] == "application/json"),
        "{entries:#?}"
    );
    let spans = spans(&entries);
    let trace_ids: HashSet<&str> = spans
        .iter()
        .map(|(s, _)| s["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(trace_ids.len(), 1);
    let read = spans
        .iter()
        .map(|(s, _)| s)
        .find(|s| s["name"] == "execute_tool fs__read_file")
        .unwrap();
    let result = attr(read, "gen_ai.tool.call.result").unwrap().to_string();
    assert!(result.contains("FILE-CONTENT-MARKER"), "{result}");
    let all = std::fs::read_to_string(&rx.out).unwrap();
    assert!(all.contains("GOAL-MARKER") && all.contains("ANSWER-MARKER"));
    assert!(!all.contains(CANARY), "the key was exported unredacted");
}

#[tokio::test]
async fn a_grpc_protocol_is_a_usage_error_that_says_what_works() {
    let env = RunEnv::new().await;
    let out = env
        .command(&["run", "hi"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http/protobuf"), "{err}");
}
