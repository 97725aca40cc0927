//! A minimal newline-JSON MCP client: it writes JSON-RPC lines to a server's
//! stdin and reads replies from its stdout, nothing else. Using it (rather than
//! an MCP library) keeps the client's own cost out of the numbers and lets the
//! bench send a burst of requests at once.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A server process spoken to line by line (killed when dropped).
pub struct Server {
    stdin: ChildStdin,
    reader: Reader,
}

/// How to start one server and which tool reads a file on it.
pub struct Target {
    pub label: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub read_tool: &'static str,
}

impl Server {
    /// Spawns `target` and completes the MCP handshake.
    pub fn start(target: &Target) -> Result<Self, String> {
        let mut child = Command::new(&target.program)
            .args(&target.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!(
                    "{}: cannot spawn {}: {e}",
                    target.label,
                    target.program.display()
                )
            })?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().ok_or("no stdout")?);
        let mut s = Self {
            stdin,
            reader: Reader {
                child,
                stdout,
                line: String::new(),
            },
        };
        s.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tern-fs-bench","version":"0"}}}"#,
        )?;
        let reply = s.recv()?;
        if !reply.contains("\"result\"") {
            return Err(format!("{}: initialize failed: {reply}", target.label));
        }
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        Ok(s)
    }

    pub fn pid(&self) -> u32 {
        self.reader.pid()
    }

    /// Writes one message (a line without its newline).
    pub fn send(&mut self, message: &str) -> Result<(), String> {
        self.stdin
            .write_all(message.as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("write to server: {e}"))
    }

    /// Reads the next line the server writes.
    pub fn recv(&mut self) -> Result<&str, String> {
        self.reader.recv()
    }

    /// Splits off the write half, for a writer thread while this side reads.
    pub fn split(self) -> (ChildStdin, Reader) {
        (self.stdin, self.reader)
    }
}

/// The read half of a [`Server`]; owns the process.
pub struct Reader {
    child: Child,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Reader {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn recv(&mut self) -> Result<&str, String> {
        self.line.clear();
        match self.stdout.read_line(&mut self.line) {
            Ok(0) => Err("the server closed stdout".into()),
            Ok(_) => Ok(&self.line),
            Err(e) => Err(format!("read from server: {e}")),
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` request line.
pub fn call_line(id: u64, tool: &str, arguments: &serde_json::Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    })
    .to_string()
}

/// Checks a reply is a successful tool result; returns it.
pub fn check(reply: &str) -> Result<serde_json::Value, String> {
    let v: serde_json::Value =
        serde_json::from_str(reply).map_err(|e| format!("reply is not JSON ({e}): {reply}"))?;
    if v.pointer("/result/isError") != Some(&serde_json::Value::Bool(false))
        && v.pointer("/result/content").is_none()
    {
        return Err(format!("the call failed: {reply}"));
    }
    if v.pointer("/result/isError") == Some(&serde_json::Value::Bool(true)) {
        return Err(format!("the tool returned an error: {reply}"));
    }
    Ok(v)
}
