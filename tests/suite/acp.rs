//! `tern acp` end to end: the official ACP TypeScript SDK (`@agentclientprotocol/sdk`, in
//! `.deps/acp`) plays the editor (`tests/acp/client.mjs`), tern runs for real against the mock
//! model, with the built-in servers and the repo's `tern-test-server` given by the editor as an
//! extra stdio MCP server. What the editor saw is checked against what tern did: the files, the
//! audit log, the processes left.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use tern_e2e::{
    bin, dep,
    run_env::{RunEnv, pids_with},
    workspace_root,
};
use tern_model::mock::script::AnthropicTurn;
use tokio::io::{AsyncWriteExt, BufReader};

/// Runs the SDK client with `plan`; its report.
pub(crate) async fn editor(env: &RunEnv, plan: Value) -> Value {
    dep("acp/node_modules/@agentclientprotocol/sdk/package.json");
    let mut plan = plan;
    plan["tern"] = json!(bin("tern"));
    plan["cwd"] = json!(env.dir.path());
    let report = client_report(env, "node", "tests/acp/client.mjs", &plan).await;
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(report["exit"]["code"], 0, "tern acp exit: {report:#}");
    report
}

/// Runs the Python SDK client (`tests/acp/py_client.py`) with `plan` as given (its `tern` and
/// `cwd` included); its report.
pub(crate) async fn python_editor(env: &RunEnv, plan: &Value) -> Value {
    let python = dep("venv/bin/python");
    client_report(
        env,
        &python.to_string_lossy(),
        "tests/acp/py_client.py",
        plan,
    )
    .await
}

