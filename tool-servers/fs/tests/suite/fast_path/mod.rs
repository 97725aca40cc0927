//! The stdio fast path (`src/fast/`) answers exactly as rmcp does.
//!
//! One corpus of request lines goes to two `tern-fs` processes over the same root: one with
//! the fast path, one with `--no-fast-path` (every request through rmcp). Their replies must
//! be equal byte for byte. Each server logs which calls the fast path answered
//! (`TERN_LOG=tern_fs::fast=debug`), and the test checks that list too: a corpus the fast
//! path silently declined would prove nothing.
//!
//! Sequentially (each reply awaited before the next line) the two reply streams are equal
//! line for line, in order. In a burst (the whole corpus in one write) the routes answer in
//! different orders — the fast path at once, rmcp from its tasks — so replies are compared
//! by id (key order inside each reply is still compared byte for byte).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

mod corpus;

use corpus::{Line, Route, call, call_meta, corpus, make_root};

/// Notifications and junk, interleaved between the requests: no reply, nothing else changes.
///
/// With `cancel_answered`, one notification cancels request 100, already answered when the
/// client waits for each reply. In a burst it is not: rmcp would drop the reply of a call it
/// has not finished, while the fast path has already written it (both as the spec allows), so
/// the burst leaves it out.
fn interleave(corpus: Vec<Line>, cancel_answered: bool) -> Vec<Line> {
    let cancel = if cancel_answered {
        json!(100)
    } else {
        json!(999_999)
    };
    let noise = [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": cancel, "reason": "already answered"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": "no such request"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "p1", "progress": 1}}),
    ];
    let mut out = Vec::new();
    for (i, line) in corpus.into_iter().enumerate() {
        out.push(line);
        if i % 5 == 4 {
            out.push(Line {
                text: noise[(i / 5) % noise.len()].to_string(),
                reply: None,
            });
        }
        if i % 17 == 16 {
            // Not JSON, and an empty line: rmcp skips both without a reply.
            out.push(Line {
                text: "this is { not json".into(),
                reply: None,
            });
            out.push(Line {
                text: String::new(),
                reply: None,
            });
        }
    }
    out
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// stdout's lines, read by a thread so a missing reply fails the test instead of hanging it.
    stdout: mpsc::Receiver<String>,
}

/// How long a reply may take (a debug build on a loaded machine answers in milliseconds).
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

impl Server {
    /// A server before any handshake.
    fn spawn(root: &Path, fast: bool) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tern-fs"));
        cmd.arg("--root").arg(root);
        if !fast {
            cmd.arg("--no-fast-path");
        }
        let mut child = cmd
            .env("TERN_LOG", "tern_fs::fast=debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let (tx, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = String::new();
                match lines.read_line(&mut line) {
                    Ok(n) if n > 0 && tx.send(line).is_ok() => {}
                    _ => break,
                }
            }
        });
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// A server after the `initialize` handshake at `version`.
    fn start(root: &Path, fast: bool, version: &str) -> Self {
        let mut server = Self::spawn(root, fast);
        server.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "fast-path-test", "version": "0"}}})
            .to_string(),
        );
        let init = server.recv();
        assert!(init.contains("\"result\""), "initialize failed: {init}");
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> String {
        self.stdout
            .recv_timeout(REPLY_TIMEOUT)
            .expect("no reply: the server closed stdout or never answered")
    }

    /// Closes stdin, waits for the exit and returns the ids the fast path answered.
    fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let rest: Vec<String> = self.stdout.iter().collect();
        assert_eq!(
            rest,
            Vec::<String>::new(),
            "replies after the last one awaited"
        );
        let mut log = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut log)
            .unwrap();
        assert!(self.child.wait().unwrap().success(), "{log}");
        log.lines()
            .filter_map(|l| l.split_once(" fast path id=").map(|(_, id)| id.to_string()))
            .collect()
    }
}

/// The fast path's log names ids with `Display` (`7`, `abc`) and the tool.
fn logged(line: &Line) -> String {
    let v: Value = serde_json::from_str(line.text.trim_start_matches('\u{feff}')).unwrap();
    let id = match &v["id"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or(n.to_string(), |f| (f as i64).to_string()),
        other => other.to_string(),
    };
    format!("{id} tool=\"{}\"", v["params"]["name"].as_str().unwrap())
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    make_root(&root, &outside);
    (dir, root, outside)
}

