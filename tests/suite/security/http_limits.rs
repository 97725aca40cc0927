//! `tern serve shell --http` under load and attack (issue 24, item 6 and the minor HTTP
//! findings): sessions capped (503 + `Retry-After`, freed on DELETE and idle expiry), 15 000
//! `initialize` attempts leave the server small, idle and slow (slowloris) connections are
//! closed and never lock out a client with the token, a session's requests in flight are
//! capped (429), and another local user without the token is refused.
//!
//! Every test drives the real `tern` binary over real TCP with a bare HTTP/1.1 client, so
//! what is checked is exactly what goes over the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tern_e2e::bin;

use crate::suite::serve_http::Served;

const TOKEN: &str = "e2e-limits-token-0123456789abcdef";

const INIT: &str = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}"#;

/// `tern serve shell --root DIR --http-token-env … EXTRA… --http 127.0.0.1:0`.
fn shell_server(root: &std::path::Path, extra: &[&str]) -> Served {
    let root = root.to_string_lossy().into_owned();
    let mut args = vec![
        "serve",
        "shell",
        "--root",
        root.as_str(),
        "--http-token-env",
        "LIMITS_TOKEN",
    ];
    args.extend_from_slice(extra);
    Served::start(&bin("tern"), &args, &[("LIMITS_TOKEN", TOKEN)])
}

fn addr(served: &Served) -> String {
    served
        .url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .to_string()
}

/// One HTTP/1.1 answer.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: the body itself, or an SSE stream's `data:` line.
    fn message(&self) -> Value {
        let text = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| l.starts_with('{'))
            .unwrap_or(self.body.trim());
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// A keep-alive HTTP/1.1 connection to the server.
struct Conn {
    addr: String,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: &str) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Self {
            addr: addr.to_string(),
            reader: BufReader::new(stream),
        }
    }

    /// Sends a request; `extra` holds whole header lines (`name: value\r\n`).
    fn send(&mut self, method: &str, extra: &str, body: &str) {
        let request = format!(
            "{method} /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\n{extra}content-length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
    }

    /// Reads one answer's status line and headers.
    fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        (status, headers)
    }

    /// Reads the body that follows `head` (content-length or chunked).
    fn body(&mut self, headers: &[(String, String)]) -> String {
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if let Some(len) = get("content-length") {
            body.resize(len.parse().unwrap(), 0);
            self.reader.read_exact(&mut body).unwrap();
        } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; n + 2];
                self.reader.read_exact(&mut chunk).unwrap();
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        }
        String::from_utf8(body).unwrap()
    }

    fn request(&mut self, method: &str, extra: &str, body: &str) -> Reply {
        self.send(method, extra, body);
        let (status, headers) = self.head();
        let body = self.body(&headers);
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Whether the server has closed this connection (EOF or reset) within `within`.
    fn closed_within(&mut self, within: Duration) -> bool {
        let stream = self.reader.get_mut();
        stream.set_read_timeout(Some(within)).unwrap();
        let mut byte = [0u8; 1];
        match stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

fn auth() -> String {
    format!("authorization: Bearer {TOKEN}\r\n")
}

fn session_headers(session: &str) -> String {
    format!(
        "{}mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n",
        auth()
    )
}

/// An `initialize` with the token on `conn`.
fn initialize(conn: &mut Conn) -> Reply {
    conn.request("POST", &auth(), INIT)
}

/// A session ready for calls: `initialize`, then `notifications/initialized`.
fn open_session(addr: &str) -> String {
    let mut conn = Conn::open(addr);
    let reply = initialize(&mut conn);
    assert_eq!(reply.status, 200, "{reply:?}");
    let session = reply.header("mcp-session-id").unwrap().to_string();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let reply = conn.request("POST", &session_headers(&session), note);
    assert_eq!(reply.status, 202, "{reply:?}");
    session
}

fn run_call(id: u64, command: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": command}}
    })
    .to_string()
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// The 503 for one `initialize` too many: `Retry-After`, and a JSON-RPC error for its id
/// that names the flag.
fn assert_too_many_sessions(reply: &Reply) {
    assert_eq!(reply.status, 503, "{reply:?}");
    assert!(
        reply
            .header("retry-after")
            .is_some_and(|v| v.parse::<u32>().is_ok()),
        "{reply:?}"
    );
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    let message = reply.message();
    assert_eq!(message["id"], 7, "{message}");
    let text = message["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("too many sessions") && text.contains("--max-sessions"),
        "{text}"
    );
}

#[test]
fn sessions_beyond_max_sessions_get_503_and_slots_come_back_on_delete_and_idle_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let server = shell_server(
        dir.path(),
        &["--max-sessions", "3", "--session-idle-sec", "2"],
    );
    let addr = addr(&server);
    let sessions: Vec<String> = (0..3).map(|_| open_session(&addr)).collect();
    let mut conn = Conn::open(&addr);
    assert_too_many_sessions(&initialize(&mut conn));
    // A session in use keeps working while others are refused.
    let reply = conn.request(
        "POST",
        &session_headers(&sessions[0]),
        &run_call(1, "echo still-here"),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("still-here"), "{reply:?}");

    // DELETE frees a slot at once.
    let reply = conn.request("DELETE", &session_headers(&sessions[1]), "");
    assert!(reply.status < 300, "{reply:?}");
    let reply = initialize(&mut conn);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_too_many_sessions(&initialize(&mut conn));

    // Idle sessions end after --session-idle-sec, and their slots with them.
    std::thread::sleep(Duration::from_millis(3500));
    let mut conn = Conn::open(&addr);
    let reply = conn.request("POST", &session_headers(&sessions[0]), &run_call(2, "true"));
    assert_eq!(reply.status, 404, "an expired session is gone: {reply:?}");
    for _ in 0..3 {
        let mut conn = Conn::open(&addr);
        assert_eq!(initialize(&mut conn).status, 200);
    }
    assert_too_many_sessions(&initialize(&mut conn));
}

