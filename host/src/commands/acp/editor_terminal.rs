//! The editor's terminal (issue 21, item 4): when the ACP client advertises
//! `clientCapabilities.terminal`, the session's built-in shell servers are started with
//! `--editor-socket PATH`, and this bridge answers them. Each connection is one command:
//! tern-shell asks to run its own runner (which re-applies tern's sandbox to the model's
//! command, see `tool-servers/shell/src/terminal/`), and the bridge turns that into the ACP
//! terminal methods (agentclientprotocol.com/protocol/terminals): `terminal/create`, then
//! `terminal/wait_for_exit` and `terminal/output`, `terminal/kill` when tern-shell asks (timeout,
//! cancellation) or goes away, and `terminal/release` at the end.
//!
//! The call itself is unchanged: still an MCP request from the gateway to the tern-shell
//! process (rules, the editor's permission answer, the checkpoint before a command, audit).
//! The editor runs only what tern-shell hands it, never the model's command line.
//!
//! ACP requires a terminal to be embedded in a tool call before it is released (schema:
//! `Terminal`, "The terminal must be added before calling `terminal/release`"), and the call's
//! last `tool_call_update` must still name it; so a terminal is released only once [`Cards`]
//! says the call's final update has been queued (the outbox keeps order), or after
//! [`CARD_WAIT`] when it never comes.

use std::{
    collections::HashSet,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use serde_json::{Value, json};
use tern_protocol::editor_terminal::{MAX_LINE_BYTES, TerminalReply, TerminalRequest};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Notify, mpsc};

use super::rpc::Outbox;

/// How long a finished terminal waits for its call's final update before it is released anyway.
const CARD_WAIT: Duration = Duration::from_secs(30);

/// How long the editor may take to report the exit once tern-shell went away (the terminal was
/// killed); then it is released, which kills it too.
const GONE_WAIT: Duration = Duration::from_secs(10);

/// Terminals whose call's final `tool_call_update` has been sent (or never will be): shared by
/// the renderer ([`super::updates::Updates`]) and the bridge.
#[derive(Clone, Default)]
pub struct Cards(Arc<(Mutex<HashSet<String>>, Notify)>);

impl Cards {
    /// The final update naming `terminal_id` is queued (or it will never be shown).
    pub fn done(&self, terminal_id: &str) {
        if let Ok(mut set) = self.0.0.lock() {
            set.insert(terminal_id.to_string());
        }
        self.0.1.notify_waiters();
    }

