//! tern-fs `read_file` over stdio and over streamable HTTP (`--http`), sequential calls,
//! printed as a table: what serving the tools over the network costs per call on loopback.
//!
//! Run: `cargo bench -p tern-fs --bench http_vs_stdio`. `TERN_FS_BIN` swaps in another
//! tern-fs build.
//!
//! Both transports are driven by bare clients that do no more than the wire needs — a
//! newline-JSON pipe client (`vs_reference/raw.rs`) and an HTTP/1.1 keep-alive client
//! (`tests/suite/http_wire.rs`) — so the numbers are the server's and the transport's,
//! not an MCP library's. Each call is one request and its whole reply; the next is sent
//! after. Server CPU is the on-CPU time of its threads (`/proc/PID/task/*/schedstat`) over
//! the timed calls.
//!
//! Rows: stdio; HTTP in a 2025-11-25 session (one connection, `Mcp-Session-Id`); the same
//! with a bearer token checked on every request; HTTP 2026-07-28 (no session: every
//! request carries its own `_meta`, and rmcp builds a handler per request).
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/suite/http_wire.rs"]
mod http_wire;
#[allow(dead_code)]
#[path = "vs_reference/procfs.rs"]
mod procfs;
#[allow(dead_code)]
#[path = "vs_reference/raw.rs"]
mod raw;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use http_wire::{Conn, POST_HEADERS, call_body, modern_call_headers, open_session};
use serde_json::{Value, json};

const WARMUP_CALLS: u64 = 300;
const CALLS: u64 = 3000;
const MARKER: &str = "tern-http-bench-marker";
const TOKEN: &str = "bench-token-0123456789abcdef";
const TOKEN_VAR: &str = "TERN_BENCH_HTTP_TOKEN";

fn main() -> ExitCode {
    match bench() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\nerror: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tern_bin() -> PathBuf {
    std::env::var_os("TERN_FS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tern-fs")),
        PathBuf::from,
    )
}

/// One measured transport.
struct Row {
    label: &'static str,
    p50_us: f64,
    p99_us: f64,
    per_s: f64,
    cpu_us: f64,
}

fn bench() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let root = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    let file = root.join("small.txt");
    let body: String = (1..=40)
        .map(|i| format!("{MARKER} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(&file, &body).map_err(|e| e.to_string())?;
    let args = json!({ "path": file });
    println!(
        "tern-fs read_file of a {}-byte file on loopback: {CALLS} sequential calls after \
         {WARMUP_CALLS} warm-up, one server process per row\n",
        body.len()
    );
    let rows = [
        stdio(&root, &args)?,
        http(&root, &args, Era::Session, None)?,
        http(&root, &args, Era::Session, Some(TOKEN))?,
        http(&root, &args, Era::Modern, None)?,
    ];
    print_table(&rows);
    Ok(())
}

fn stdio(root: &Path, args: &Value) -> Result<Row, String> {
    let target = raw::Target {
        label: "tern-fs",
        program: tern_bin(),
        args: vec!["--root".into(), root.to_string_lossy().into_owned()],
        read_tool: "read_file",
    };
    let mut s = raw::Server::start(&target)?;
    let pid = s.pid();
    let mut id = 1;
    let mut call = || -> Result<(), String> {
        id += 1;
        s.send(&raw::call_line(id, "read_file", args))?;
        expect_file(&raw::check(s.recv()?)?)
    };
    measure("stdio (newline JSON)", pid, &mut call)
}

#[derive(Clone, Copy, PartialEq)]
enum Era {
    /// 2025-11-25: `initialize`, then requests in the session.
    Session,
    /// 2026-07-28: no session; `_meta` and headers on every request.
    Modern,
}

fn http(root: &Path, args: &Value, era: Era, token: Option<&str>) -> Result<Row, String> {
    let server = HttpServer::start(root, token)?;
    let mut conn = Conn::open(server.addr).map_err(|e| format!("connect: {e}"))?;
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, String)> = match era {
        Era::Session => POST_HEADERS
            .iter()
            .map(|(k, v)| (*k, (*v).to_string()))
            .collect(),
        Era::Modern => modern_call_headers("read_file"),
    };
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.clone()));
    }
    if era == Era::Session {
        let extra: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let session = open_session(&mut conn, &extra).map_err(|e| format!("initialize: {e}"))?;
        headers.push(("mcp-session-id", session));
        headers.push(("mcp-protocol-version", "2025-11-25".into()));
    }
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let modern = era == Era::Modern;
    let mut id = 1;
    let mut call = || -> Result<(), String> {
        id += 1;
        let body = call_body(id, "read_file", args, modern);
        let reply = conn
            .request("POST", "/mcp", &headers, body.as_bytes())
            .map_err(|e| format!("HTTP: {e}"))?;
        if reply.status != 200 {
            return Err(format!("HTTP {}: {}", reply.status, reply.text()));
        }
        expect_file(&reply.response().map_err(|e| e.to_string())?)
    };
    let label = match (era, token) {
        (Era::Session, None) => "HTTP, 2025-11-25 session",
        (Era::Session, Some(_)) => "HTTP, 2025-11-25 session, bearer token",
        (Era::Modern, _) => "HTTP, 2026-07-28 (no session)",
    };
    measure(label, server.pid(), &mut call)
}

