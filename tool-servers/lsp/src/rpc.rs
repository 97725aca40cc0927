//! A small JSON-RPC 2.0 client over a language server's stdio, framed the LSP way
//! (`Content-Length: N\r\n\r\n` then N bytes of JSON; LSP specification 3.17, "Base
//! Protocol").
//!
//! Requests get an id and a oneshot waiting for the response; notifications from the server
//! go to a channel the session reads; requests *from* the server (`workspace/configuration`,
//! `client/registerCapability`, `window/workDoneProgress/create`, …) are answered here, at
//! once, with what a client that supports none of them says. The process runs in a process
//! group of its own, killed as a whole when the connection is dropped: language servers start
//! helpers (tsserver under typescript-language-server, cargo under rust-analyzer).

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};

use crate::detect::ServerCommand;

/// The largest message accepted from a language server.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Lines of the server's stderr kept for error messages.
const STDERR_LINES: usize = 20;

/// Why a request did not get a result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The server answered with an error.
    #[error("{server} answered {method} with error {code}: {message}")]
    Server {
        server: String,
        method: String,
        code: i64,
        message: String,
    },
    /// No answer within the time allowed.
    #[error("{server} did not answer {method} within {secs} s")]
    Timeout {
        server: String,
        method: String,
        secs: u64,
    },
    /// The process is gone (it crashed, or closed its output).
    #[error("{server} stopped{}", stderr_suffix(.stderr))]
    Closed { server: String, stderr: Vec<String> },
    /// The server does not answer this kind of request (it did not offer it at the
    /// handshake).
    #[error("{server} does not answer {method}")]
    Unsupported { server: String, method: String },
    /// The answer is not what the method returns.
    #[error("{server} answered {method} with something unexpected: {detail}")]
    Malformed {
        server: String,
        method: String,
        detail: String,
    },
}

fn stderr_suffix(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last output on stderr:\n{}", lines.join("\n"))
    }
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, (i64, String)>>>>>;

/// A notification from the server.
#[derive(Debug)]
pub struct Notification {
    pub method: String,
    pub params: Value,
}

/// A running language server.
pub struct Connection {
    name: String,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicI64,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Turns true once the server's stderr is read to its end.
    stderr_done: watch::Receiver<bool>,
    child: Mutex<Option<Child>>,
    pgid: Option<i32>,
}

impl Connection {
    /// Starts `command` in `root` and returns the connection and the server's notifications.
    /// `folders` answers the server's `workspace/workspaceFolders` request.
    pub fn spawn(
        command: &ServerCommand,
        root: &std::path::Path,
        folders: Value,
    ) -> std::io::Result<(Self, mpsc::UnboundedReceiver<Notification>)> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(std::io::Error::other("the child's pipes were not set up"));
        };
        let name = command.shown.clone();
        let (writer, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(body) = outgoing.recv().await {
                let header = format!("Content-Length: {}\r\n\r\n", body.len());
                if stdin.write_all(header.as_bytes()).await.is_err()
                    || stdin.write_all(&body).await.is_err()
                    || stdin.flush().await.is_err()
                {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (done, stderr_done) = watch::channel(false);
        let drained = (tail.clone(), name.clone());
        tokio::spawn(async move {
            drain_stderr(stderr, drained.0, drained.1).await;
            let _ = done.send(true);
        });
        let pending: Pending = Arc::default();
        let (notify, notifications) = mpsc::unbounded_channel();
        tokio::spawn(read_loop(
            stdout,
            pending.clone(),
            writer.clone(),
            notify,
            folders,
            name.clone(),
        ));
        Ok((
            Self {
                name,
                writer,
                pending,
                next_id: AtomicI64::new(1),
                stderr: tail,
                stderr_done,
                child: Mutex::new(Some(child)),
                pgid,
            },
            notifications,
        ))
    }

    /// What the server is called in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends a request and waits at most `timeout` for its result.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.send(&message).is_err() {
            return Err(self.closed_drained().await);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err((code, message)))) => Err(RpcError::Server {
                server: self.name.clone(),
                method: method.to_string(),
                code,
                message,
            }),
            Ok(Err(_)) => Err(self.closed_drained().await),
            Err(_) => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.remove(&id);
                }
                // Tell the server to stop working on it (LSP `$/cancelRequest`).
                let _ = self.notify("$/cancelRequest", json!({"id": id}));
                Err(RpcError::Timeout {
                    server: self.name.clone(),
                    method: method.to_string(),
                    secs: timeout.as_secs(),
                })
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send(&message).map_err(|()| self.closed())
    }

    fn send(&self, message: &Value) -> Result<(), ()> {
        let body = serde_json::to_vec(message).map_err(|_| ())?;
        self.writer.send(body).map_err(|_| ())
    }

    /// The error for a server that is gone, with its last stderr lines.
    pub fn closed(&self) -> RpcError {
        RpcError::Closed {
            server: self.name.clone(),
            stderr: self
                .stderr
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// [`Self::closed`] once the server's stderr has been read to its end — a server that dies
    /// at start says why on stderr, and its stdout closing can race ahead of those lines. Bounded:
    /// a grandchild may hold the pipe open.
    pub async fn closed_drained(&self) -> RpcError {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(Duration::from_millis(500), done.wait_for(|d| *d)).await;
        self.closed()
    }

    /// Whether the process has exited.
    pub fn exited(&self) -> bool {
        self.child
            .lock()
            .ok()
            .and_then(|mut c| c.as_mut().map(|c| !matches!(c.try_wait(), Ok(None))))
            .unwrap_or(true)
    }

    /// Asks the server to shut down (LSP `shutdown` then `exit`), then ends its process group.
    pub async fn shutdown(&self) {
        let _ = self
            .request("shutdown", Value::Null, Duration::from_secs(2))
            .await;
        let _ = self.notify("exit", Value::Null);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.kill();
    }

    fn kill(&self) {
        if let Some(pgid) = self.pgid.and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        if let Ok(mut child) = self.child.lock()
            && let Some(child) = child.as_mut()
        {
            let _ = child.start_kill();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads messages until the server closes its stdout.
async fn read_loop<R: AsyncRead + Unpin>(
    stdout: R,
    pending: Pending,
    writer: mpsc::UnboundedSender<Vec<u8>>,
    notify: mpsc::UnboundedSender<Notification>,
    folders: Value,
    name: String,
) {
    let mut reader = BufReader::new(stdout);
    loop {
        let message = match read_message(&mut reader).await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("{name}: {e}; closing the connection");
                break;
            }
        };
        let id = message.get("id").cloned();
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, id) {
            // A response to one of ours.
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(&id)) else {
                    continue;
                };
                let outcome = match message.get("error") {
                    Some(err) => Err((
                        err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        err.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    )),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = tx.send(outcome);
            }
            // A request from the server: answered now.
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let reply = match answer(&method, &params, &folders) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(()) => json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32601, "message": format!("tern-lsp does not handle {method}")
                    }}),
                };
                if let Ok(body) = serde_json::to_vec(&reply) {
                    let _ = writer.send(body);
                }
            }
            (Some(method), None) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                if notify.send(Notification { method, params }).is_err() {
                    break;
                }
            }
            (None, None) => {}
        }
    }
    // Every request still waiting fails now, not at its timeout.
    if let Ok(mut p) = pending.lock() {
        p.clear();
    }
}

