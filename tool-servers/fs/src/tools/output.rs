//! What each tool returns as `structuredContent`, declared as its `outputSchema`.
//!
//! MCP's rule for a result with both forms is that the text mirrors the structured
//! result (2025-06-18 and later, "Structured Content"). Clients disagree on which one
//! they show the model: Claude Code and VS Code send only `JSON.stringify(structuredContent)`
//! when it is present, tern and most others send the text. So each shape here carries
//! everything the text says (the numbered lines, the diff, every note), and the text
//! states every string in it: either client's model sees the whole result, and a host
//! that adds structured data missing from the text (tern does) adds nothing for these
//! tools. Echoes of the call's own arguments (the pattern searched for) are left out
//! unless the text repeats them. Failures are text only: the schema describes success,
//! and a client validating `structuredContent` against it must not reject a refusal.

use schemars::JsonSchema;
use serde::Serialize;

/// `read_file`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct ReadOutput {
    /// Exactly the text content: the lines numbered like `cat -n`, then any note
    /// (`[truncated: …]`, `[empty file]`, …).
    pub(crate) content: String,
    /// The first line shown (1-based).
    pub(crate) start_line: u64,
    /// How many lines were shown.
    pub(crate) lines_shown: u64,
    /// Size of the file in bytes.
    pub(crate) total_bytes: u64,
    /// The per-call byte limit cut the read.
    pub(crate) truncated: bool,
    /// The `offset` to continue from, when more lines follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_offset: Option<u64>,
    /// An image file's media type (`image/png`, …): the image itself is the result's image
    /// content block, and `content` is a one-line note naming this type and the size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mime_type: Option<String>,
}

/// `write_file`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct WriteOutput {
    /// The file written (absolute).
    pub(crate) path: String,
    /// Bytes written.
    pub(crate) bytes_written: usize,
    /// The file did not exist before.
    pub(crate) created: bool,
    /// The unified diff from the old content, when a small text file was replaced
    /// (the same text as the `text/x-diff` resource block).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) diff: Option<String>,
}

/// `edit_file`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct EditOutput {
    /// The file edited (absolute).
    pub(crate) path: String,
    /// How many times `old_string` was replaced.
    pub(crate) replacements: usize,
    /// Lines added by the change.
    pub(crate) lines_added: usize,
    /// Lines removed by the change.
    pub(crate) lines_removed: usize,
    /// The unified diff of the change (the same text as the `text/x-diff` resource block).
    pub(crate) diff: String,
}

/// `list_dir`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct ListOutput {
    /// The directory listed (absolute).
    pub(crate) path: String,
    /// Entries in the directory (before the cap).
    pub(crate) total: usize,
    /// The entries shown, sorted by name.
    pub(crate) entries: Vec<ListEntry>,
    /// More entries exist than were shown.
    pub(crate) truncated: bool,
    /// The text's note when the listing was capped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

/// One entry of a directory.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct ListEntry {
    /// Its name.
    pub(crate) name: String,
    /// `file`, `dir`, `symlink`, `fifo`, `socket`, `device` or `unknown`.
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// Its size in bytes (of the link itself for a symlink).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<i64>,
    /// A symlink's target, as written in the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) target: Option<String>,
}

/// `glob`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct GlobOutput {
    /// Absolute paths that match, sorted; directories end with `/`.
    pub(crate) matches: Vec<String>,
    /// The result cap was reached: more paths may match.
    pub(crate) truncated: bool,
    /// The text's notes: why nothing matched, the cap.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

/// `grep`'s result: one of `files`, `lines` or `counts`, as `output_mode` asked.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub(crate) struct GrepOutput {
    /// `files_with_matches`: paths of the files with a match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) files: Option<Vec<String>>,
    /// `content`: matching lines as `path:line:text`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lines: Option<Vec<String>>,
    /// `count`: `path:count` per file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) counts: Option<Vec<String>>,
    /// Files with at least one match.
    pub(crate) files_matched: usize,
    /// The result cap was reached.
    pub(crate) truncated: bool,
    /// The text's notes: why nothing matched, the cap, unreadable files.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}
