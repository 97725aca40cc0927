//! `--raw MODE`: a hand-written JSON-RPC server for misbehaviour rmcp would never produce.
//!
//! It speaks just enough MCP (2025-11-25, `initialize` only: `server/discover` gets -32601, as
//! from a server of that era) to reach the fault its mode names:
//! - `stray-response`: a reply with an id nobody asked for, before the `initialize` reply;
//! - `bad-version`: answers `initialize` with `protocolVersion: "1999-01-01"`;
//! - `no-tools`: advertises no tools capability (and fails `tools/list` if asked anyway);
//! - `string-id`: answers `tools/call` first with the request's id as a *string*, then with the
//!   real (numeric) id — only the second is the reply;
//! - `huge-reply`: answers `tools/call` with a line over 16 MiB, then keeps serving;
//! - `silent-probe`: never answers `server/discover` (legacy servers that ignore what they do
//!   not know before `initialize`);
//! - `slow-discover`: answers `server/discover` only after 1.5 s, offering 2026-07-28 alone,
//!   and from then on refuses `initialize` with -32022, as the Python SDK does — the
//!   connection has become a 2026-07-28 one;
//! - `plain`: none of the above.
//!
//! In every mode `tools/call` of `crash` exits at once (status 7).
//!
//! Every request's method is appended to `--audit FILE` (one JSON line each), so a test can
//! prove what tern sent.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RawMode {
    Plain,
    StrayResponse,
    BadVersion,
    NoTools,
    StringId,
    HugeReply,
    SilentProbe,
    SlowDiscover,
}

pub fn serve(mode: RawMode, audit: Option<&std::path::Path>) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    // `slow-discover`: the connection answered `server/discover`, so it is a 2026-07-28 one.
    let mut modern = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        if let Some(path) = audit
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(f, "{}", json!({"method": method}));
        }
        let id = msg["id"].clone();
        if id.is_null() {
            continue; // a notification
        }
        let reply = |mut result: Value| {
            if modern && let Some(o) = result.as_object_mut() {
                o.entry("resultType").or_insert(json!("complete"));
            }
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        };
        let error = |code: i64, message: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        if method == "server/discover" && mode == RawMode::SilentProbe {
            continue;
        }
        if method == "server/discover" && mode == RawMode::SlowDiscover {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            modern = true;
            let discovered = json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tern-test-server-raw", "version": "0"}}
            }});
            if writeln!(out, "{discovered}").is_err() || out.flush().is_err() {
                return;
            }
            continue;
        }
        if method == "initialize" && modern {
            let refused = error(
                -32022,
                "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
            );
            if writeln!(out, "{refused}").is_err() || out.flush().is_err() {
                return;
            }
            continue;
        }
        let lines: Vec<Value> = match method.as_str() {
            "initialize" => {
                let version = if mode == RawMode::BadVersion {
                    "1999-01-01"
                } else {
                    "2025-11-25"
                };
                let capabilities = if mode == RawMode::NoTools {
                    json!({})
                } else {
                    json!({"tools": {}})
                };
                let mut lines = Vec::new();
                if mode == RawMode::StrayResponse {
                    lines.push(json!({"jsonrpc": "2.0", "id": 424242, "result": {}}));
                }
                lines.push(reply(json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "serverInfo": {"name": "tern-test-server-raw", "version": "0"}
                })));
                lines
            }
            "tools/list" if mode == RawMode::NoTools => {
                vec![error(-32601, "no tools here")]
            }
            "tools/list" => vec![reply(json!({"tools": [{
                "name": "echo",
                "description": "Echo the text back.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
            }, {
                "name": "crash",
                "description": "Exit at once.",
                "inputSchema": {"type": "object", "properties": {}}
            }]}))],
            "tools/call" if msg["params"]["name"] == "crash" => std::process::exit(7),
            "tools/call" => {
                let text = msg["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let content = |t: &str| json!({"content": [{"type": "text", "text": t}]});
                match mode {
                    RawMode::StringId => {
                        let impostor = json!({"jsonrpc": "2.0", "id": id.to_string(),
                            "result": content("impostor")});
                        vec![impostor, reply(content(&text))]
                    }
                    RawMode::HugeReply => {
                        let huge = "x".repeat(17 * 1024 * 1024);
                        vec![reply(content(&huge))]
                    }
                    _ => vec![reply(content(&text))],
                }
            }
            "ping" => vec![reply(json!({}))],
            _ => vec![error(-32601, &format!("method not found: {method}"))],
        };
        for l in lines {
            if writeln!(out, "{l}").is_err() || out.flush().is_err() {
                return;
            }
            // The impostor must arrive first, and alone.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
