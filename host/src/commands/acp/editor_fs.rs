//! The editor's files (issue 21, item 4): when the ACP client advertises `fs.readTextFile`
//! and `fs.writeTextFile`, the session's built-in fs servers are started with
//! `--editor-socket PATH`, and this bridge answers them: each request on the socket becomes an
//! `fs/read_text_file` or `fs/write_text_file` request to the editor, and its answer goes back.
//!
//! The tools stay where they were: tern-fs processes behind the gateway (schema check, rules,
//! ask, audit), with the same names and shapes, confining and deny-checking every path on
//! disk before it asks for any text. The bridge only carries text, and only for the session it
//! was made for.
//!
//! The socket is `fs.sock` in a fresh private directory (0700, the socket 0600) that goes away
//! with the session; a peer of another user is refused even if it got that far.

use std::{
    collections::HashMap,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use serde_json::{Value, json};
use tern_protocol::editor_fs::{EditorReply, EditorRequest, MAX_LINE_BYTES};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::rpc::Outbox;

/// What the client said it offers in `initialize` (`clientCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCaps {
    /// `fs.readTextFile` and `fs.writeTextFile` both: the bridge is used.
    pub fs: bool,
    /// `terminal`: the shell servers show their commands in the editor's terminals (see
    /// [`super::editor_terminal`]).
    pub terminal: bool,
}

impl ClientCaps {
    /// From `initialize`'s params; anything missing or malformed is "not offered".
    pub fn from_initialize(params: &Value) -> Self {
        let caps = &params["clientCapabilities"];
        let yes = |v: &Value| v.as_bool() == Some(true);
        Self {
            fs: yes(&caps["fs"]["readTextFile"]) && yes(&caps["fs"]["writeTextFile"]),
            terminal: yes(&caps["terminal"]),
        }
    }
}

/// The last text written through the editor to each path, for the call's ACP diff (the disk
/// may not have it: the editor decides when a buffer is saved).
#[derive(Debug, Clone, Default)]
pub struct Written(Arc<Mutex<HashMap<PathBuf, String>>>);

impl Written {
    /// The text last written to `path`, forgotten once taken.
    pub fn take(&self, path: &Path) -> Option<String> {
        self.0.lock().ok()?.remove(path)
    }

    fn put(&self, path: PathBuf, text: String) {
        if let Ok(mut w) = self.0.lock() {
            w.insert(path, text);
        }
    }
}

/// One session's bridge: its socket and the task answering it (stopped on drop).
pub struct EditorFs {
    socket: PathBuf,
    written: Written,
    task: tokio::task::JoinHandle<()>,
    /// Removed (socket and all) when the session ends.
    _dir: tempfile::TempDir,
}

impl Drop for EditorFs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EditorFs {
    /// Listens on a fresh private socket; requests are sent to the editor as session
    /// `session_id` (set once the session has its id, before any tool can be called).
    pub fn start(out: Outbox, session_id: Arc<OnceLock<String>>) -> std::io::Result<Self> {
        // tempfile makes the directory 0700.
        let dir = tempfile::Builder::new().prefix("tern-acp-").tempdir()?;
        let socket = dir.path().join("fs.sock");
        let listener = UnixListener::bind(&socket)?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let written = Written::default();
        let task = tokio::spawn(accept(listener, out, session_id, written.clone()));
        Ok(Self {
            socket,
            written,
            task,
            _dir: dir,
        })
    }

    /// The socket the fs servers are given (`--editor-socket`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What was written through the editor, for the diffs shown.
    pub fn written(&self) -> Written {
        self.written.clone()
    }
}

async fn accept(
    listener: UnixListener,
    out: Outbox,
    session_id: Arc<OnceLock<String>>,
    written: Written,
) {
    let uid = rustix::process::getuid().as_raw();
    loop {
        let Ok((conn, _)) = listener.accept().await else {
            continue;
        };
        if !conn.peer_cred().is_ok_and(|c| c.uid() == uid) {
            tracing::warn!("editor-fs: a connection from another user refused");
            continue;
        }
        let (out, session_id, written) = (out.clone(), session_id.clone(), written.clone());
        tokio::spawn(async move {
            if let Err(e) = answer(conn, &out, &session_id, &written).await {
                tracing::warn!("editor-fs: {e}");
            }
        });
    }
}

/// Reads one request, asks the editor, writes the reply.
async fn answer(
    conn: UnixStream,
    out: &Outbox,
    session_id: &OnceLock<String>,
    written: &Written,
) -> std::io::Result<()> {
    let (read, mut write) = conn.into_split();
    let mut line = Vec::new();
    BufReader::new(read)
        .take(MAX_LINE_BYTES as u64)
        .read_until(b'\n', &mut line)
        .await?;
    let reply = match serde_json::from_slice::<EditorRequest>(&line) {
        Err(e) => EditorReply::Error(format!("tern acp could not read the request: {e}")),
        Ok(request) => match session_id.get() {
            None => EditorReply::Error("the session is not started yet".into()),
            Some(id) => ask(out, id, request, written).await,
        },
    };
    let mut bytes = serde_json::to_vec(&reply).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await
}

/// One request to the editor, and its answer for the fs server.
async fn ask(
    out: &Outbox,
    session_id: &str,
    request: EditorRequest,
    written: &Written,
) -> EditorReply {
    let (method, params) = match &request {
        EditorRequest::Read { path } => (
            "fs/read_text_file",
            json!({"sessionId": session_id, "path": path}),
        ),
        EditorRequest::Write { path, content } => (
            "fs/write_text_file",
            json!({"sessionId": session_id, "path": path, "content": content}),
        ),
    };
    match out.request(method, params).await {
        None => EditorReply::Error("the editor closed the connection".into()),
        Some(Err(e)) => EditorReply::Error(format!(
            "{method} failed: {}",
            e["message"].as_str().unwrap_or("(no message)")
        )),
        Some(Ok(result)) => match request {
            EditorRequest::Read { .. } => match result["content"].as_str() {
                Some(text) => EditorReply::Content(text.to_string()),
                None => EditorReply::Error(format!("{method}'s answer has no `content` string")),
            },
            EditorRequest::Write { path, content } => {
                written.put(PathBuf::from(path), content);
                EditorReply::Written
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_fs_capabilities_are_needed() {
        let caps = |v: Value| ClientCaps::from_initialize(&json!({ "clientCapabilities": v }));
        assert_eq!(
            caps(json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true})),
            ClientCaps {
                fs: true,
                terminal: true
            }
        );
        assert!(!caps(json!({"fs": {"readTextFile": true}})).fs);
        assert!(!caps(json!({"fs": {"readTextFile": "yes", "writeTextFile": true}})).fs);
        assert_eq!(
            ClientCaps::from_initialize(&Value::Null),
            ClientCaps::default()
        );
    }
}
