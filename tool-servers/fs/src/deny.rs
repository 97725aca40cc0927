//! Paths the host forbids (F4): `--deny-read GLOB` at startup and the request
//! `_meta` key `"tern/deny_paths"` per call.
//!
//! A host rule such as "never read `**/.env`" written against the tool's `path`
//! argument is walked around three ways: by a search over the whole root (grep
//! returns the `.env` lines), by a symlink with another name, and by a hard link
//! (another name for the very same inode). So the server enforces the list on
//! what it actually opens:
//!
//! - a glob is matched against the *real* path of every object a tool opens or
//!   lists (after following an in-root symlink) and against the path the caller
//!   named, and a path is denied when it or any directory above it matches
//!   (`**/secrets` hides everything below `secrets/`);
//! - a regular file with more than one link is compared by (device, inode) with
//!   the denied files that exist under the roots at the time of the call. Finding
//!   those takes a walk of the roots below each glob's literal prefix, so it is
//!   done only when such a file is met, at most once per call; a file with one
//!   link (nearly all of them) costs nothing.
//!
//! read_file, write_file and edit_file refuse a denied path with "denied by the
//! host's rule"; grep, glob and list_dir skip denied entries without a word, so
//! not even their names reach the model.
//!
//! Globs are `globset` globs with `/`-aware `*` and `**`; a relative glob is
//! anchored at every root (`**/.env` matches `ROOT/.env` and `ROOT/a/b/.env`),
//! an absolute one is taken as is.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustix::fs::{FileType, Stat};
use serde_json::Value;

use crate::resolve::{Intent, Roots};

/// Request `_meta` key carrying a call's deny globs: `["glob", ...]`.
pub const DENY_META_KEY: &str = tern_tool_common::meta::DENY_PATHS;

/// Why a deny list cannot be used. The call fails rather than run unprotected.
#[derive(Debug, thiserror::Error)]
pub enum DenyError {
    #[error("invalid deny glob `{glob}`: {source}")]
    Glob {
        glob: String,
        source: globset::Error,
    },
    #[error("`_meta.{DENY_META_KEY}` must be an array of glob strings, not {0}")]
    Shape(String),
}

/// A compiled deny list (startup globs plus one call's).
#[derive(Debug)]
pub(crate) struct DenyRules {
    set: GlobSet,
    /// The glob as the host wrote it, per pattern index of `set`.
    sources: Vec<String>,
    /// Where denied files can be: the literal directory prefix of each pattern.
    pub(crate) scan_from: Vec<PathBuf>,
}

impl DenyRules {
    /// Compiles `globs` for `roots`.
    pub(crate) fn compile(roots: &Roots, globs: &[String]) -> Result<Self, DenyError> {
        let mut builder = GlobSetBuilder::new();
        let mut sources = Vec::new();
        let mut scan_from = Vec::new();
        for glob in globs {
            let mut add = |pattern: String, prefix: PathBuf| {
                let compiled = GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .build()
                    .map_err(|source| DenyError::Glob {
                        glob: glob.clone(),
                        source,
                    })?;
                builder.add(compiled);
                sources.push(glob.clone());
                scan_from.push(prefix);
                Ok::<(), DenyError>(())
            };
            if Path::new(glob).is_absolute() {
                add(glob.clone(), literal_prefix(Path::new("/"), glob))?;
            } else {
                for base in roots.bases() {
                    let anchored = format!(
                        "{}/{}",
                        globset::escape(&base.to_string_lossy()).trim_end_matches('/'),
                        glob.trim_start_matches("./")
                    );
                    add(anchored, literal_prefix(base, glob))?;
                }
            }
        }
        let set = builder.build().map_err(|source| DenyError::Glob {
            glob: globs.join(", "),
            source,
        })?;
        Ok(Self {
            set,
            sources,
            scan_from,
        })
    }

    fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

/// The leading components of `glob` that hold no glob syntax, below `base`.
fn literal_prefix(base: &Path, glob: &str) -> PathBuf {
    let mut prefix = base.to_path_buf();
    for part in glob.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part.contains(['*', '?', '[', ']', '{', '}', '\\']) || part == ".." {
            break;
        }
        prefix.push(part);
    }
    prefix
}

/// The startup list, and the last per-call list compiled (hosts send the same
/// list with every call, so compiling once per distinct list is enough).
#[derive(Debug)]
pub(crate) struct DenyCache {
    startup: Vec<String>,
    startup_rules: Arc<DenyRules>,
    last: Mutex<Option<(Vec<String>, Arc<DenyRules>)>>,
}

impl DenyCache {
    pub(crate) fn new(roots: &Roots, startup: Vec<String>) -> Result<Self, DenyError> {
        let startup_rules = Arc::new(DenyRules::compile(roots, &startup)?);
        Ok(Self {
            startup,
            startup_rules,
            last: Mutex::new(None),
        })
    }