    /// Waits until [`Cards::done`] for `terminal_id`, at most `limit`; whether it came.
    async fn wait(&self, terminal_id: &str, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // Made before the check: a `done` between the two still wakes it.
            let notified = self.0.1.notified();
            if self.0.0.lock().is_ok_and(|mut set| set.remove(terminal_id)) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

/// One session's bridge: its socket and the task answering it (stopped on drop, with every
/// connection it serves).
pub struct EditorTerminal {
    socket: PathBuf,
    task: tokio::task::JoinHandle<()>,
    /// Removed (socket and all) when the session ends.
    _dir: tempfile::TempDir,
}

impl Drop for EditorTerminal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EditorTerminal {
    /// Listens on a fresh private socket; terminals are made in session `session_id` (set once
    /// the session has its id, before any tool can be called).
    pub fn start(
        out: Outbox,
        session_id: Arc<OnceLock<String>>,
        cards: Cards,
    ) -> std::io::Result<Self> {
        // tempfile makes the directory 0700.
        let dir = tempfile::Builder::new().prefix("tern-acp-").tempdir()?;
        let socket = dir.path().join("terminal.sock");
        let listener = UnixListener::bind(&socket)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let task = tokio::spawn(accept(listener, out, session_id, cards));
        Ok(Self {
            socket,
            task,
            _dir: dir,
        })
    }

    /// The socket the shell servers are given (`--editor-socket`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

async fn accept(
    listener: UnixListener,
    out: Outbox,
    session_id: Arc<OnceLock<String>>,
    cards: Cards,
) {
    let uid = rustix::process::getuid().as_raw();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((conn, _)) = accepted else { continue };
                if !conn.peer_cred().is_ok_and(|c| c.uid() == uid) {
                    tracing::warn!("editor-terminal: a connection from another user refused");
                    continue;
                }
                let (out, session_id, cards) = (out.clone(), session_id.clone(), cards.clone());
                connections.spawn(async move {
                    if let Err(e) = serve(conn, &out, &session_id, &cards).await {
                        tracing::warn!("editor-terminal: {e}");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The ACP error's message, for the model, with its `data.details` (or a string `data`) when
/// it has one: SDKs answer a handler's exception as "Internal error" with the reason there.
fn message(error: &Value) -> String {
    let mut text = error["message"]
        .as_str()
        .unwrap_or("(no message)")
        .to_string();
    let data = &error["data"];
    if let Some(details) = data["details"].as_str().or(data.as_str()) {
        text.push_str(": ");
        text.push_str(details);
    }
    text
}

/// One command: create, report, wait (killing on request), report the exit, release.
async fn serve(
    conn: UnixStream,
    out: &Outbox,
    session_id: &OnceLock<String>,
    cards: &Cards,
) -> std::io::Result<()> {
    let (read, mut write) = conn.into_split();
    let (tx, mut requests) = mpsc::channel::<Result<TerminalRequest, String>>(4);
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(read).take(MAX_LINE_BYTES as u64);
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return, // the sender drops: the peer is gone
                Ok(_) => {
                    let request = serde_json::from_slice(&line).map_err(|e| e.to_string());
                    if tx.send(request).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    let _reader = AbortOnDrop(reader);

    let Some(Ok(TerminalRequest::Run {
        command,
        args,
        cwd,
        output_byte_limit,
    })) = requests.recv().await
    else {
        return reply(
            &mut write,
            &TerminalReply::Error("expected a `run` request".into()),
        )
        .await;
    };
    let Some(session) = session_id.get() else {
        let not_yet = TerminalReply::Error("the session is not started yet".into());
        return reply(&mut write, &not_yet).await;
    };
    // The runner's own environment does not reach the command (it clears it), so none is sent.
    let create = json!({
        "sessionId": session,
        "command": command,
        "args": args,
        "env": [],
        "cwd": cwd,
        "outputByteLimit": output_byte_limit,
    });
    let terminal_id = match out.request("terminal/create", create).await {
        None => Err("the editor closed the connection".to_string()),
        Some(Err(e)) => Err(format!("terminal/create failed: {}", message(&e))),
        Some(Ok(r)) => r["terminalId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "terminal/create's answer has no `terminalId`".to_string()),
    };
    let terminal_id = match terminal_id {
        Ok(id) => id,
        Err(why) => return reply(&mut write, &TerminalReply::Error(why)).await,
    };
    let ids = json!({"sessionId": session, "terminalId": terminal_id});
    let mut peer = reply(
        &mut write,
        &TerminalReply::Created {
            terminal_id: terminal_id.clone(),
        },
    )
    .await
    .is_ok();

    let wait = out.request("terminal/wait_for_exit", ids.clone());
    tokio::pin!(wait);
    let mut killed = false;
    let exit = loop {
        tokio::select! {
            exit = &mut wait => break exit.map(|r| r.map_err(|e| format!("terminal/wait_for_exit failed: {}", message(&e)))),
            request = requests.recv(), if peer => match request {
                Some(Ok(TerminalRequest::Kill)) => kill(out, &ids, &mut killed),
                Some(Ok(TerminalRequest::Run { .. })) | Some(Err(_)) => {
                    tracing::warn!("editor-terminal: an unexpected message ignored");
                }
                None => {
                    peer = false;
                    kill(out, &ids, &mut killed);
                }
            },
            _ = tokio::time::sleep(GONE_WAIT), if !peer => break None,
        }
    };
    let answer = match exit {
        None => TerminalReply::Error("the editor did not report the command's exit".into()),
        Some(Err(why)) => TerminalReply::Error(why),
        Some(Ok(status)) => match out.request("terminal/output", ids.clone()).await {
            None => TerminalReply::Error("the editor closed the connection".into()),
            Some(Err(e)) => {
                TerminalReply::Error(format!("terminal/output failed: {}", message(&e)))
            }
            Some(Ok(output)) => TerminalReply::Exited {
                exit_code: status["exitCode"]
                    .as_u64()
                    .and_then(|c| u32::try_from(c).ok()),
                signal: status["signal"].as_str().map(str::to_string),
                output: output["output"].as_str().unwrap_or_default().to_string(),
                truncated: output["truncated"].as_bool().unwrap_or(false),
            },
        },
    };
    if peer {
        let _ = reply(&mut write, &answer).await;
    }
    drop(write);
    if !cards.wait(&terminal_id, CARD_WAIT).await {
        tracing::debug!("editor-terminal: {terminal_id} released without its final update");
    }
    if let Some(Err(e)) = out.request("terminal/release", ids).await {
        tracing::warn!("editor-terminal: terminal/release failed: {}", message(&e));
    }
    Ok(())
}

/// Asks the editor to kill the terminal's command, once; its answer is not waited for (the
/// exit comes through `terminal/wait_for_exit`).
fn kill(out: &Outbox, ids: &Value, killed: &mut bool) {
    if std::mem::replace(killed, true) {
        return;
    }
    let (out, ids) = (out.clone(), ids.clone());
    tokio::spawn(async move {
        if let Some(Err(e)) = out.request("terminal/kill", ids).await {
            tracing::warn!("editor-terminal: terminal/kill failed: {}", message(&e));
        }
    });
}

async fn reply(
    write: &mut tokio::net::unix::OwnedWriteHalf,
    reply: &TerminalReply,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_says_its_details() {
        let plain = json!({"code": 1, "message": "no terminals"});
        assert_eq!(message(&plain), "no terminals");
        let sdk = json!({"code": -32603, "message": "Internal error", "data": {"details": "off"}});
        assert_eq!(message(&sdk), "Internal error: off");
        assert_eq!(message(&json!({})), "(no message)");
    }

    #[tokio::test]
    async fn a_terminal_waits_for_its_card_or_the_limit() {
        let cards = Cards::default();
        let waiting = {
            let cards = cards.clone();
            tokio::spawn(async move { cards.wait("t1", Duration::from_secs(5)).await })
        };
        tokio::task::yield_now().await;
        cards.done("t1");
        assert!(waiting.await.unwrap());
        // Done before anyone waits: still seen.
        cards.done("t2");
        assert!(cards.wait("t2", Duration::from_millis(10)).await);
        assert!(!cards.wait("t3", Duration::from_millis(20)).await);
    }
}
