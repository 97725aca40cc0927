//! `tern acp` audit gaps of issue 21, with the official TypeScript SDK as the editor
//! (`tests/acp/client.mjs`, helpers from `suite::acp`), the Python one
//! (`tests/acp/py_client.py`) or raw JSON-RPC lines: resource links and embedded resources
//! reaching the model, an HTTP MCP server given by the editor, the editor closing stdin while a
//! shell command runs, and the Python SDK over shell permissions, cancel, modes, load and bad
//! input. (Plan mode set by the editor is in `acp_plan.rs`.)

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tern_e2e::{
    bin,
    run_env::{RunEnv, pids_with},
};
use tern_model::mock::{RecordedRequest, script::AnthropicTurn};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::acp::{
    answer, asked, audit, call, editor, exchange, python_editor, rule_of, text_of, turn, updates,
};

pub(crate) fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

/// The text of the last `tool_call_update` of `id` (its first content block's).
pub(crate) fn result_text(report: &Value, id: &str) -> String {
    call(report, id).1["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn resource_links_and_embedded_resources_reach_the_model() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("notes.txt"), "linked text\n").unwrap();
    let link_path = dir.join("notes.txt");
    let link = format!("file://{}", link_path.display());
    // The model reads what the link names, through its tools (and so the gateway).
    let read = json!({ "path": link_path }).to_string();
    env.server.enqueue(turn(("r1", "fs__read_file", &read)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Read."]).finish("end_turn"));
    let report = editor(
        &env,
        json!({"prompts": [{"blocks": [
            {"type": "text", "text": "look at these"},
            {"type": "resource_link", "uri": link, "name": "notes.txt"},
            {"type": "resource", "resource": {
                "uri": "file:///elsewhere/snippet.rs",
                "mimeType": "text/x-rust",
                "text": "fn main() { println!(\"embedded-marker\"); }\n",
            }},
        ]}]}),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    let requests = env.server.model_requests();
    let first = requests[0].json();
    let user = first["messages"][0]["content"].to_string();
    let user: String = serde_json::from_str::<Value>(&user)
        .map(|v| match v {
            Value::String(s) => s,
            other => other
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect(),
        })
        .unwrap();
    assert!(user.starts_with("look at these"), "{user}");
    assert!(
        user.contains(&format!(
            "<resource_link name=\"notes.txt\" uri=\"{link}\" path=\"{}\"/>",
            link_path.display()
        )),
        "{user}"
    );
    assert!(
        user.contains(
            "<resource uri=\"file:///elsewhere/snippet.rs\" mime_type=\"text/x-rust\">\n\
             fn main() { println!(\"embedded-marker\"); }\n</resource>"
        ),
        "{user}"
    );
    // A link is a reference, not its content: tern did not read the file into the message…
    assert!(!user.contains("linked text"), "{user}");
    // …the model read it through fs__read_file.
    assert!(result_text(&report, "r1").contains("linked text"));
    assert!(
        requests[1].json()["messages"]
            .to_string()
            .contains("linked text")
    );
}

/// `tern-test-server --http 127.0.0.1:0`: its `http://ADDR/mcp` URL (killed on drop).
async fn http_test_server() -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(bin("tern-test-server"))
        .args(["--http", "127.0.0.1:0"])
        .env_remove("TERN_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("no `listening on` line in 20 s")
        .unwrap()
        .unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"));
    (child, format!("http://{addr}/mcp"))
}

#[tokio::test]
async fn an_http_mcp_server_given_by_the_editor_joins_the_session_behind_the_gateway() {
    let env = RunEnv::new().await;
    let (_server, url) = http_test_server().await;
    env.server
        .enqueue(turn(("h1", "remote__echo", r#"{"text":"over http"}"#)));
    env.server.enqueue(turn(("h2", "remote__headers", "{}")));
    env.server
        .enqueue(turn(("h3", "remote__echo", r#"{"text":"not sent"}"#)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));
    let report = editor(
        &env,
        json!({
            "answers": ["allow_once", "allow_once", "reject_once"],
            "mcpServers": [{"type": "http", "name": "remote", "url": url,
                "headers": [{"name": "x-editor-header", "value": "zed-e2e"}]}],
            "prompts": [{"text": "use the remote server"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    // The server's tools were offered to the model under the editor's name for it.
    let offered = tool_names(&env.server.model_requests()[0]);
    assert!(offered.iter().any(|t| t == "remote__echo"), "{offered:?}");
    assert!(
        offered.iter().any(|t| t == "remote__headers"),
        "{offered:?}"
    );
    // Untrusted, like every server the editor gives: every call asked; allowed ones run over
    // HTTP (with the editor's headers), the rejected one is never sent.
    let asked = asked(&report);
    assert_eq!(asked, ["h1", "h2", "h3"], "{report:#}");
    assert_eq!(call(&report, "h1").1["status"], "completed");
    assert_eq!(result_text(&report, "h1"), "over http");
    assert_eq!(call(&report, "h2").1["status"], "completed");
    let headers: Value = serde_json::from_str(&result_text(&report, "h2"))
        .unwrap_or_else(|e| panic!("{e}: {report:#}"));
    assert_eq!(headers["x-editor-header"], "zed-e2e", "{headers}");
    assert_eq!(call(&report, "h3").1["status"], "failed");
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "h1"), "acp:once");
    assert_eq!(rule_of(&audit, "h2"), "acp:once");
    assert_eq!(rule_of(&audit, "h3"), "acp:deny");
}

#[tokio::test]
async fn closing_stdin_while_a_shell_command_runs_leaves_no_command_behind() {
    let env = RunEnv::new().await;
    let marker = "acp-stdin-shell-marker";
    let command = format!("sleep 41.73; echo {marker} > after.txt");
    env.server.enqueue(turn((
        "s1",
        "shell__run",
        &json!({ "command": command }).to_string(),
    )));
    let mut child = env
        .command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#;
    exchange(&mut stdin, &mut lines, init, json!(1)).await;
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": env.dir.path(), "mcpServers": []}});
    let created = exchange(&mut stdin, &mut lines, &new.to_string(), json!(2)).await;
    let sid = created["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}});
    stdin
        .write_all(format!("{prompt}\n").as_bytes())
        .await
        .unwrap();
    // The editor allows the command, then waits for it to run.
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("no line in 60 s")
            .unwrap()
            .expect("tern closed stdout");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["method"] == "session/request_permission" {
            let reply = json!({"jsonrpc": "2.0", "id": v["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
            stdin
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
        }
        let u = &v["params"]["update"];
        if u["sessionUpdate"] == "tool_call_update" && u["status"] == "in_progress" {
            break;
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while pids_with(marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The editor goes away while the command runs.
    drop(stdin);
    let started = std::time::Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("tern acp did not exit after stdin closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let cancelled = answer(&mut lines, json!(3)).await;
    assert_eq!(
        cancelled["result"]["stopReason"], "cancelled",
        "{cancelled}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pids_with(marker).is_empty() && pids_with("41.73").is_empty(),
        "the shell command outlived tern acp"
    );
    assert!(
        !env.dir.path().join("after.txt").exists(),
        "the shell went on after its sleep was killed"
    );
    assert_eq!(rule_of(&audit(env.home.path()), "s1"), "acp:once");
}

/// The official Python SDK (`tests/acp/py_client.py`) over what the TypeScript one covers in
/// `suite::acp::an_editor_drives…`: a line that is not JSON and an unknown method (the
/// connection goes on), shell commands allowed once then rejected, a command cancelled while it
/// runs, `session/set_mode` to plan (a write refused, the plan approved in the editor and carried
/// out), and a second connection that lists, loads (replay) and continues the session.
#[tokio::test]
async fn the_python_sdk_covers_shell_cancel_modes_load_and_bad_input() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    // Prompt 1: two commands, the first allowed once, the second rejected.
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Running."])
            .tool_use(
                "q1",
                "shell__run",
                &[r#"{"command":"echo py-ran > ran.txt"}"#],
            )
            .finish("tool_use"),
    );
    let nope = r#"{"command":"echo nope > nope.txt"}"#;
    env.server.enqueue(turn(("q2", "shell__run", nope)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Ran."]).finish("end_turn"));
    // Prompt 2: a long command, cancelled by the editor while it runs.
    let sleep = "sleep 31.7; echo py-cancel-marker > late.txt";
    env.server.enqueue(turn((
        "q3",
        "shell__run",
        &json!({ "command": sleep }).to_string(),
    )));
    // Prompt 3, plan mode: the write is refused without a question; the plan is approved
    // ("manually approve edits") and carried out in the same prompt, its write asked.
    let write = r#"{"path":"blocked.txt","content":"no"}"#;
    env.server.enqueue(turn(("q4", "fs__write_file", write)));
    let exit = r#"{"plan":"1. Write planned.txt."}"#;
    env.server.enqueue(turn(("q5", "plan__exit", exit)));
    let planned = r#"{"path":"planned.txt","content":"planned"}"#;
    env.server.enqueue(turn(("q6", "fs__write_file", planned)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Written."]).finish("end_turn"));
    let plan = json!({
        "tern": bin("tern"),
        "cwd": dir,
        "malformed": true,
        "answers": ["allow_once", "reject_once", "allow_once", "default", "allow_once"],
        "prompts": [
            "run things",
            {"text": "wait a while", "cancelOnCommand": sleep},
            {"text": "write blocked.txt", "mode": "plan"},
        ],
    });
    let report = python_editor(&env, &plan).await;
    assert_eq!(report["exit"], 0, "{report:#}");

    // Bad input: the parse error (null id), the unknown method; then the session went on.
    assert_eq!(report["malformed"][0]["code"], -32700, "{report:#}");
    assert_eq!(report["unknownMethod"]["code"], -32601, "{report:#}");
    let stops: Vec<&Value> = report["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["stopReason"])
        .collect();
    assert_eq!(
        stops,
        [&json!("end_turn"), &json!("cancelled"), &json!("end_turn")],
        "{report:#}"
    );
    assert_eq!(report["modes"]["currentModeId"], "default");

    // Shell: asked, allowed once (it ran), then asked and rejected (it did not).
    let asked = asked(&report);
    assert_eq!(asked, ["q1", "q2", "q3", "q5", "q6"], "{report:#}");
    let (q1, end1) = call(&report, "q1");
    assert_eq!(q1["kind"], "execute");
    assert_eq!(end1["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(dir.join("ran.txt")).unwrap(),
        "py-ran\n"
    );
    assert_eq!(call(&report, "q2").1["status"], "failed");
    assert!(!dir.join("nope.txt").exists());

    // Cancelled while running: sent by the editor, answered long before the sleep's end,
    // the command's whole process group gone (its shell did not go on to write late.txt).
    assert_eq!(report["prompts"][1]["cancelSent"], true, "{report:#}");
    assert!(
        report["prompts"][1]["ms"].as_u64().unwrap() < 15_000,
        "{report:#}"
    );
    assert_eq!(call(&report, "q3").1["status"], "failed");
    assert!(pids_with("py-cancel-marker").is_empty());
    assert!(!dir.join("late.txt").exists());

    // set_mode plan: the mode update, the write refused without a question; the plan put to
    // the editor (the SDK parsed the question), approved, the mode switched and the plan done.
    let modes: Vec<&Value> = updates(&report, "current_mode_update")
        .iter()
        .map(|u| &u["currentModeId"])
        .collect();
    assert_eq!(modes, [&json!("plan"), &json!("default")], "{report:#}");
    assert_eq!(call(&report, "q4").1["status"], "failed");
    assert!(!dir.join("blocked.txt").exists());
    assert_eq!(
        report["permissions"][3]["options"],
        json!(["accept-edits", "default", "plan"])
    );
    assert_eq!(call(&report, "q6").1["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(dir.join("planned.txt")).unwrap(),
        "planned"
    );

    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "q1"), "acp:once");
    assert_eq!(rule_of(&audit, "q2"), "acp:deny");
    assert_eq!(rule_of(&audit, "q3"), "acp:once");
    assert_eq!(rule_of(&audit, "q4"), "mode:plan");
    assert_eq!(rule_of(&audit, "q6"), "acp:once");
    assert_eq!(
        env.server.pending(),
        0,
        "every scripted model turn was used"
    );

    // A second connection lists the session, loads it (history replayed) and goes on.
    let session_id = report["sessionId"].as_str().unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Still here."])
            .finish("end_turn"),
    );
    let plan = json!({
        "tern": bin("tern"),
        "cwd": dir,
        "scenario": "load",
        "sessionId": session_id,
        "prompts": ["are you there?"],
    });
    let loaded = python_editor(&env, &plan).await;
    assert_eq!(loaded["exit"], 0, "{loaded:#}");
    let listed = loaded["list"]["sessions"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|s| s["sessionId"] == session_id && s["title"] == "run things"),
        "{loaded:#}"
    );
    let user = text_of(&loaded, "user_message_chunk");
    assert!(
        user.contains("run things") && user.contains("write blocked.txt"),
        "{user}"
    );
    let replayed = updates(&loaded, "tool_call")
        .into_iter()
        .find(|u| u["toolCallId"] == "q1")
        .unwrap_or_else(|| panic!("q1 not replayed: {loaded:#}"));
    assert_eq!(replayed["status"], "completed");
    assert_eq!(loaded["prompts"][0]["stopReason"], "end_turn");
    assert!(text_of(&loaded, "agent_message_chunk").contains("Still here."));
    let last = env.server.model_requests().last().unwrap().json();
    assert!(
        last["messages"].to_string().contains("run things"),
        "the loaded session's history reached the model"
    );
}
