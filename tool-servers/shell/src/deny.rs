//! Files the host's deny rules name, hidden from commands (issue 24, item 3).
//!
//! A rule such as `fs__*(path: **/.env)` is a statement that the file is off
//! limits. Command-text rules cannot hold it (`cat "$PWD/.env"`, `dd if=`,
//! `grep -r`, python…), so before each call the server finds what the globs
//! the host sends in the request `_meta["tern/deny_paths"]` match under the
//! root, and the sandbox covers each with an empty, read-only file or
//! directory in the command's mount view. Reads elsewhere stay open.
//!
//! Globs are `globset` globs with a `/`-aware `*`, as tern-fs takes them: a
//! relative glob is anchored at the root (`**/.env` matches `ROOT/.env` and
//! `ROOT/a/.env`), an absolute one is used as is; outside the root only a
//! glob without wildcards (one named file) can be found.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

/// Request `_meta` key of a call's deny globs.
pub const DENY_META_KEY: &str = tern_tool_common::meta::DENY_PATHS;

/// Entries looked at under the root before giving up: the call fails rather
/// than run with a denied file readable.
const MAX_ENTRIES: usize = 500_000;

/// Why the denied paths of a call cannot be found; the call is refused.
#[derive(Debug, thiserror::Error)]
pub enum DenyError {
    #[error("`_meta.{DENY_META_KEY}` must be an array of glob strings, not {0}")]
    Shape(String),
    #[error("invalid deny glob `{glob}`: {reason}")]
    Glob { glob: String, reason: String },
    #[error(
        "more than {MAX_ENTRIES} entries under {root}: cannot find the files the host's deny \
         rules name\nhint: run the server on a smaller root, or narrow the deny rule"
    )]
    TooLarge { root: String },
    #[error("cannot read {path} while looking for denied files: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

/// The existing paths under `root` (and named absolute files) that the
/// call's deny globs match; directories cover what is below them.
pub fn denied_paths(
    root: &Path,
    meta: &serde_json::Map<String, Value>,
) -> Result<Vec<PathBuf>, DenyError> {
    let globs = match meta.get(DENY_META_KEY) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| DenyError::Shape(v.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(DenyError::Shape(other.to_string())),
    };
    if globs.is_empty() {
        return Ok(Vec::new());
    }
    let mut builder = GlobSetBuilder::new();
    let mut named = Vec::new();
    for glob in &globs {
        let anchored = if Path::new(glob).is_absolute() {
            glob.clone()
        } else {
            format!("{}/{glob}", root.display())
        };
        if !Path::new(glob).is_absolute() || !has_wildcard(glob) {
            named.push(PathBuf::from(&anchored));
        }
        let compiled = GlobBuilder::new(&anchored)
            .literal_separator(true)
            .build()
            .map_err(|e| DenyError::Glob {
                glob: glob.clone(),
                reason: e.to_string(),
            })?;
        builder.add(compiled);
    }
    let set = builder.build().map_err(|e| DenyError::Glob {
        glob: globs.join(", "),
        reason: e.to_string(),
    })?;
    let mut found: Vec<PathBuf> = named
        .into_iter()
        .filter(|p| !has_wildcard(&p.to_string_lossy()))
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    walk(root, &set, &mut found)?;
    found.sort();
    found.dedup();
    // Below a hidden directory, nothing needs hiding again.
    let all = found.clone();
    found.retain(|p| !all.iter().any(|o| o != p && p.starts_with(o)));
    Ok(found)
}

fn has_wildcard(glob: &str) -> bool {
    glob.contains(['*', '?', '[', '{'])
}

/// Depth-first over `root`, not following symlinks (a symlink that matches
/// is hidden itself, which hides its target at that name) and not entering
/// `.git` (read-only, and git's own).
fn walk(root: &Path, set: &GlobSet, found: &mut Vec<PathBuf>) -> Result<(), DenyError> {
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A directory we cannot list, the command cannot either.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => continue,
            Err(e) if dir == root => {
                return Err(DenyError::Read {
                    path: dir.display().to_string(),
                    source: e,
                });
            }
            Err(_) => continue,
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(DenyError::TooLarge {
                    root: root.display().to_string(),
                });
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if set.is_match(&path) {
                found.push(path);
            } else if kind.is_dir() && entry.file_name() != ".git" {
                stack.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(globs: Value) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert(DENY_META_KEY.into(), globs);
        m
    }

    #[test]
    fn relative_globs_are_anchored_at_the_root_and_directories_cover_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/secrets/deep")).unwrap();
        std::fs::write(root.join(".env"), "K=1").unwrap();
        std::fs::write(root.join("a/.env"), "K=2").unwrap();
        std::fs::write(root.join("a/secrets/deep/key"), "k").unwrap();
        std::fs::write(root.join("a/env"), "not denied").unwrap();
        let found =
            denied_paths(&root, &meta(serde_json::json!(["**/.env", "**/secrets"]))).unwrap();
        assert_eq!(
            found,
            vec![
                root.join(".env"),
                root.join("a/.env"),
                root.join("a/secrets")
            ]
        );
        assert!(
            denied_paths(&root, &serde_json::Map::new())
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            denied_paths(&root, &meta(serde_json::json!("**/.env"))),
            Err(DenyError::Shape(_))
        ));
        assert!(matches!(
            denied_paths(&root, &meta(serde_json::json!(["a[b"]))),
            Err(DenyError::Glob { .. })
        ));
    }
}
