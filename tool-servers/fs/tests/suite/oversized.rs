//! A request line over the 16 MiB stdio limit gets a JSON-RPC error reply and a stderr
//! log line, at once, and the server keeps answering (rmcp alone drops such lines silently).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// Waits at most this long for each reply: the answer to a skipped line must not wait
/// for the next request.
const PROMPT: Duration = Duration::from_secs(20);

fn huge_call(id_first: bool, id: Value) -> Vec<u8> {
    let content = "a".repeat(20 * 1024 * 1024);
    let params =
        json!({"name": "write_file", "arguments": {"path": "big.txt", "content": content}});
    let text = if id_first {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    } else {
        // Keys after the payload: the id is beyond what the server reads to find it.
        format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{params},"id":{id}}}"#)
    };
    let mut line = text.into_bytes();
    line.push(b'\n');
    assert!(line.len() > 20 * 1024 * 1024);
    line
}

#[test]
fn an_oversized_request_line_is_answered_logged_and_skipped() {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tern-fs"))
        .arg("--root")
        .arg(root.path())
        .env("TERN_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let (tx, replies) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            let Ok(v) = serde_json::from_str(&line) else {
                panic!("stdout carried a non-JSON line: {line}")
            };
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut send = |bytes: &[u8]| {
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    };
    let line = |v: Value| format!("{v}\n").into_bytes();
    let next = |want: &Value| loop {
        let m = replies
            .recv_timeout(PROMPT)
            .unwrap_or_else(|_| panic!("no reply with id {want} within {PROMPT:?}"));
        // No id: rmcp omits the key (MCP 2026-07-28), JSON-RPC 2.0 writes `null`.
        if m.get("id").unwrap_or(&Value::Null) == want {
            return m;
        }
    };

    send(&line(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "oversized-test", "version": "0"}}}),
    ));
    assert!(next(&json!(1)).get("result").is_some());
    send(&line(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ));

    for (id_first, sent_id, reply_id) in
        [(true, json!(2), json!(2)), (false, json!(3), Value::Null)]
    {
        send(&huge_call(id_first, sent_id));
        // Nothing else is sent until the reply is in: it must not wait for another line.
        let reply = next(&reply_id);
        let error = reply
            .get("error")
            .unwrap_or_else(|| panic!("not an error: {reply}"));
        assert_eq!(error["code"], json!(-32600), "{reply}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("16 MiB"), "{message}");
    }
    assert!(
        !root.path().join("big.txt").exists(),
        "the oversized call ran"
    );

    send(&line(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "small.txt", "content": "ok"}}}),
    ));
    let after = next(&json!(4));
    assert!(after.get("result").is_some(), "{after}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("small.txt")).unwrap(),
        "ok"
    );

    drop(stdin);
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    child.wait().unwrap();
    let warned = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("16 MiB limit"))
        .count();
    assert_eq!(warned, 2, "stderr:\n{log}");
}
