//! `tern-fs --http ADDR`: the same tools over MCP streamable HTTP, behind the Host, Origin
//! and bearer-token checks, in both of MCP's eras, with a clean shutdown on SIGTERM.
//! Spoken to with a bare HTTP/1.1 client ([`super::http_wire`]) so every status and header
//! is seen as sent.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http_wire::{Conn, POST_HEADERS, call_body, modern_call_headers, open_session};

const TOKEN: &str = "tok-0123456789abcdef-test";
const TOKEN_VAR: &str = "TERN_TEST_HTTP_TOKEN";

/// A `tern-fs --http 127.0.0.1:0` over a temp root holding `notes.txt`.
struct HttpFs {
    child: Child,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl HttpFs {
    /// Without `--http-token-env` or `--generated` in `extra`, starts with `--no-auth` (the
    /// tests about Origin, Host, eras and shutdown are not about the token).
    fn start(extra: &[&str]) -> Self {
        let mut extra = extra.to_vec();
        if extra.contains(&"--generated") {
            extra.retain(|a| *a != "--generated");
        } else if !extra.contains(&"--http-token-env") {
            extra.push("--no-auth");
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("notes.txt"), "first line\nsecond line\n").unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tern-fs"))
            .arg("--root")
            .arg(&root)
            .args(["--http", "127.0.0.1:0"])
            .args(&extra)
            .env(TOKEN_VAR, TOKEN)
            .env("TERN_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (stderr, url) = watch_stderr(&mut child);
        let url = url
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no `listening on` line: {}", stderr.lock().unwrap()));
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("bad URL {url}"))
            .parse()
            .unwrap();
        Self {
            child,
            addr,
            stderr,
            _dir: dir,
        }
    }

    fn conn(&self) -> Conn {
        Conn::open(self.addr).unwrap()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM; returns how it exited and how long that took.
    fn terminate(&mut self) -> (ExitStatus, Duration) {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        let started = Instant::now();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, started.elapsed());
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "still running 20 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpFs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Collects the child's stderr; sends the URL of its `listening on` line.
fn watch_stderr(child: &mut Child) -> (Arc<Mutex<String>>, mpsc::Receiver<String>) {
    let pipe = child.stderr.take().unwrap();
    let text = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel();
    let sink = text.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.to_string());
            }
            let mut all = sink.lock().unwrap();
            all.push_str(&line);
            all.push('\n');
        }
    });
    (text, rx)
}

fn read_notes(modern: bool) -> String {
    call_body(7, "read_file", &json!({"path": "notes.txt"}), modern)
}

fn result_text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {response}"))
        .to_string()
}

#[test]
fn both_eras_call_the_same_confined_tools() {
    let server = HttpFs::start(&[]);
    let mut conn = server.conn();

    // 2025-11-25: a session from `initialize`.
    let session = open_session(&mut conn, &[]).unwrap();
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ]);
    let reply = conn
        .request("POST", "/mcp", &headers, read_notes(false).as_bytes())
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(result_text(&reply.response().unwrap()).contains("second line"));
    let escape = call_body(8, "read_file", &json!({"path": "/etc/passwd"}), false);
    let reply = conn
        .request("POST", "/mcp", &headers, escape.as_bytes())
        .unwrap();
    let response = reply.response().unwrap();
    assert_eq!(
        response["result"]["isError"], true,
        "the roots hold over HTTP: {response}"
    );

    // 2026-07-28: no session, every request self-contained.
    let modern = modern_call_headers("read_file");
    let modern: Vec<(&str, &str)> = modern.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = conn
        .request("POST", "/mcp", &modern, read_notes(true).as_bytes())
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("mcp-session-id").is_none());
    assert!(result_text(&reply.response().unwrap()).contains("second line"));

    // Ending the session is the client's to do, and it ends.
    let mut end = headers.clone();
    end.retain(|(k, _)| *k != "content-type");
    let reply = conn.request("DELETE", "/mcp", &end, b"").unwrap();
    assert!(
        reply.status < 300,
        "DELETE: {} {}",
        reply.status,
        reply.text()
    );
    let reply = conn
        .request("POST", "/mcp", &headers, read_notes(false).as_bytes())
        .unwrap();
    assert_eq!(
        reply.status,
        404,
        "a closed session is gone: {}",
        reply.text()
    );
}

