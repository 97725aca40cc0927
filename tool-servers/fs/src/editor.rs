//! `--editor-socket PATH`: file text through the editor that drives tern over ACP (issue 21,
//! item 4). Paths are still resolved, confined and deny-checked here, against the disk, as
//! always; only the text of what `read_file`, `write_file` and `edit_file` read and write is
//! asked of the editor (through the `tern acp` process listening on the socket), so the model
//! reads unsaved buffers and its edits appear in them. grep, glob and list_dir keep reading the
//! disk: the editor offers no search.
//!
//! The wire is [`tern_tool_common::editor_fs`]: one connection per request, one JSON line each
//! way. The calls block (the editor may take its time), so the server runs them on the blocking
//! pool.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tern_tool_common::editor_fs::{EditorReply, EditorRequest, MAX_LINE_BYTES};

/// How long one answer may take. The host's tool timeout (60 s by default) cancels the call
/// before; this only keeps a thread from waiting forever on an editor that never answers.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// Where the editor is reached.
#[derive(Debug, Clone)]
pub(crate) struct Editor {
    socket: PathBuf,
}

/// Why the editor gave no text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditorError {
    /// The socket could not be used (the `tern acp` process is gone, or the line broke).
    #[error("cannot reach the editor through `{socket}`: {error}")]
    Unreachable {
        socket: PathBuf,
        error: std::io::Error,
    },
    /// The editor (or `tern acp` for it) refused.
    #[error("the editor answered: {0}")]
    Refused(String),
    /// An answer that is not the bridge's.
    #[error("the editor bridge answered something unexpected: {0}")]
    Garbled(String),
}

impl Editor {
    pub(crate) fn new(socket: PathBuf) -> Self {
        Self { socket }
    }

    /// The file's text as the editor has it.
    pub(crate) fn read(&self, path: &Path) -> Result<String, EditorError> {
        let request = EditorRequest::Read {
            path: path.to_string_lossy().into_owned(),
        };
        match self.ask(&request)? {
            EditorReply::Content(text) => Ok(text),
            EditorReply::Error(why) => Err(EditorError::Refused(why)),
            EditorReply::Written => Err(EditorError::Garbled("`written` to a read".into())),
        }
    }

    /// Replaces the file's text through the editor.
    pub(crate) fn write(&self, path: &Path, content: &str) -> Result<(), EditorError> {
        let request = EditorRequest::Write {
            path: path.to_string_lossy().into_owned(),
            content: content.to_string(),
        };
        match self.ask(&request)? {
            EditorReply::Written => Ok(()),
            EditorReply::Error(why) => Err(EditorError::Refused(why)),
            EditorReply::Content(_) => Err(EditorError::Garbled("content to a write".into())),
        }
    }

    fn ask(&self, request: &EditorRequest) -> Result<EditorReply, EditorError> {
        let unreachable = |error| EditorError::Unreachable {
            socket: self.socket.clone(),
            error,
        };
        let mut stream = UnixStream::connect(&self.socket).map_err(unreachable)?;
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(unreachable)?;
        let mut line = serde_json::to_vec(request)
            .map_err(|e| EditorError::Garbled(format!("cannot encode the request: {e}")))?;
        line.push(b'\n');
        stream.write_all(&line).map_err(unreachable)?;
        let mut reply = Vec::new();
        BufReader::new(stream)
            .take(MAX_LINE_BYTES as u64)
            .read_until(b'\n', &mut reply)
            .map_err(unreachable)?;
        if reply.is_empty() {
            return Err(EditorError::Garbled(
                "no answer (the connection closed)".into(),
            ));
        }
        serde_json::from_slice(&reply).map_err(|e| EditorError::Garbled(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// A bridge that answers each connection with `reply` and hands back what it was asked.
    fn bridge(reply: &'static str) -> (tempfile::TempDir, Editor, std::thread::JoinHandle<String>) {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("fs.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let thread = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut asked = String::new();
            BufReader::new(&stream).read_line(&mut asked).unwrap();
            (&stream).write_all(reply.as_bytes()).unwrap();
            asked
        });
        (dir, Editor::new(socket), thread)
    }

    #[test]
    fn reads_and_writes_go_over_the_socket() {
        let (_dir, editor, asked) = bridge("{\"content\":\"buffer\\n\"}\n");
        assert_eq!(editor.read(Path::new("/w/a.txt")).unwrap(), "buffer\n");
        assert_eq!(
            asked.join().unwrap(),
            "{\"op\":\"read\",\"path\":\"/w/a.txt\"}\n"
        );
        let (_dir, editor, _) = bridge("\"written\"\n");
        editor.write(Path::new("/w/a.txt"), "new").unwrap();
    }

    #[test]
    fn refusals_and_a_missing_bridge_are_errors_that_say_why() {
        let (_dir, editor, _) = bridge("{\"error\":\"no such buffer\"}\n");
        let e = editor.read(Path::new("/w/a")).unwrap_err().to_string();
        assert_eq!(e, "the editor answered: no such buffer");
        let (_dir, editor, _) = bridge("not json\n");
        assert!(matches!(
            editor.write(Path::new("/w/a"), "x"),
            Err(EditorError::Garbled(_))
        ));
        let gone = Editor::new(PathBuf::from("/nonexistent/tern/fs.sock"));
        let e = gone.read(Path::new("/w/a")).unwrap_err().to_string();
        assert!(e.starts_with("cannot reach the editor through"), "{e}");
    }
}
