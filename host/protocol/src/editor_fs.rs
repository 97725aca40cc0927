//! The editor-fs bridge's wire (issue 21, item 4): what `tern-fs --editor-socket PATH` asks the
//! `tern acp` process that started its session, and what it answers.
//!
//! When an ACP client advertises `fs.readTextFile` and `fs.writeTextFile`, tern-fs still resolves,
//! confines and deny-checks every path itself, against the disk, exactly as it does without an
//! editor; only the *text* of a file it reads or writes goes through the editor, so the model
//! reads unsaved buffers and its edits land in them. One connection carries one request line and
//! one reply line, both JSON. The socket lives in a private directory of the `tern acp` process
//! (mode 0700, socket 0600), and that process answers only peers of its own user.

use serde::{Deserialize, Serialize};

/// A request from the file server. `path` is absolute, resolved inside the server's roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EditorRequest {
    /// The text of the file as the editor has it (an open buffer, unsaved changes included).
    Read { path: String },
    /// Replace the file's whole text through the editor.
    Write { path: String, content: String },
}

/// The answer to one [`EditorRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditorReply {
    /// A read's text.
    Content(String),
    /// A write was done.
    Written,
    /// The editor refused, or could not be asked: why, for the model.
    Error(String),
}

/// Bytes one request or reply line may have: a file the fs tools would handle (edit_file's
/// 64 MiB) as JSON, escapes and all, with room to spare.
pub const MAX_LINE_BYTES: usize = 160 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_is_plain_json() {
        let read = EditorRequest::Read {
            path: "/w/a.txt".into(),
        };
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"op":"read","path":"/w/a.txt"}"#
        );
        let write: EditorRequest =
            serde_json::from_str(r#"{"op":"write","path":"/w/a","content":"x"}"#).unwrap();
        assert_eq!(
            write,
            EditorRequest::Write {
                path: "/w/a".into(),
                content: "x".into()
            }
        );
        assert_eq!(
            serde_json::to_string(&EditorReply::Written).unwrap(),
            r#""written""#
        );
        assert_eq!(
            serde_json::to_string(&EditorReply::Content("t".into())).unwrap(),
            r#"{"content":"t"}"#
        );
    }
}