/// The finding: 15 000 sessions grew a server from 13 to 823 MB in 7 s. At the default cap,
/// 64 sessions exist and every other attempt is refused; the server stays small.
#[test]
fn fifteen_thousand_initialize_attempts_leave_at_most_max_sessions_and_a_small_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = shell_server(dir.path(), &[]);
    let addr = addr(&server);
    let pid = server.child.id();
    let before = vm_rss_kib(pid);
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut conn = Conn::open(&addr);
                let (mut ok, mut refused) = (0u32, 0u32);
                for _ in 0..3750 {
                    let reply = initialize(&mut conn);
                    match reply.status {
                        200 => ok += 1,
                        503 => refused += 1,
                        other => panic!("unexpected {other}: {reply:?}"),
                    }
                }
                (ok, refused)
            })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for w in workers {
        let (a, b) = w.join().unwrap();
        ok += a;
        refused += b;
    }
    let after = vm_rss_kib(pid);
    eprintln!(
        "15 000 initialize attempts in {:?}: {ok} sessions, {refused} refused; VmRSS {before} → {after} KiB",
        started.elapsed()
    );
    assert_eq!(ok, 64, "exactly --max-sessions' default were opened");
    assert_eq!(refused, 15_000 - 64);
    assert!(after < 100 * 1024, "VmRSS {after} KiB");
    // And the server still serves a client with a session.
    let mut conn = Conn::open(&addr);
    assert_too_many_sessions(&initialize(&mut conn));
}

/// The finding: 300 idle connections, accepted before any token check, locked real clients
/// out. Here they are closed to make room and after the header timeout, and a client with
/// the token is served at once.
#[test]
fn three_hundred_idle_connections_never_lock_out_a_client_with_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = shell_server(dir.path(), &["--header-timeout-sec", "3"]);
    let addr = addr(&server);
    let mut idle: Vec<Conn> = (0..300).map(|_| Conn::open(&addr)).collect();
    std::thread::sleep(Duration::from_millis(300));

    let started = Instant::now();
    let session = open_session(&addr);
    let mut conn = Conn::open(&addr);
    let reply = conn.request(
        "POST",
        &session_headers(&session),
        &run_call(1, "echo served"),
    );
    let took = started.elapsed();
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("served"), "{reply:?}");
    assert!(took < Duration::from_secs(3), "served after {took:?}");

    // Beyond --max-connections (256) the oldest idle ones were closed at once; the rest go
    // when the header timeout passes without a request.
    let closed_early = idle[..44]
        .iter_mut()
        .map(|c| c.closed_within(Duration::from_millis(200)))
        .filter(|closed| *closed)
        .count();
    assert_eq!(closed_early, 44, "the 44 oldest made room");
    std::thread::sleep(Duration::from_secs(3));
    let closed = idle
        .iter_mut()
        .map(|c| c.closed_within(Duration::from_millis(500)))
        .filter(|closed| *closed)
        .count();
    assert_eq!(
        closed, 300,
        "every idle connection is closed after the timeout"
    );
    let reply = Conn::open(&addr).request(
        "POST",
        &session_headers(&session),
        &run_call(2, "echo again"),
    );
    assert!(reply.body.contains("again"), "{reply:?}");
}

