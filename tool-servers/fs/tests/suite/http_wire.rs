//! A minimal HTTP/1.1 client for MCP streamable HTTP, on a plain `TcpStream`: the tests see
//! every status and header exactly as the server sent them, and the HTTP-vs-stdio bench
//! (`benches/http_vs_stdio.rs`, which includes this file) keeps a client library's cost out
//! of its numbers. Keep-alive, `Content-Length` and chunked bodies; an SSE body is turned
//! into the JSON-RPC messages of its `data:` lines.
//!
//! Unwrap-free: the bench is not test code.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;

/// One keep-alive connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    host: String,
    request: Vec<u8>,
}

/// A response, body read in full.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
        Ok(Self {
            reader: BufReader::with_capacity(64 * 1024, stream.try_clone()?),
            writer: stream,
            host: addr.to_string(),
            request: Vec::with_capacity(4096),
        })
    }

    /// Sends a request; `Host` is the address connected to unless `headers` has one.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let r = &mut self.request;
        r.clear();
        write!(r, "{method} {path} HTTP/1.1\r\n")?;
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            write!(r, "host: {}\r\n", self.host)?;
        }
        for (k, v) in headers {
            write!(r, "{k}: {v}\r\n")?;
        }
        write!(r, "content-length: {}\r\n\r\n", body.len())?;
        r.extend_from_slice(body);
        self.writer.write_all(r)
    }

    /// Reads a response's status line and headers, leaving the body unread (for a stream
    /// that never ends, such as the SSE stream of a `GET`).
    pub fn head(&mut self) -> io::Result<(u16, Vec<(String, String)>)> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(format!("bad status line {line:?}")))?;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l
                .split_once(':')
                .ok_or_else(|| bad(format!("bad header {l:?}")))?;
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        Ok((status, headers))
    }

    /// Reads a whole response.
    pub fn recv(&mut self) -> io::Result<Reply> {
        let (status, headers) = self.head()?;
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let mut body = Vec::new();
        if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            self.read_chunked(&mut body)?;
        } else if let Some(len) = find("content-length") {
            let len: usize = len
                .parse()
                .map_err(|_| bad(format!("bad content-length {len}")))?;
            body.resize(len, 0);
            self.reader.read_exact(&mut body)?;
        } else if status != 204 && status != 304 {
            self.reader.read_to_end(&mut body)?;
        }
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Reply> {
        self.send(method, path, headers, body)?;
        self.recv()
    }

    fn read_chunked(&mut self, body: &mut Vec<u8>) -> io::Result<()> {
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let size = line.trim_end().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| bad(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    if self.reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                        return Ok(());
                    }
                }
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.reader.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            self.reader.read_exact(&mut crlf)?;
        }
    }
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages in the body: a JSON body, or the `data:` lines of an SSE one
    /// (priming events with empty data are skipped).
    pub fn messages(&self) -> io::Result<Vec<Value>> {
        let is_sse = self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"));
        if !is_sse {
            return Ok(vec![serde_json::from_slice(&self.body).map_err(|e| {
                bad(format!("body is not JSON ({e}): {}", self.text()))
            })?]);
        }
        let text = self.text();
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).map_err(|e| bad(format!("bad SSE data ({e}): {d}"))))
            .collect()
    }

    /// The one JSON-RPC response (a message with an `id`) in the body.
    pub fn response(&self) -> io::Result<Value> {
        self.messages()?
            .into_iter()
            .find(|m| m.get("id").is_some())
            .ok_or_else(|| {
                bad(format!(
                    "no JSON-RPC response in HTTP {}: {}",
                    self.status,
                    self.text()
                ))
            })
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// The headers every MCP POST carries.
pub const POST_HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// Opens a 2025-11-25 session (`initialize`, then `notifications/initialized`); returns
/// the session id.
pub fn open_session(conn: &mut Conn, extra: &[(&str, &str)]) -> io::Result<String> {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "tern-http-wire", "version": "0"}
        }
    });
    let mut headers = POST_HEADERS.to_vec();
    headers.extend_from_slice(extra);
    let reply = conn.request("POST", "/mcp", &headers, init.to_string().as_bytes())?;
    let response = reply.response()?;
    if response.get("result").is_none() {
        return Err(bad(format!("initialize failed: {response}")));
    }
    let session = reply
        .header("mcp-session-id")
        .ok_or_else(|| bad("no mcp-session-id".into()))?
        .to_string();
    headers.push(("mcp-session-id", &session));
    headers.push(("mcp-protocol-version", "2025-11-25"));
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let reply = conn.request("POST", "/mcp", &headers, note)?;
    if reply.status != 202 {
        return Err(bad(format!(
            "notifications/initialized: HTTP {} {}",
            reply.status,
            reply.text()
        )));
    }
    Ok(session)
}

/// A `tools/call` body; with `modern`, carrying the 2026-07-28 per-request `_meta`.
pub fn call_body(id: u64, tool: &str, arguments: &Value, modern: bool) -> String {
    let mut params = serde_json::json!({"name": tool, "arguments": arguments});
    if modern {
        params["_meta"] = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "tern-http-wire", "version": "0"}
        });
    }
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
        .to_string()
}

/// The headers of a 2026-07-28 `tools/call` of `tool` (no session; the method and tool
/// name repeated in headers, as that revision asks).
pub fn modern_call_headers(tool: &str) -> Vec<(&'static str, String)> {
    vec![
        ("content-type", "application/json".into()),
        ("accept", "application/json, text/event-stream".into()),
        ("mcp-protocol-version", "2026-07-28".into()),
        ("mcp-method", "tools/call".into()),
        ("mcp-name", tool.to_string()),
    ]
}
