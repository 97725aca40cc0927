//! `glob`: paths matching a pattern under a directory, `.gitignore` respected,
//! walked by [`crate::walk`] (never following a link).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use ignore::overrides::Override;
use rmcp::model::CallToolResult;
use rustix::fs::{self as rfs, AtFlags, FileType};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::output::GlobOutput;
use super::{Context, failure, resolve, shown, success};
use crate::deny::Deny;
use crate::resolve::{Intent, Roots};
use crate::walk::{Entry, Flow, Rules, Visitor, walk};

/// Parameters of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
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

/// One worker's matches: `(path, is_dir)`.
struct Worker<'a> {
    roots: &'a Roots,
    deny: &'a Deny,
    base: &'a Path,
    matcher: GlobMatcher,
    cap: usize,
    taken: &'a AtomicUsize,
    truncated: bool,
    found: Vec<(PathBuf, bool)>,
}

impl Visitor for Worker<'_> {
    fn visit(&mut self, entry: &Entry<'_>) -> Flow {
        let Ok(rel) = entry.path.strip_prefix(self.base) else {
            return Flow::Continue;
        };
        if !self.matcher.is_match(rel) {
            return Flow::Continue;
        }
        // Denied paths never reach a visitor; a hard link or symlink to a denied
        // file needs the entry's metadata, fetched only when rules exist.
        if !self.deny.is_empty()
            && matches!(entry.kind, FileType::RegularFile | FileType::Symlink)
            && rfs::statat(entry.dir, entry.name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| self.deny.hides_entry(self.roots, entry.path, &st))
        {
            return Flow::Continue;
        }
        if self.taken.fetch_add(1, Ordering::Relaxed) >= self.cap {
            self.truncated = true;
            return Flow::Stop;
        }
        let is_dir = entry.kind == FileType::Directory;
        self.found.push((entry.path.to_path_buf(), is_dir));
        Flow::Continue
    }
}

pub(crate) fn glob(
    ctx: &Context,
    deny: &Deny,
    p: GlobParams,
    cancel: &CancellationToken,
) -> CallToolResult {
    const ACTION: &str = "glob in";
    let asked = p.path.as_deref().unwrap_or(".");
    let (base, is_dir) = match search_base(&ctx.roots, ACTION, p.path.as_deref()) {
        Ok(b) => b,
        Err(result) => return result,
    };
    if !is_dir {
        return failure(ACTION, asked, "it is not a directory");
    }
    if let Some(why) = deny.refusal(&ctx.roots, asked, &base, None) {
        return failure(ACTION, asked, why);
    }
    let matcher = match GlobBuilder::new(&p.pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => return failure(ACTION, asked, format!("invalid glob pattern: {e}")),
    };
    let taken = AtomicUsize::new(0);
    let workers = (0..ctx.threads)
        .map(|_| Worker {
            roots: &ctx.roots,
            deny,
            base: &base,
            matcher: matcher.clone(),
            cap: ctx.limits.max_entries,
            taken: &taken,
            truncated: false,
            found: Vec::new(),
        })
        .collect();
    let rules = Rules::new(ctx.gitignore(), Override::empty(), deny);
    let (workers, outcome) = match walk(&ctx.roots, &base, &rules, cancel, workers) {
        Ok(w) => w,
        Err(e) => return failure(ACTION, asked, e),
    };
    if outcome.cancelled {
        return failure(ACTION, asked, "cancelled");
    }
    let truncated = workers.iter().any(|w| w.truncated);
    let mut paths: Vec<(PathBuf, bool)> = workers.into_iter().flat_map(|w| w.found).collect();
    // Workers finish in any order; results are reported sorted by path.
    paths.sort_unstable();
    let found: Vec<String> = paths
        .into_iter()
        .map(|(path, is_dir)| {
            let mut s = shown(&path);
            if is_dir {
                s.push('/');
            }
            s
        })
        .collect();
    let mut notes = Vec::new();
    if found.is_empty() {
        notes.push(format!(
            "no paths under `{}` match `{}`",
            shown(&base),
            p.pattern
        ));
    }
    if truncated {
        notes.push(format!(
            "[capped at {} results; narrow the pattern or the path]",
            ctx.limits.max_entries
        ));
    }
    let mut text = String::new();
    for line in found.iter().chain(&notes) {
        text.push_str(line);
        text.push('\n');
    }
    let structured = GlobOutput {
        matches: found,
        truncated,
        notes,
    };
    success(text, &structured)
}