/// Runs an ACP client `script` with `program` against the env's mock model: the JSON report it
/// prints, after checking it exited 0.
async fn client_report(env: &RunEnv, program: &str, script: &str, plan: &Value) -> Value {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(program)
            .arg(workspace_root().join(script))
            .arg(plan.to_string())
            .env("TERN_HOME", env.home.path())
            .env("ANTHROPIC_API_KEY", tern_e2e::run_env::CANARY)
            .env("ANTHROPIC_BASE_URL", env.server.url())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TERN_LOG")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("the ACP client {script} did not finish in 120 s"))
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

pub(crate) fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The `tool_call` for `id` and its last `tool_call_update`.
pub(crate) fn call<'a>(report: &'a Value, id: &str) -> (&'a Value, &'a Value) {
    let started = updates(report, "tool_call")
        .into_iter()
        .find(|u| u["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool_call {id}: {report:#}"));
    let last = updates(report, "tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == id && u.get("status").is_some())
        .unwrap_or_else(|| panic!("no tool_call_update {id}: {report:#}"));
    (started, last)
}

/// The tool call ids the editor was asked about (`session/request_permission`), in order.
pub(crate) fn asked(report: &Value) -> Vec<&str> {
    report["permissions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["toolCallId"].as_str().unwrap_or("<no toolCallId>"))
        .collect()
}

pub(crate) fn text_of(report: &Value, kind: &str) -> String {
    updates(report, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

pub(crate) fn audit(home: &Path) -> Vec<Value> {
    std::fs::read_to_string(home.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn rule_of(audit: &[Value], call_id: &str) -> String {
    audit
        .iter()
        .find(|a| a["call_id"] == call_id)
        .and_then(|a| a["rule"].as_str())
        .unwrap_or_else(|| panic!("no audit line for {call_id}: {audit:#?}"))
        .to_string()
}

pub(crate) fn turn(call: (&str, &str, &str)) -> tern_model::mock::MockResponse {
    AnthropicTurn::new()
        .tool_use(call.0, call.1, &[call.2])
        .finish("tool_use")
}

#[tokio::test]
async fn an_editor_drives_a_session_with_permissions_diffs_cancel_modes_and_load() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
    // Prompt 1: stream text, read, edit (asks), two shell commands (asked: allowed, then
    // rejected), a call to the editor's own server (asked: allowed always), an answer.
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["I will ", "read it."])
            .tool_use("t1", "fs__read_file", &[r#"{"path":"notes.txt"}"#])
            .finish("tool_use"),
    );
    // The model's todo list (allowed by the default rules: nothing is asked).
    let todos = r#"{"todos":[{"id":"1","text":"Read notes","status":"done"},{"id":"2","text":"Fix notes","status":"in_progress"},{"id":"3","text":"Skip this","status":"cancelled"}]}"#;
    env.server.enqueue(turn(("t1b", "todo__write", todos)));
    let edit = r#"{"path":"notes.txt","old_string":"beta","new_string":"gamma"}"#;
    env.server.enqueue(turn(("t2", "fs__edit_file", edit)));
    let ran = r#"{"command":"echo acp-ran > ran.txt"}"#;
    env.server.enqueue(turn(("t3", "shell__run", ran)));
    let nope = r#"{"command":"echo nope > nope.txt"}"#;
    env.server.enqueue(turn(("t4", "shell__run", nope)));
    let echo = r#"{"text":"from the editor's server"}"#;
    env.server.enqueue(turn(("t5", "extra__echo", echo)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));
    // Prompt 2: a long command, cancelled by the editor while it runs.
    let sleep = "sleep 30; echo acp-cancel-marker";
    env.server.enqueue(turn((
        "t7",
        "shell__run",
        &json!({ "command": sleep }).to_string(),
    )));
    // Prompt 3, in read-only mode: a write is refused without asking.
    let write = r#"{"path":"blocked.txt","content":"no"}"#;
    env.server.enqueue(turn(("t8", "fs__write_file", write)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Cannot."]).finish("end_turn"));

    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "extraServer": [bin("tern-test-server")],
            "answers": ["allow_once", "allow_once", "reject_once", "allow_always", "allow_once"],
            "prompts": [
                {"text": "fix notes.txt"},
                {"text": "wait a while", "cancelOnCommand": sleep},
                {"text": "write blocked.txt", "mode": "read-only"},
            ],
        }),
    )
    .await;

    // Negotiated: version 1, what tern offers.
    assert_eq!(report["initialize"]["protocolVersion"], 1);
    let caps = &report["initialize"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{report:#}");
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(report["initialize"]["authMethods"][0]["id"], "env");
    let session_id = report["session"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(report["session"]["modes"]["currentModeId"], "default");

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
    assert!(
        report["prompts"][1]["ms"].as_u64().unwrap() < 15_000,
        "cancel must end the turn, not the 30 s command: {report:#}"
    );

    // Streamed text.
    let said = text_of(&report, "agent_message_chunk");
    assert!(
        said.contains("I will read it.") && said.contains("Done."),
        "{said}"
    );

    // The read: kind, title, location, the text the model got.
    let (t1, end1) = call(&report, "t1");
    assert_eq!(t1["kind"], "read");
    assert_eq!(t1["status"], "pending");
    assert!(t1["title"].as_str().unwrap().contains("notes.txt"), "{t1}");
    assert_eq!(t1["locations"][0]["path"], json!(dir.join("notes.txt")));
    assert_eq!(end1["status"], "completed");
    assert!(
        end1["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );

    // The todo list reached the editor as its plan (cancelled items have no ACP status).
    let plans = updates(&report, "plan");
    assert_eq!(plans.len(), 1, "{report:#}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read notes", "priority": "medium", "status": "completed"},
            {"content": "Fix notes", "priority": "medium", "status": "in_progress"},
        ])
    );

    // The edit: an ACP diff with the whole file before and after.
    let (t2, end2) = call(&report, "t2");
    assert_eq!(t2["kind"], "edit");
    assert_eq!(end2["status"], "completed", "{end2}");
    let diff = &end2["content"][0];
    assert_eq!(diff["type"], "diff", "{end2}");
    assert_eq!(diff["path"], json!(dir.join("notes.txt")));
    assert_eq!(diff["oldText"], "alpha\nbeta\n");
    assert_eq!(diff["newText"], "alpha\ngamma\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );

    // Shell: allowed once (it ran), then rejected (it did not).
    let (t3, end3) = call(&report, "t3");
    assert_eq!(t3["kind"], "execute");
    assert_eq!(end3["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(dir.join("ran.txt")).unwrap(),
        "acp-ran\n"
    );
    assert_eq!(call(&report, "t4").1["status"], "failed");
    assert!(!dir.join("nope.txt").exists());

    // The editor's own MCP server joined the pool, through the gateway like any server.
    let (t5, end5) = call(&report, "t5");
    // Its `readOnlyHint` names the kind (display only: an untrusted server is still asked).
    assert_eq!(t5["kind"], "read");
    assert_eq!(end5["status"], "completed");
    assert_eq!(
        end5["content"][0]["content"]["text"],
        "from the editor's server"
    );

    // Every question was asked of the editor, with ACP's options.
    let asked = asked(&report);
    assert_eq!(asked, ["t2", "t3", "t4", "t5", "t7"], "{report:#}");
    let options = &report["permissions"][3]["options"];
    for o in [
        "allow_once:allow_once",
        "allow_always:allow_always",
        "allow_always_user:allow_always",
        "reject_once:reject_once",
    ] {
        assert!(options.as_array().unwrap().contains(&json!(o)), "{options}");
    }

    // Cancelled mid-call: the call failed, the command is gone.
    assert_eq!(call(&report, "t7").1["status"], "failed");
    assert!(
        pids_with("acp-cancel-marker").is_empty(),
        "the cancelled command outlived tern"
    );

    // Read-only mode: the write was refused without a question.
    assert_eq!(
        updates(&report, "current_mode_update")[0]["currentModeId"],
        "read-only"
    );
    assert_eq!(call(&report, "t8").1["status"], "failed");
    assert!(!dir.join("blocked.txt").exists());
    assert!(!updates(&report, "available_commands_update").is_empty());
    assert_eq!(report["unknownMethod"]["code"], -32601, "{report:#}");

    // The audit says who decided: the editor, over ACP.
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "t2"), "acp:once");
    assert_eq!(rule_of(&audit, "t3"), "acp:once");
    assert_eq!(rule_of(&audit, "t4"), "acp:deny");
    assert_eq!(rule_of(&audit, "t5"), "acp:always");
    assert!(rule_of(&audit, "t8").starts_with("mode:"), "{audit:#?}");
    // "Allow always" is the project's rule: saved to its `.tern/config.toml`, not the user's.
    let config = std::fs::read_to_string(dir.join(".tern/config.toml")).unwrap();
    assert!(
        config.contains("extra__echo"),
        "allow always saves the rule in the project: {config}"
    );
    let user = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap_or_default();
    assert!(!user.contains("extra__echo"), "{user}");
    assert_eq!(
        env.server.pending(),
        0,
        "every scripted model turn was used"
    );

    // A new connection lists the session, loads it (history replayed), and goes on with it.
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Still here."])
            .finish("end_turn"),
    );
    let loaded = editor(
        &env,
        json!({
            "scenario": "load",
            "sessionId": session_id,
            "prompts": [{"text": "are you there?"}],
        }),
    )
    .await;
    let listed = loaded["list"]["sessions"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|s| s["sessionId"] == session_id.as_str() && s["title"] == "fix notes.txt"),
        "{loaded:#}"
    );
    let user = text_of(&loaded, "user_message_chunk");
    assert!(
        user.contains("fix notes.txt") && user.contains("wait a while"),
        "{user}"
    );
    // Replayed calls come as one `tool_call` each, already finished.
    let r2 = updates(&loaded, "tool_call")
        .into_iter()
        .find(|u| u["toolCallId"] == "t2")
        .unwrap_or_else(|| panic!("t2 not replayed: {loaded:#}"));
    assert_eq!(r2["status"], "completed");
    assert!(text_of(&loaded, "agent_message_chunk").contains("Still here."));
    assert_eq!(loaded["prompts"][0]["stopReason"], "end_turn");
    let last = env.server.model_requests().last().unwrap().json();
    assert!(
        last["messages"].to_string().contains("fix notes.txt"),
        "the loaded session's history reached the model"
    );
}

/// Writes one line to tern and reads lines until one answers `id` (notifications skipped).
pub(crate) async fn exchange(
    stdin: &mut tokio::process::ChildStdin,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    send: &str,
    id: Value,
) -> Value {
    stdin
        .write_all(format!("{send}\n").as_bytes())
        .await
        .unwrap();
    answer(lines, id).await
}

pub(crate) async fn answer(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    id: Value,
) -> Value {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("no answer in 60 s")
            .unwrap()
            .expect("tern closed stdout");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout must be only protocol ({e}): {line}"));
        if v.get("method").is_none() && v["id"] == id {
            return v;
        }
    }
}
