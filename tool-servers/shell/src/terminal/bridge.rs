//! The connection to the `tern acp` bridge: one per command, JSON lines both ways
//! ([`tern_tool_common::editor_terminal`]).

use std::path::{Path, PathBuf};

use tern_tool_common::editor_terminal::{MAX_LINE_BYTES, TerminalReply, TerminalRequest};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::TerminalError;

/// What the reader reports when the bridge hangs up.
const CLOSED: &str = "the connection closed";

/// An open connection: requests go out on the write half; replies come in through a task that
/// reads whole lines, so waiting for one is cancel-safe inside `select!`.
pub(super) struct Connection {
    socket: PathBuf,
    writer: OwnedWriteHalf,
    replies: mpsc::Receiver<Result<TerminalReply, String>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    pub(super) async fn open(socket: &Path) -> Result<Self, TerminalError> {
        let stream =
            UnixStream::connect(socket)
                .await
                .map_err(|error| TerminalError::Unreachable {
                    socket: socket.to_path_buf(),
                    error,
                })?;
        let (read, writer) = stream.into_split();
        let (tx, replies) = mpsc::channel(4);
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read).take(MAX_LINE_BYTES as u64);
            loop {
                let mut line = Vec::new();
                let reply = match lines.read_until(b'\n', &mut line).await {
                    Ok(0) => Err(CLOSED.to_string()),
                    Ok(_) => serde_json::from_slice(&line).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                let done = reply.is_err();
                if tx.send(reply).await.is_err() || done {
                    return;
                }
            }
        });
        Ok(Self {
            socket: socket.to_path_buf(),
            writer,
            replies,
            reader,
        })
    }

    pub(super) async fn send(&mut self, request: &TerminalRequest) -> Result<(), TerminalError> {
        let mut line = serde_json::to_vec(request)
            .map_err(|e| TerminalError::Garbled(format!("cannot encode the request: {e}")))?;
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .await
            .map_err(|error| TerminalError::Unreachable {
                socket: self.socket.clone(),
                error,
            })
    }

    /// The next reply; an error when the connection broke or the line is not a reply.
    pub(super) async fn next(&mut self) -> Result<TerminalReply, TerminalError> {
        match self.replies.recv().await {
            Some(Ok(reply)) => Ok(reply),
            Some(Err(why)) if why == CLOSED => Err(TerminalError::Failed(format!(
                "`tern acp` ({}) closed the connection before the command's end was reported \
                 (the session ended?); the command may run on in the editor's terminal until its \
                 timeout",
                self.socket.display()
            ))),
            Some(Err(why)) => Err(TerminalError::Garbled(why)),
            None => Err(TerminalError::Garbled("no reply".into())),
        }
    }
}
