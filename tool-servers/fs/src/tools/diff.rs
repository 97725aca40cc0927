//! Unified diffs of what `edit_file` and `write_file` changed.
//!
//! The diff goes back as an embedded `text/x-diff` resource ([`super::diff_block`]),
//! which the host renders and gives to the model; the text block stays a one-line
//! summary, so nothing reaches the model twice.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

/// A diff of two large, very different texts is quadratic in the worst case;
/// past this, `similar` falls back to a coarser (still correct) diff.
const DIFF_TIMEOUT: Duration = Duration::from_millis(250);

/// Lines of context around each change, as `diff -u` and `git diff` show.
const CONTEXT_LINES: usize = 3;

/// A unified diff and its size in lines.
pub(crate) struct Diff {
    pub(crate) text: String,
    pub(crate) added: usize,
    pub(crate) removed: usize,
}

impl Diff {
    /// `+3 -1 lines`, for the summary line.
    pub(crate) fn stat(&self) -> String {
        format!("+{} -{} lines", self.added, self.removed)
    }
}

/// The unified diff from `before` to `after`, both headers naming `path`.
pub(crate) fn unified(path: &str, before: &str, after: &str) -> Diff {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after);
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
    }
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(path, path)
        .to_string();
    Diff {
        text,
        added,
        removed,
    }
}