/// What a client with no settings, no dynamic registration and no UI answers.
fn answer(method: &str, params: &Value, folders: &Value) -> Result<Value, ()> {
    match method {
        // One `null` per item asked for: "no settings", so the server uses its defaults.
        "workspace/configuration" => {
            let n = params
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Ok(Value::Array(vec![Value::Null; n]))
        }
        "workspace/workspaceFolders" => Ok(folders.clone()),
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "window/showMessageRequest"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/codeLens/refresh" => Ok(Value::Null),
        "window/showDocument" => Ok(json!({"success": false})),
        "workspace/applyEdit" => Ok(json!({
            "applied": false,
            "failureReason": "tern-lsp does not edit files"
        })),
        _ => Err(()),
    }
}

/// One framed message; `None` at the end of the stream.
async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> std::io::Result<Option<Value>> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((key, value)) = header.split_once(':')
            && key.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_MESSAGE_BYTES {
        return Err(std::io::Error::other(format!(
            "a message of {length} bytes is over the {MAX_MESSAGE_BYTES}-byte limit"
        )));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("a message is not JSON: {e}")))
}

async fn drain_stderr<R: AsyncRead + Unpin>(
    stderr: R,
    tail: Arc<Mutex<VecDeque<String>>>,
    name: String,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!("{name}: {line}");
        if let Ok(mut t) = tail.lock() {
            if t.len() == STDERR_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_are_framed_by_content_length() {
        let body = br#"{"jsonrpc":"2.0","method":"x","params":{"a":"\u00e9"}}"#;
        let mut raw =
            format!("Content-Length: {}\r\nContent-Type: x\r\n\r\n", body.len()).into_bytes();
        raw.extend_from_slice(body);
        raw.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let mut reader = BufReader::new(&raw[..]);
        let first = read_message(&mut reader).await.unwrap().unwrap();
        assert_eq!(first["params"]["a"], "é");
        assert_eq!(read_message(&mut reader).await.unwrap().unwrap(), json!({}));
        assert!(read_message(&mut reader).await.unwrap().is_none());
    }

    #[test]
    fn server_requests_get_the_answers_of_a_plain_client() {
        let folders = json!([{"uri": "file:///w", "name": "w"}]);
        assert_eq!(
            answer(
                "workspace/configuration",
                &json!({"items": [{}, {}]}),
                &folders
            ),
            Ok(json!([null, null]))
        );
        assert_eq!(
            answer("workspace/workspaceFolders", &Value::Null, &folders),
            Ok(folders.clone())
        );
        assert_eq!(answer("custom/thing", &Value::Null, &folders), Err(()));
    }
}
