//! `glob`: paths matching a pattern under a directory, `.gitignore` respected.

use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use ignore::WalkBuilder;
use rmcp::model::CallToolResult;
use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Limits, failure, resolve, shown, success};
use crate::resolve::{Intent, Roots};

/// Parameters of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct GlobParams {
    /// Glob pattern matched against paths relative to `path`, e.g. `**/*.rs`,
    /// `src/**/mod.rs` or `*.toml`. `*` stays within one directory, `**` crosses
    /// directories, `{a,b}` and `[ab]` work. Files ignored by `.gitignore` are skipped.
    pub pattern: String,
    /// The directory to search: relative to the first root, or an absolute path inside
    /// a root (default: the first root).
    #[serde(default)]
    pub path: Option<String>,
}

/// A walker over `base` that respects `.gitignore`/`.ignore` files (even outside a
/// git repository), shows hidden files but never enters `.git`, and never
/// follows a symlink: every path it yields is lexically below `base`, which the
/// resolver has proven to be inside a root.
pub(crate) fn walker(base: &Path) -> WalkBuilder {
    let mut b = WalkBuilder::new(base);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
}

/// Resolves the directory a search runs in.
pub(crate) fn search_base(
    roots: &Roots,
    action: &str,
    path: Option<&str>,
) -> Result<(PathBuf, bool), CallToolResult> {
    let asked = path.unwrap_or(".");
    let resolved = resolve(roots, action, asked, Intent::Open)?;
    let is_dir = resolved
        .stat()
        .is_some_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory);
    Ok((resolved.path().to_path_buf(), is_dir))
}

pub(crate) fn glob(
    roots: &Roots,
    limits: Limits,
    p: GlobParams,
    cancel: &CancellationToken,
) -> CallToolResult {
    const ACTION: &str = "glob in";
    let asked = p.path.as_deref().unwrap_or(".");
    let (base, is_dir) = match search_base(roots, ACTION, p.path.as_deref()) {
        Ok(b) => b,
        Err(result) => return result,
    };
    if !is_dir {
        return failure(ACTION, asked, "it is not a directory");
    }
    let matcher = match GlobBuilder::new(&p.pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => return failure(ACTION, asked, format!("invalid glob pattern: {e}")),
    };
    let mut found: Vec<String> = Vec::new();
    let mut truncated = false;
    for entry in walker(&base).build() {
        if cancel.is_cancelled() {
            return failure(ACTION, asked, "cancelled");
        }
        let Ok(entry) = entry else { continue };
        let Ok(rel) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if rel.as_os_str().is_empty() || !matcher.is_match(rel) {
            continue;
        }
        if found.len() == limits.max_entries {
            truncated = true;
            break;
        }
        let dir = entry.file_type().is_some_and(|t| t.is_dir());
        let mut s = shown(entry.path());
        if dir {
            s.push('/');
        }
        found.push(s);
    }
    let base_shown = shown(&base);
    let mut text = if found.is_empty() {
        format!("no paths under `{base_shown}` match `{}`\n", p.pattern)
    } else {
        found.join("\n") + "\n"
    };
    if truncated {
        text.push_str(&format!(
            "[capped at {} results; narrow the pattern or the path]\n",
            limits.max_entries
        ));
    }
    success(
        text,
        json!({
            "path": base_shown,
            "pattern": p.pattern,
            "matches": found,
            "truncated": truncated,
        }),
    )
}