#[test]
fn a_required_token_turns_away_requests_without_it_with_401() {
    let server = HttpFs::start(&["--http-token-env", TOKEN_VAR, "--http-require-token"]);
    let mut conn = server.conn();
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    let reply = conn.request("POST", "/mcp", &POST_HEADERS, init).unwrap();
    assert_eq!(reply.status, 401, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(challenge.starts_with("Bearer"), "{challenge:?}");
    assert!(!challenge.contains("invalid_token"), "{challenge:?}");

    let wrong = format!("Bearer {TOKEN}-not");
    let mut headers = POST_HEADERS.to_vec();
    headers.push(("authorization", &wrong));
    let reply = conn.request("POST", "/mcp", &headers, init).unwrap();
    assert_eq!(reply.status, 401, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer") && challenge.contains(r#"error="invalid_token""#),
        "{challenge:?}"
    );

    // Refused before MCP saw anything: no session was opened.
    assert!(reply.header("mcp-session-id").is_none());

    let right = format!("Bearer {TOKEN}");
    let session = open_session(&mut conn, &[("authorization", &right)]).unwrap();
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([
        ("authorization", right.as_str()),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ]);
    let reply = conn
        .request("POST", "/mcp", &headers, read_notes(false).as_bytes())
        .unwrap();
    assert!(result_text(&reply.response().unwrap()).contains("first line"));

    // Every later request needs it too, session or not.
    headers.retain(|(k, _)| *k != "authorization");
    let reply = conn
        .request("POST", "/mcp", &headers, read_notes(false).as_bytes())
        .unwrap();
    assert_eq!(reply.status, 401);

    let stderr = server.stderr();
    assert!(
        stderr.contains("NoToken") && stderr.contains("WrongToken"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(TOKEN),
        "the token is never logged:\n{stderr}"
    );
}

#[test]
fn foreign_origins_and_rebinding_hosts_get_403() {
    let server = HttpFs::start(&["--http-allow-origin", "https://app.example.com"]);
    let mut conn = server.conn();
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = POST_HEADERS.to_vec();
        h.extend_from_slice(extra);
        h
    };

    // A page on another site, in the victim's browser.
    let reply = conn
        .request(
            "POST",
            "/mcp",
            &with(&[("origin", "https://evil.example")]),
            init,
        )
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert!(reply.header("mcp-session-id").is_none());

    // DNS rebinding: the attacker's name resolved to 127.0.0.1; the browser says so in Host
    // (and the page's Origin matches it, so only the Host check stops it).
    let reply = conn
        .request(
            "POST",
            "/mcp",
            &with(&[
                ("host", "rebind.evil.example"),
                ("origin", "http://rebind.evil.example"),
            ]),
            init,
        )
        .unwrap();
    assert_eq!(reply.status, 403, "{}", reply.text());

    // The origin the flag allows gets in, and may read the answer (CORS).
    let reply = conn
        .request(
            "POST",
            "/mcp",
            &with(&[("origin", "https://app.example.com")]),
            init,
        )
        .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://app.example.com")
    );
    // So does a client that sends no Origin at all (every non-browser client).
    let reply = conn.request("POST", "/mcp", &POST_HEADERS, init).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("access-control-allow-origin").is_none());
}

#[test]
fn without_a_token_variable_a_token_is_generated_printed_once_and_required() {
    let server = HttpFs::start(&["--generated"]);
    let stderr = server.stderr();
    let printed: Vec<&str> = stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("bearer token ")
                .and_then(|l| l.rsplit(": ").next())
        })
        .collect();
    assert_eq!(printed.len(), 1, "printed once:\n{stderr}");
    let token = printed[0];
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let mut conn = server.conn();
    let reply = conn.request("POST", "/mcp", &POST_HEADERS, init).unwrap();
    assert_eq!(reply.status, 401, "{}", reply.text());
    assert!(
        reply.header("mcp-session-id").is_none(),
        "no session without the token"
    );
    let right = format!("Bearer {token}");
    let session = open_session(&mut conn, &[("authorization", &right)]).unwrap();
    let mut headers = POST_HEADERS.to_vec();
    headers.extend([
        ("authorization", right.as_str()),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ]);
    let reply = conn
        .request("POST", "/mcp", &headers, read_notes(false).as_bytes())
        .unwrap();
    assert!(result_text(&reply.response().unwrap()).contains("first line"));
    // Only the banner shows it: no log line repeats it.
    let stderr = server.stderr();
    assert_eq!(stderr.matches(token).count(), 1, "{stderr}");

    // --no-auth, given explicitly, serves loopback without one.
    let open = HttpFs::start(&[]);
    assert!(!open.stderr().contains("bearer token"), "{}", open.stderr());
    let mut conn = open.conn();
    let reply = conn.request("POST", "/mcp", &POST_HEADERS, init).unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn a_public_address_with_no_auth_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern-fs"))
        .arg("--root")
        .arg(dir.path())
        .args(["--http", "0.0.0.0:0", "--no-auth"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("refusing --no-auth on 0.0.0.0:0") && stderr.contains("hint:"),
        "{stderr}"
    );
    assert!(!stderr.contains("listening on"), "{stderr}");

    // A token variable that is not set is no token either.
    let out = Command::new(env!("CARGO_BIN_EXE_tern-fs"))
        .arg("--root")
        .arg(dir.path())
        .args(["--http", "0.0.0.0:0", "--http-token-env", TOKEN_VAR])
        .env_remove(TOKEN_VAR)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("${TOKEN_VAR} is not set")),
        "{stderr}"
    );
}

#[test]
fn sigterm_ends_open_sessions_and_exits_cleanly() {
    let mut server = HttpFs::start(&[]);
    let mut conn = server.conn();
    let session = open_session(&mut conn, &[]).unwrap();
    // The session's standalone SSE stream: an open response that never ends by itself.
    let mut stream = server.conn();
    stream
        .send(
            "GET",
            "/mcp",
            &[
                ("accept", "text/event-stream"),
                ("mcp-session-id", &session),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            b"",
        )
        .unwrap();
    let (status, _) = stream.head().unwrap();
    assert_eq!(status, 200);

    let (status, took) = server.terminate();
    assert!(status.success(), "{status:?}\n{}", server.stderr());
    // Well inside the grace period: the sessions were ended, not waited out.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let stderr = server.stderr();
    assert!(stderr.contains("shutting down"), "{stderr}");
    assert!(!stderr.contains("still open"), "{stderr}");
}