/// Warms up, then times [`CALLS`] sequential calls and the CPU server `pid` spent on them.
fn measure(
    label: &'static str,
    pid: u32,
    call: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Row, String> {
    for _ in 0..WARMUP_CALLS {
        call().map_err(|e| format!("{label}: {e}"))?;
    }
    let mut lat = Vec::with_capacity(CALLS as usize);
    let cpu = procfs::cpu_ns(pid)?;
    let started = Instant::now();
    for _ in 0..CALLS {
        let one = Instant::now();
        call().map_err(|e| format!("{label}: {e}"))?;
        lat.push(one.elapsed().as_secs_f64() * 1e6);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_us = procfs::cpu_ns(pid)?.saturating_sub(cpu) as f64 / 1e3 / CALLS as f64;
    lat.sort_by(f64::total_cmp);
    Ok(Row {
        label,
        p50_us: percentile(&lat, 0.50),
        p99_us: percentile(&lat, 0.99),
        per_s: CALLS as f64 / elapsed,
        cpu_us,
    })
}

fn expect_file(response: &Value) -> Result<(), String> {
    if response.pointer("/result/isError") == Some(&Value::Bool(true))
        || !response.to_string().contains(MARKER)
    {
        return Err(format!("read_file did not return the file: {response}"));
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn print_table(rows: &[Row]) {
    let base = &rows[0];
    println!(
        "| transport                               | p50 (us) | p99 (us) | calls/s | server CPU/call (us) | p50 vs stdio |"
    );
    println!(
        "|-----------------------------------------|---------:|---------:|--------:|---------------------:|-------------:|"
    );
    for r in rows {
        println!(
            "| {:<39} | {:>8.0} | {:>8.0} | {:>7.0} | {:>20.1} | {:>11.2}x |",
            r.label,
            r.p50_us,
            r.p99_us,
            r.per_s,
            r.cpu_us,
            r.p50_us / base.p50_us
        );
    }
}

/// `tern-fs --http 127.0.0.1:0` over `root`; killed when dropped.
struct HttpServer {
    child: Child,
    addr: SocketAddr,
}

impl HttpServer {
    fn start(root: &Path, token: Option<&str>) -> Result<Self, String> {
        let mut cmd = Command::new(tern_bin());
        cmd.arg("--root")
            .arg(root)
            .args(["--http", "127.0.0.1:0"])
            .env("TERN_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            cmd.args(["--http-token-env", TOKEN_VAR])
                .env(TOKEN_VAR, token);
        } else {
            cmd.arg("--no-auth");
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot spawn {}: {e}", tern_bin().display()))?;
        let pipe = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = mpsc::channel();
        // Drained to the end, so a log line can never block the server.
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| "tern-fs --http printed no `listening on` line in 20 s".to_string())?;
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .ok_or_else(|| format!("unexpected URL {url}"))?
            .parse()
            .map_err(|e| format!("unexpected URL {url}: {e}"))?;
        Ok(Self { child, addr })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
