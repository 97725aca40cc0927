//! `tern acp` end to end: the official ACP TypeScript SDK (`@agentclientprotocol/sdk`, in
//! `.deps/acp`) plays the editor (`tests/acp/client.mjs`), tern runs for real against the mock
//! model, with the built-in servers and the repo's `tern-test-server` given by the editor as an
//! extra stdio MCP server. What the editor saw is checked against what tern did: the files, the
//! audit log, the processes left.

use std::{path::Path, process::Stdio, time::Duration};

use serde_json::{Value, json};
use tern_e2e::{
    bin, dep,
    run_env::{RunEnv, pids_with},
    workspace_root,
};
use tern_model::mock::script::AnthropicTurn;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

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
    let asked: Vec<&str> = report["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
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

#[tokio::test]
async fn bad_input_is_answered_and_closing_stdin_leaves_nothing_running() {
    let env = RunEnv::new().await;
    // A uniquely named test server, to find its process afterwards.
    let marker = env.dir.path().join("acp-extra-server-marker");
    std::os::unix::fs::symlink(bin("tern-test-server"), &marker).unwrap();
    // A slow answer: the second prompt arrives while the first streams.
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["one ", "two ", "three ", "four ", "five"])
            .finish("end_turn")
            .delay_between(Duration::from_millis(400)),
    );
    let mut child = env
        .command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    let parse = exchange(&mut stdin, &mut lines, "{not json", Value::Null).await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let init = exchange(
        &mut stdin,
        &mut lines,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        json!(1),
    )
    .await;
    assert_eq!(
        init["result"]["protocolVersion"], 1,
        "the connection survived: {init}"
    );
    let unknown = exchange(
        &mut stdin,
        &mut lines,
        r#"{"jsonrpc":"2.0","id":"u","method":"session/fork","params":{}}"#,
        json!("u"),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let no_session = exchange(
        &mut stdin,
        &mut lines,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        json!(2),
    )
    .await;
    assert_eq!(no_session["error"]["code"], -32002, "{no_session}");
    let relative = exchange(
        &mut stdin,
        &mut lines,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
        json!(3),
    )
    .await;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");

    let new = json!({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {
        "cwd": env.dir.path(),
        "mcpServers": [{"name": "extra", "command": marker, "args": [], "env": []}],
    }});
    let created = exchange(&mut stdin, &mut lines, &new.to_string(), json!(4)).await;
    let sid = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    assert!(
        !pids_with("acp-extra-server-marker").is_empty(),
        "the editor's server runs"
    );

    let mode = json!({"jsonrpc": "2.0", "id": 40, "method": "session/set_mode",
        "params": {"sessionId": sid, "modeId": "turbo"}});
    let no_mode = exchange(&mut stdin, &mut lines, &mode.to_string(), json!(40)).await;
    assert_eq!(no_mode["error"]["code"], -32602, "{no_mode}");
    assert!(
        no_mode["error"]["data"]["hint"]
            .as_str()
            .unwrap()
            .contains("accept-edits"),
        "{no_mode}"
    );
    assert!(
        no_mode["error"]["data"]["hint"]
            .as_str()
            .unwrap()
            .contains("plan"),
        "{no_mode}"
    );
    // Plan mode is one of the modes an editor may pick (and leave again).
    for (id, mode) in [(41, "plan"), (42, "default")] {
        let set = json!({"jsonrpc": "2.0", "id": id, "method": "session/set_mode",
            "params": {"sessionId": sid, "modeId": mode}});
        let answer = exchange(&mut stdin, &mut lines, &set.to_string(), json!(id)).await;
        assert!(answer["error"].is_null(), "{mode}: {answer}");
    }

    let prompt = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
            "sessionId": sid, "prompt": [{"type": "text", "text": "count"}]}})
        .to_string()
    };
    stdin
        .write_all(format!("{}\n", prompt(5)).as_bytes())
        .await
        .unwrap();
    // Wait for the first chunk, so the turn is surely running.
    loop {
        let line = lines.next_line().await.unwrap().unwrap();
        if line.contains("agent_message_chunk") {
            break;
        }
    }
    let busy = exchange(&mut stdin, &mut lines, &prompt(6), json!(6)).await;
    assert_eq!(busy["error"]["code"], -32600, "{busy}");
    assert!(
        busy["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already running"),
        "{busy}"
    );

    // The editor goes away mid-turn: tern cancels, stops its servers and exits.
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
    // Whatever it still wrote is protocol: the first prompt's answer (cancelled).
    let mut rest = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        rest.push(v);
    }
    let first = rest
        .iter()
        .find(|v| v["id"] == 5)
        .unwrap_or_else(|| panic!("{rest:#?}"));
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pids_with("acp-extra-server-marker").is_empty(),
        "the editor's MCP server outlived tern acp"
    );
}