/// Headers dribbled a byte at a time (slowloris) are cut after --header-timeout-sec, both
/// on a fresh connection and on one that has already made an authorized request.
#[test]
fn slowloris_header_dribbles_are_cut_after_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = shell_server(dir.path(), &["--header-timeout-sec", "1"]);
    let addr = addr(&server);
    let dribble = |conn: &mut Conn| -> Duration {
        let started = Instant::now();
        let stream = conn.reader.get_mut();
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nhost: x\r\n")
            .unwrap();
        for byte in b"x-slow: ".iter().cycle() {
            std::thread::sleep(Duration::from_millis(100));
            if stream.write_all(&[*byte]).is_err() || started.elapsed() > Duration::from_secs(8) {
                break;
            }
            let mut probe = [0u8; 1];
            stream.set_nonblocking(true).unwrap();
            let gone = matches!(stream.read(&mut probe), Ok(0));
            stream.set_nonblocking(false).unwrap();
            if gone {
                break;
            }
        }
        started.elapsed()
    };
    let mut fresh = Conn::open(&addr);
    let took = dribble(&mut fresh);
    assert!(
        took < Duration::from_secs(4),
        "a fresh connection dribbled for {took:?}"
    );

    let mut authorized = Conn::open(&addr);
    assert_eq!(initialize(&mut authorized).status, 200);
    let took = dribble(&mut authorized);
    assert!(
        took < Duration::from_secs(4),
        "an authorized connection dribbled for {took:?}"
    );
}

/// One session's requests in flight are capped: with two `sleep` calls running, a third
/// gets 429 with `Retry-After` and a JSON-RPC error for its id; after them, calls pass again.
#[test]
fn requests_beyond_max_inflight_get_429() {
    let dir = tempfile::tempdir().unwrap();
    let server = shell_server(dir.path(), &["--max-inflight", "2"]);
    let addr = addr(&server);
    let session = open_session(&addr);
    let mut running: Vec<(Conn, Vec<(String, String)>)> = (1..=2)
        .map(|id| {
            let mut conn = Conn::open(&addr);
            conn.send(
                "POST",
                &session_headers(&session),
                &run_call(id, "sleep 2; echo slept"),
            );
            let (status, headers) = conn.head();
            assert_eq!(status, 200);
            (conn, headers)
        })
        .collect();
    let mut third = Conn::open(&addr);
    let reply = third.request(
        "POST",
        &session_headers(&session),
        &run_call(3, "echo third"),
    );
    assert_eq!(reply.status, 429, "{reply:?}");
    assert!(reply.header("retry-after").is_some(), "{reply:?}");
    let message = reply.message();
    assert_eq!(message["id"], 3, "{message}");
    assert!(
        message["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-inflight"),
        "{message}"
    );
    // A notification is no request: it passes while the slots are taken.
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"none","progress":1}}"#;
    let reply = third.request("POST", &session_headers(&session), cancel);
    assert_eq!(reply.status, 202, "{reply:?}");
    // Another session is not affected.
    let other = open_session(&addr);
    let reply =
        Conn::open(&addr).request("POST", &session_headers(&other), &run_call(4, "echo other"));
    assert!(reply.body.contains("other"), "{reply:?}");
    for (conn, headers) in &mut running {
        assert!(conn.body(headers).contains("slept"));
    }
    let reply = third.request(
        "POST",
        &session_headers(&session),
        &run_call(5, "echo after"),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.body.contains("after"), "{reply:?}");
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next().map(|u| u == "0"))
        .unwrap_or(false)
}

/// The finding: `tern serve shell --http 127.0.0.1:PORT` without a token ran commands as
/// root for uid 65534. Now a token is generated unless `--no-auth`; another user without
/// it is refused and its command never runs; with it (the token is the only difference),
/// the same request runs.
#[test]
fn another_uid_without_the_token_cannot_run_commands() {
    if !is_root() {
        eprintln!("skipped: needs root to call the server as uid 65534 (setpriv)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let server = Served::start(
        &bin("tern"),
        &[
            "serve",
            "shell",
            "--root",
            &root.to_string_lossy(),
            "--generated",
        ],
        &[],
    );
    let token = server
        .stderr()
        .lines()
        .find_map(|l| {
            l.strip_prefix("bearer token ")
                .and_then(|l| l.rsplit(": ").next())
                .map(str::to_string)
        })
        .unwrap();
    let marker = root.join("ran-as-nobody");
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "run",
            "arguments": {"command": format!("touch {}", marker.display())},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string();
    let curl = |extra: &[&str]| -> String {
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "curl",
                "-s",
            ])
            .args([
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-X",
                "POST",
                &server.url,
            ])
            .args(["-H", "content-type: application/json"])
            .args(["-H", "accept: application/json, text/event-stream"])
            .args(["-H", "mcp-protocol-version: 2026-07-28"])
            .args(["-H", "mcp-method: tools/call", "-H", "mcp-name: run"])
            .args(extra)
            .args(["--data", &body])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(curl(&[]), "401");
    assert_eq!(
        curl(&[
            "-H",
            "authorization: Bearer 0123456789abcdef0123456789abcdef"
        ]),
        "401"
    );
    assert!(!marker.exists(), "the command ran without the token");
    let with = format!("authorization: Bearer {token}");
    assert_eq!(curl(&["-H", &with]), "200");
    assert!(
        marker.exists(),
        "the same request with the token runs: {}",
        server.stderr()
    );
}