#[test]
fn sequential_replies_are_byte_for_byte_rmcps() {
    for version in ["2025-06-18", "2025-11-25", "2024-11-05"] {
        let (_dir, root, outside) = setup();
        let lines = interleave(corpus(&root, &outside), true);
        let mut fast = Server::start(&root, true, version);
        let mut reference = Server::start(&root, false, version);
        let mut compared = 0;
        for line in &lines {
            fast.send(&line.text);
            reference.send(&line.text);
            if line.reply.is_some() {
                let (a, b) = (fast.recv(), reference.recv());
                assert_eq!(a, b, "{version}: replies differ for {}", line.text);
                compared += 1;
            }
        }
        let expected: Vec<String> = lines
            .iter()
            .filter(|l| l.reply == Some(Route::Fast))
            .map(logged)
            .collect();
        assert!(
            expected.len() > 50,
            "the corpus must exercise the fast path"
        );
        assert_eq!(
            fast.finish(),
            expected,
            "{version}: calls the fast path answered"
        );
        assert_eq!(reference.finish(), Vec::<String>::new());
        assert!(compared > 70, "{compared}");
    }
}

#[test]
fn a_burst_gets_rmcps_replies_by_id() {
    let (_dir, root, outside) = setup();
    let lines = interleave(corpus(&root, &outside), false);
    // Padding notifications (5 KB each, no reply) between the lines make the burst several
    // times the fast path's read buffer, so it is refilled and compacted with answered and
    // passed lines mixed in it.
    let padding = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed",
                         "params": {"_meta": {"padding": "p".repeat(5000)}}})
    .to_string();
    let burst: String = lines
        .iter()
        .map(|l| format!("{padding}\n{}\n", l.text))
        .collect();
    assert!(burst.len() > 3 * 128 * 1024, "{}", burst.len());
    let expected = lines.iter().filter(|l| l.reply.is_some()).count();
    let mut replies = Vec::new();
    for fast in [true, false] {
        let mut server = Server::start(&root, fast, "2025-06-18");
        let mut stdin = server.stdin.take().unwrap();
        let bytes = burst.clone();
        let writer = std::thread::spawn(move || {
            stdin.write_all(bytes.as_bytes()).unwrap();
            stdin
        });
        // Replies without an id (rmcp's errors for lines it cannot read) are compared as a
        // sorted list.
        let mut by_id = BTreeMap::new();
        let mut without_id = Vec::new();
        for _ in 0..expected {
            let reply = server.recv();
            let v: Value = serde_json::from_str(&reply).unwrap();
            if v["id"].is_null() {
                without_id.push(reply);
            } else {
                let id = v["id"].to_string();
                assert!(
                    by_id.insert(id.clone(), reply).is_none(),
                    "two replies for {id}"
                );
            }
        }
        without_id.sort();
        by_id.insert("replies without an id".into(), without_id.concat());
        server.stdin = Some(writer.join().unwrap());
        let answered_fast = server.finish();
        if fast {
            assert!(answered_fast.len() > 50, "{answered_fast:?}");
        }
        replies.push(by_id);
    }
    let (fast, reference) = (&replies[0], &replies[1]);
    assert_eq!(
        fast.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>()
    );
    for (id, reply) in fast {
        assert_eq!(reply, &reference[id], "reply {id}");
    }
}

#[test]
fn a_session_opened_without_initialize_is_left_to_rmcp() {
    // The 2026-07-28 lifecycle: no `initialize`, every request carries its own metadata.
    // rmcp checks that metadata on every call (a call without it is an error there), so the
    // fast path, which does not, must stay off for the whole session.
    let (_dir, root, _outside) = setup();
    let inline = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let lines = [
        call_meta(json!(1), "read_file", json!({"path": "small.txt"}), inline),
        call(json!(2), "read_file", json!({"path": "small.txt"})),
        call(json!(3), "list_dir", json!({})),
    ];
    let mut servers = [Server::spawn(&root, true), Server::spawn(&root, false)];
    for line in &lines {
        let replies: Vec<String> = servers
            .iter_mut()
            .map(|s| {
                s.send(&line.to_string());
                s.recv()
            })
            .collect();
        assert_eq!(replies[0], replies[1], "{line}");
    }
    for server in servers {
        assert_eq!(server.finish(), Vec::<String>::new());
    }
}
