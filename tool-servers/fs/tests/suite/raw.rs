//! A newline-JSON MCP client with no MCP library in between: what a test needs
//! when it must see the exact bytes a server sent (the `tools/list` JSON), or
//! send a request `_meta` a library would reshape.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A running `tern-fs`, initialized, spoken to line by line.
pub struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Raw {
    /// Starts `tern-fs --root ROOT EXTRA…` and performs the handshake.
    pub fn start(root: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tern-fs"))
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut raw = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = raw.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"}
            }),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns the whole response message (`result` or `error`).
    /// Blocking: a server that never answers hangs the test, which the test
    /// harness's own timeout then reports; every server here answers in milliseconds.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "the server closed stdout while we waited for reply {id}"
            );
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    /// `tools/call` with arguments and an optional request `_meta`; returns `result`.
    pub fn call(&mut self, tool: &str, arguments: Value, meta: Option<Value>) -> Value {
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let reply = self.request("tools/call", params);
        reply
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: no result: {reply}"))
    }
}

impl Raw {
    /// Writes `count` `tools/call` requests in one go from another thread (the
    /// server answers while we write) and returns every reply, in arrival order.
    pub fn burst(&mut self, tool: &str, arguments: &Value, count: u64) -> Vec<Value> {
        let first = self.next_id;
        self.next_id += count;
        let mut lines = String::new();
        for id in first..first + count {
            let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}});
            lines.push_str(&m.to_string());
            lines.push('\n');
        }
        let writer = std::thread::scope(|scope| {
            let stdin = &mut self.stdin;
            let writer = scope.spawn(move || stdin.write_all(lines.as_bytes()));
            let mut replies = Vec::new();
            while replies.len() < count as usize {
                let mut line = String::new();
                assert!(
                    self.stdout.read_line(&mut line).unwrap() > 0,
                    "stdout closed"
                );
                replies.push(serde_json::from_str::<Value>(&line).unwrap());
            }
            (writer.join(), replies)
        });
        writer.0.unwrap().unwrap();
        writer.1
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
