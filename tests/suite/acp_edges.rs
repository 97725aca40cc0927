//! `tern acp` at its edges (issue 21): bad input answered and stdin closed with nothing left
//! running, a session asked for without a model key, and the official Python SDK as the editor
//! (`tests/acp/py_client.py`). The main session with the TypeScript SDK: `acp.rs`.

use std::{process::Stdio, time::Duration};

use super::acp::{asked, audit, call, exchange, python_editor, rule_of, text_of, turn};
use serde_json::{Value, json};
use tern_e2e::{
    bin,
    run_env::{RunEnv, pids_with},
};
use tern_model::mock::script::AnthropicTurn;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

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
    let asked = asked(&report);
    assert_eq!(asked, ["p2", "p3"]);
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "p2"), "acp:once");
    assert_eq!(rule_of(&audit, "p3"), "acp:deny");
    assert_eq!(rule_of(&audit, "p4"), "acp:deny");
    assert!(text_of(&report, "agent_message_chunk").contains("Edited."));
    // No fs capability offered: tern never asked the editor for a file.
    assert_eq!(report["fsRequests"], json!([]), "{report:#}");
}