#[tokio::test]
async fn without_a_model_key_a_new_session_asks_for_authentication() {
    let env = RunEnv::new().await;
    let mut child = env
        .command(&["acp"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let new = json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": env.dir.path(), "mcpServers": []}});
    let answer = exchange(&mut stdin, &mut lines, &new.to_string(), json!(1)).await;
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{answer}"
    );
    let auth = exchange(
        &mut stdin,
        &mut lines,
        r#"{"jsonrpc":"2.0","id":2,"method":"authenticate","params":{"methodId":"env"}}"#,
        json!(2),
    )
    .await;
    assert_eq!(auth["result"], json!({}), "{auth}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn the_python_sdk_drives_a_session_too() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    // A key the run knows sits in the file, away from the edit: the editor must never see it.
    let canary = tern_e2e::run_env::CANARY;
    std::fs::write(
        dir.join("a.txt"),
        format!("one\ntwo\n3\n4\n5\n6\nkey={canary}\n"),
    )
    .unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Reading."])
            .tool_use("p1", "fs__read_file", &[r#"{"path":"a.txt"}"#])
            .finish("tool_use"),
    );
    let edit = r#"{"path":"a.txt","old_string":"two","new_string":"2"}"#;
    env.server.enqueue(turn(("p2", "fs__edit_file", edit)));
    let echo = r#"{"text":"hi from python"}"#;
    env.server.enqueue(turn(("p3", "extra__echo", echo)));
    // Rejected "always" above: the same tool again is denied without a question.
    let again = r#"{"text":"hi again"}"#;
    env.server.enqueue(turn(("p4", "extra__echo", again)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Edited."]).finish("end_turn"));
    let plan = json!({
        "tern": bin("tern"),
        "cwd": dir,
        "extraServer": [bin("tern-test-server")],
        "answers": ["allow_once", "reject_always"],
        "prompts": ["edit a.txt"],
    });
    let report = python_editor(&env, &plan).await;
    // Everything the editor was sent, as it printed it.
    let stdout = report.to_string();
    assert_eq!(report["initialize"]["protocolVersion"], 1);
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(report["exit"], 0, "{report:#}");
    let (p1, _) = call(&report, "p1");
    assert_eq!(p1["kind"], "read");
    let (_, end2) = call(&report, "p2");
    assert_eq!(end2["content"][0]["type"], "diff", "{end2}");
    let (old, new) = (
        end2["content"][0]["oldText"].as_str().unwrap(),
        end2["content"][0]["newText"].as_str().unwrap(),
    );
    assert!(
        old.starts_with("one\ntwo\n3\n") && new.starts_with("one\n2\n3\n"),
        "{end2}"
    );
    assert!(
        old.ends_with("[REDACTED]\n") && new.ends_with("[REDACTED]\n"),
        "{end2}"
    );
    assert!(
        !stdout.contains(canary),
        "the key reached the editor: {stdout}"
    );
    assert_eq!(call(&report, "p3").1["status"], "failed", "rejected");
    assert_eq!(call(&report, "p4").1["status"], "failed", "rejected always");
    let asked: Vec<&str> = report["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["p2", "p3"]);
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "p2"), "acp:once");
    assert_eq!(rule_of(&audit, "p3"), "acp:deny");
    assert_eq!(rule_of(&audit, "p4"), "acp:deny");
    assert!(text_of(&report, "agent_message_chunk").contains("Edited."));
    // No fs capability offered: tern never asked the editor for a file.
    assert_eq!(report["fsRequests"], json!([]), "{report:#}");
}
