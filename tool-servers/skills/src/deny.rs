//! The host's deny globs (request `_meta["tern/deny_paths"]`, which tern sends every trusted
//! server), enforced on what `read_file` opens and what `load` lists.
//!
//! The same rules as tern-fs's, for a server that only reads: a relative glob is anchored at
//! the skill's folder (`**/.env` matches `DIR/.env` and `DIR/a/.env`), an absolute one is taken
//! as is; `*` stays within a directory; a path is denied when it, or a directory above it,
//! matches — checked on the real path opened (after an in-folder symlink) and on the path the
//! model named. tern-fs also compares hard links by inode; a skill's folder is the user's own
//! install, where that trick buys an attacker nothing the folder does not already give.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

/// Request `_meta` key carrying a call's deny globs: `["glob", ...]`.
pub const DENY_META_KEY: &str = tern_tool_common::meta::DENY_PATHS;

/// Why a deny list cannot be used: the call fails rather than run unguarded.
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

/// One call's deny globs, anchored at one skill's folder.
#[derive(Debug)]
pub struct Deny {
    set: GlobSet,
    sources: Vec<String>,
}

impl Deny {
    /// The globs in `value` (the `_meta` entry, absent when the host sent none) for `folder`.
    pub fn for_call(folder: &Path, value: Option<&Value>) -> Result<Self, DenyError> {
        let globs: Vec<String> = match value {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| DenyError::Shape(format!("an array holding {v}")))
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(DenyError::Shape(other.to_string())),
        };
        let mut builder = GlobSetBuilder::new();
        let mut sources = Vec::new();
        for glob in globs {
            let pattern = if Path::new(&glob).is_absolute() {
                glob.clone()
            } else {
                format!(
                    "{}/{}",
                    globset::escape(&folder.to_string_lossy()).trim_end_matches('/'),
                    glob.trim_start_matches("./")
                )
            };
            let compiled = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|source| DenyError::Glob {
                    glob: glob.clone(),
                    source,
                })?;
            builder.add(compiled);
            sources.push(glob);
        }
        let set = builder.build().map_err(|source| DenyError::Glob {
            glob: sources.join(", "),
            source,
        })?;
        Ok(Self { set, sources })
    }

    /// The glob denying `path` (absolute) or a directory above it, if one does.
    pub fn rule(&self, path: &Path) -> Option<&str> {
        if self.sources.is_empty() {
            return None;
        }
        path.ancestors()
            .find_map(|p| self.set.matches(p).first().copied())
            .and_then(|i| self.sources.get(i).map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn relative_globs_anchor_at_the_folder_and_directories_deny_their_contents() {
        let folder = Path::new("/skills/x");
        let deny = Deny::for_call(folder, Some(&json!(["**/.env", "secrets", "/etc/**"]))).unwrap();
        assert_eq!(deny.rule(Path::new("/skills/x/.env")), Some("**/.env"));
        assert_eq!(deny.rule(Path::new("/skills/x/a/b/.env")), Some("**/.env"));
        assert_eq!(
            deny.rule(Path::new("/skills/x/secrets/key.pem")),
            Some("secrets")
        );
        assert_eq!(deny.rule(Path::new("/etc/passwd")), Some("/etc/**"));
        assert_eq!(deny.rule(Path::new("/skills/x/SKILL.md")), None);
        assert!(Deny::for_call(folder, Some(&json!("**"))).is_err());
        assert!(Deny::for_call(folder, Some(&json!([3]))).is_err());
        assert!(
            Deny::for_call(folder, None)
                .unwrap()
                .rule(Path::new("/a"))
                .is_none()
        );
    }
}
