//! Where a sub-agent may work: the roots (`--root`, else the client's `roots/list`, else the
//! server's working directory) and the `cwd` of a call, which must lie inside one of them.
//!
//! The sub-run's tool servers are started in that `cwd` with `--root .` (the built-ins'
//! default), so they are confined to it — a subset of the roots the client gave.

use std::path::{Path, PathBuf};

/// Why a call's working directory was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RootError {
    #[error("the client offered no roots, so the sub-agent has nowhere to work")]
    NoRoots,
    #[error("cannot use {path}: {reason}")]
    Unusable { path: String, reason: String },
    #[error("{cwd} is outside the roots this server may work in ({roots})")]
    Outside { cwd: String, roots: String },
    #[error("root {uri:?} is not a local directory (a `file://` URI)")]
    NotFile { uri: String },
}

/// The local directory a `file://` root URI names.
pub fn from_uri(uri: &str) -> Result<PathBuf, RootError> {
    url::Url::parse(uri)
        .ok()
        .filter(|u| u.scheme() == "file")
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| RootError::NotFile {
            uri: uri.to_owned(),
        })
}

/// Canonical roots (each must exist and be a directory).
pub fn canonical(roots: &[PathBuf]) -> Result<Vec<PathBuf>, RootError> {
    if roots.is_empty() {
        return Err(RootError::NoRoots);
    }
    roots.iter().map(|r| directory(r)).collect()
}

/// The directory a call works in: `cwd` (relative to the first root) or the first root; it
/// must be inside one of `roots` (already canonical).
pub fn working_dir(roots: &[PathBuf], cwd: Option<&str>) -> Result<PathBuf, RootError> {
    let first = roots.first().ok_or(RootError::NoRoots)?;
    let wanted = match cwd {
        Some(c) if !c.trim().is_empty() => first.join(c),
        _ => first.clone(),
    };
    let dir = directory(&wanted)?;
    if roots.iter().any(|r| dir.starts_with(r)) {
        Ok(dir)
    } else {
        Err(RootError::Outside {
            cwd: dir.display().to_string(),
            roots: roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// `path`, canonical (symlinks and `..` resolved, so the containment check is about the real
/// directory), if it is a directory.
fn directory(path: &Path) -> Result<PathBuf, RootError> {
    let unusable = |reason: String| RootError::Unusable {
        path: path.display().to_string(),
        reason,
    };
    let dir = path.canonicalize().map_err(|e| unusable(e.to_string()))?;
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(unusable("not a directory".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths_and_other_schemes_are_refused() {
        assert_eq!(
            from_uri("file:///w/a%20b").unwrap(),
            PathBuf::from("/w/a b")
        );
        assert!(matches!(
            from_uri("https://example.com/x"),
            Err(RootError::NotFile { .. })
        ));
        assert!(from_uri("not a uri").is_err());
    }

    #[test]
    fn the_working_dir_must_stay_inside_a_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let other = tmp.path().join("other");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&other, root.join("link")).unwrap();
        let roots = canonical(std::slice::from_ref(&root)).unwrap();
        let root = &roots[0];
        assert_eq!(working_dir(&roots, None).unwrap(), *root);
        assert_eq!(working_dir(&roots, Some("sub")).unwrap(), root.join("sub"));
        assert_eq!(
            working_dir(&roots, Some(&root.join("sub").display().to_string())).unwrap(),
            root.join("sub")
        );
        for escape in ["..", "../other", "link", "/"] {
            assert!(
                matches!(
                    working_dir(&roots, Some(escape)),
                    Err(RootError::Outside { .. })
                ),
                "{escape}"
            );
        }
        assert!(matches!(
            working_dir(&roots, Some("missing")),
            Err(RootError::Unusable { .. })
        ));
        assert_eq!(canonical(&[]), Err(RootError::NoRoots));
    }
}
