//! The tools, one file per job. Each returns a [`CallToolResult`]: refusals and
//! failures are results with `isError: true` that name the path and the reason
//! (the model can act on them), never a JSON-RPC error or a panic.

pub(crate) mod diff;
pub(crate) mod edit;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod list;
pub(crate) mod output;
pub(crate) mod read;
pub(crate) mod write;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use ignore::gitignore::Gitignore;

use rmcp::model::{CallToolResult, ContentBlock, RequestMetaObject, ResourceContents};
use serde::Serialize;

use crate::deny::{DENY_META_KEY, Deny, DenyCache};
use crate::resolve::{ResolveError, Resolved, Roots};

/// Everything a tool call works with, built once at startup.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) roots: Roots,
    pub(crate) limits: Limits,
    /// The user's global gitignore, read on the first walk (walks apply it like
    /// ripgrep does; a session that never searches never reads it).
    pub(crate) gitignore: OnceLock<Arc<Gitignore>>,
    /// Worker threads per walk.
    pub(crate) threads: usize,
    /// The host's deny globs (`--deny-read`), merged per call with `_meta`'s.
    pub(crate) deny: DenyCache,
    /// `--editor-socket`: file text read and written through the editor (see [`crate::editor`]).
    pub(crate) editor: Option<crate::editor::Editor>,
}

impl Context {
    /// The global gitignore, read once.
    pub(crate) fn gitignore(&self) -> Arc<Gitignore> {
        Arc::clone(
            self.gitignore
                .get_or_init(|| Arc::new(crate::walk::global_gitignore())),
        )
    }

    /// The deny rules of one call, from its request `_meta`; a malformed list
    /// fails the call (`Err` is the result to send) rather than run unguarded.
    pub(crate) fn deny(
        &self,
        meta: &RequestMetaObject,
        action: &str,
        path: &str,
    ) -> Result<Deny, CallToolResult> {
        self.deny
            .for_call(&self.roots, meta.get(DENY_META_KEY))
            .map_err(|e| failure(action, path, e))
    }
}

/// The host's cap on the characters of a result it shows the model (`_meta["tern/limits"]`), so
/// a tool can page to it instead of being cut in the middle; a malformed value fails the call
/// (`Err` is the result to send) rather than be guessed at.
pub(crate) fn host_max_chars(
    meta: &RequestMetaObject,
    action: &str,
    path: &str,
) -> Result<Option<u64>, CallToolResult> {
    use tern_tool_common::meta::{LIMITS, Limits};
    match meta.get(LIMITS) {
        None => Ok(None),
        Some(value) => serde_json::from_value::<Limits>(value.clone())
            .map(|l| l.max_output_chars)
            .map_err(|e| {
                failure(
                    action,
                    path,
                    format!(
                        "_meta[\"{LIMITS}\"] is malformed ({e}); expected \
                         {{\"max_output_chars\": N}}"
                    ),
                )
            }),
    }
}

/// Limits from the command line, passed to every tool by value.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of file content one `read_file` call returns at most.
    pub max_read_bytes: usize,
    /// Entries `glob` and `list_dir` return at most.
    pub max_entries: usize,
    /// Matches (or files, or counts) `grep` returns at most.
    pub max_matches: usize,
    /// Bytes of an image file `read_file` returns (as an image block) at most.
    pub max_image_bytes: usize,
}

/// A successful result: `text` and the same facts as `structuredContent`, the
/// tool's declared output (see [`output`] for why both carry everything).
pub(crate) fn success(text: String, structured: &impl Serialize) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    // Serializing these plain structs cannot fail; a result without structured
    // content is still a complete (text) result.
    result.structured_content = serde_json::to_value(structured).ok();
    result
}

/// A unified diff as an embedded resource, the form every tern host renders as
/// a diff and hands to the model (see the crate docs): `uri` names the file,
/// `mimeType` is `text/x-diff`.
pub(crate) fn diff_block(path: &Path, diff: String) -> ContentBlock {
    let uri = url::Url::from_file_path(path)
        .map(String::from)
        // Only a relative path fails here, and resolved paths are absolute.
        .unwrap_or_else(|()| format!("file://{}", path.display()));
    ContentBlock::resource(ResourceContents::TextResourceContents {
        uri,
        mime_type: Some(DIFF_MIME.into()),
        text: diff,
        meta: None,
    })
}

/// The MIME type of a unified diff.
pub(crate) const DIFF_MIME: &str = "text/x-diff";

/// A refusal or failure: "cannot {action} `{path}`: {reason}", as text only (the
/// declared output schemas describe success; see [`output`]).
pub(crate) fn failure(action: &str, path: &str, reason: impl std::fmt::Display) -> CallToolResult {
    // A path past any real one (the resolver refuses those) is shown by its start: echoing a
    // 10 MB argument back would be a 10 MB reply for the model to read.
    let shown = match path.char_indices().nth(MAX_PATH_SHOWN) {
        Some((cut, _)) => format!("{}…", &path[..cut]),
        None => path.to_string(),
    };
    CallToolResult::error(vec![ContentBlock::text(format!(
        "cannot {action} `{shown}`: {reason}"
    ))])
}

/// Characters of a path a failure repeats: twice the longest path the resolver accepts.
const MAX_PATH_SHOWN: usize = 8192;

/// Resolves `path` or returns the failure result to send back.
pub(crate) fn resolve<'r>(
    roots: &'r Roots,
    action: &str,
    path: &str,
    intent: crate::resolve::Intent,
) -> Result<Resolved<'r>, CallToolResult> {
    roots
        .resolve(Path::new(path), intent)
        .map_err(|e: ResolveError| failure(action, path, e))
}

/// Display form of a path for the model (lossy only for names that are not UTF-8,
/// which the resolver never accepts as input but a directory may contain).
pub(crate) fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