    /// The deny rules of one call: the startup globs plus those in its `_meta`.
    pub(crate) fn for_call(&self, roots: &Roots, meta: Option<&Value>) -> Result<Deny, DenyError> {
        let extra = match meta {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| DenyError::Shape(v.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => return Err(DenyError::Shape(other.to_string())),
        };
        if extra.is_empty() {
            return Ok(Deny::new(Arc::clone(&self.startup_rules)));
        }
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((globs, rules)) = last.as_ref()
            && *globs == extra
        {
            return Ok(Deny::new(Arc::clone(rules)));
        }
        let all: Vec<String> = self.startup.iter().chain(&extra).cloned().collect();
        let rules = Arc::new(DenyRules::compile(roots, &all)?);
        *last = Some((extra, Arc::clone(&rules)));
        Ok(Deny::new(rules))
    }
}

/// The deny rules in force for one call.
#[derive(Debug)]
pub(crate) struct Deny {
    pub(crate) rules: Arc<DenyRules>,
    /// (device, inode) → path of every denied regular file under the roots,
    /// found on first need.
    pub(crate) inodes: OnceLock<HashMap<(u64, u64), PathBuf>>,
}

impl Deny {
    fn new(rules: Arc<DenyRules>) -> Self {
        Self {
            rules,
            inodes: OnceLock::new(),
        }
    }

    /// No rule at all: every check is free.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rule that matches `path` itself (walks check each level as they go).
    pub(crate) fn entry_rule(&self, path: &Path) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        // The common case (no match) stays allocation-free.
        if !self.rules.set.is_match(path) {
            return None;
        }
        let hits = self.rules.set.matches(path);
        hits.first().map(|&i| self.rules.sources[i].as_str())
    }

    /// The rule that matches `path` or a directory above it.
    pub(crate) fn rule_for(&self, path: &Path) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        path.ancestors().find_map(|p| self.entry_rule(p))
    }

    /// The rule denying `path` as the caller wrote it (made absolute against the
    /// first root and normalised without touching the filesystem), so that a
    /// symlink whose own name is denied is refused even if its target is not.
    pub(crate) fn rule_for_named(&self, roots: &Roots, asked: &str) -> Option<&str> {
        if self.is_empty() {
            return None;
        }
        let asked = Path::new(asked);
        let joined = if asked.is_absolute() {
            asked.to_path_buf()
        } else {
            roots.paths().next()?.join(asked)
        };
        let mut lexical = PathBuf::new();
        for c in joined.components() {
            match c {
                Component::ParentDir => {
                    lexical.pop();
                }
                Component::CurDir => {}
                c => lexical.push(c),
            }
        }
        self.rule_for(&lexical)
    }
}

impl Deny {
    /// Whether a listed entry at `path` (its `lstat` given; the listing did not
    /// follow it) is to be left out because of what it leads to: a hard link to
    /// a denied file, or a symlink resolving to one. Its own path is checked by
    /// the caller.
    pub(crate) fn hides_entry(&self, roots: &Roots, path: &Path, lstat: &Stat) -> bool {
        if self.is_empty() {
            return false;
        }
        match FileType::from_raw_mode(lstat.st_mode) {
            FileType::RegularFile => self.hard_link_of(roots, lstat).is_some(),
            FileType::Symlink => match roots.resolve(path, Intent::Open) {
                Ok(r) => {
                    self.rule_for(r.path()).is_some()
                        || r.stat()
                            .is_some_and(|s| self.hard_link_of(roots, s).is_some())
                }
                // Dangling, or leading outside the roots: opening it is refused anyway.
                Err(_) => false,
            },
            _ => false,
        }
    }

    /// Why the caller may not touch the path it named, judged on the name alone:
    /// checked before resolving a write, which would create missing directories.
    pub(crate) fn refusal_named(&self, roots: &Roots, asked: &str) -> Option<String> {
        let rule = self.rule_for_named(roots, asked)?;
        Some(format!("denied by the host's rule `{rule}`"))
    }

    /// Why the caller may not touch `asked` (resolved to the real path `real`),
    /// if it may not: its own name, its real path, or (given the object's `stat`)
    /// its inode is denied. The text reads well after "cannot read `p`: ".
    pub(crate) fn refusal(
        &self,
        roots: &Roots,
        asked: &str,
        real: &Path,
        stat: Option<&Stat>,
    ) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        if let Some(rule) = self
            .rule_for_named(roots, asked)
            .or_else(|| self.rule_for(real))
        {
            return Some(format!("denied by the host's rule `{rule}`"));
        }
        let other = self.hard_link_of(roots, stat?)?;
        let rule = self.rule_for(other).unwrap_or("?");
        Some(format!(
            "it is a hard link to `{}`, which is denied by the host's rule `{rule}`",
            other.display()
        ))
    }
}
