//! Where a command runs.
//!
//! The `cwd` argument is a guard rail, not a sandbox: the command itself can
//! `cd /` at will. What the check does guarantee is that the server never
//! *starts* a command outside its root because of a path trick. Paths are
//! canonicalized (symlinks and `..` resolved by the OS) and compared by
//! components, so `/w/root-evil` is not inside `/w/root`.

use std::path::{Path, PathBuf};

/// Why a `cwd` argument was refused.
#[derive(Debug, thiserror::Error)]
pub enum CwdError {
    /// The path does not exist or cannot be resolved.
    #[error("cwd `{requested}` cannot be resolved: {source}")]
    Unresolvable {
        requested: String,
        source: std::io::Error,
    },
    /// The path resolves outside the root.
    #[error("cwd `{requested}` resolves to `{}`, which is outside the root `{}`", resolved.display(), root.display())]
    OutsideRoot {
        requested: String,
        resolved: PathBuf,
        root: PathBuf,
    },
    /// The path exists but is not a directory.
    #[error("cwd `{requested}` is not a directory")]
    NotADirectory { requested: String },
}

/// Resolves `requested` (relative to `root`, or absolute) to a directory inside
/// `root`. `root` must already be canonical. `None` means the root itself.
pub fn resolve_cwd(root: &Path, requested: Option<&str>) -> Result<PathBuf, CwdError> {
    let Some(requested) = requested else {
        return Ok(root.to_path_buf());
    };
    let joined = root.join(requested);
    let resolved = joined
        .canonicalize()
        .map_err(|source| CwdError::Unresolvable {
            requested: requested.to_string(),
            source,
        })?;
    // `Path::starts_with` compares whole components, never string prefixes.
    if !resolved.starts_with(root) {
        return Err(CwdError::OutsideRoot {
            requested: requested.to_string(),
            resolved,
            root: root.to_path_buf(),
        });
    }
    if !resolved.is_dir() {
        return Err(CwdError::NotADirectory {
            requested: requested.to_string(),
        });
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Layout {
        _dir: tempfile::TempDir,
        root: PathBuf,
        evil: PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let evil = base.join("root-evil");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(root.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(&evil, root.join("link-out")).unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("link-in")).unwrap();
        Layout {
            _dir: dir,
            root,
            evil,
        }
    }

    #[test]
    fn none_and_relative_and_absolute_inside_are_accepted() {
        let l = layout();
        assert_eq!(resolve_cwd(&l.root, None).unwrap(), l.root);
        assert_eq!(
            resolve_cwd(&l.root, Some("sub")).unwrap(),
            l.root.join("sub")
        );
        assert_eq!(resolve_cwd(&l.root, Some(".")).unwrap(), l.root);
        let abs = l.root.join("sub");
        assert_eq!(resolve_cwd(&l.root, abs.to_str()).unwrap(), abs);
        assert_eq!(
            resolve_cwd(&l.root, Some("link-in")).unwrap(),
            l.root.join("sub")
        );
        assert_eq!(resolve_cwd(&l.root, Some("sub/..")).unwrap(), l.root);
    }

    #[test]
    fn sibling_with_a_shared_prefix_is_outside() {
        let l = layout();
        let err = resolve_cwd(&l.root, l.evil.to_str()).unwrap_err();
        assert!(matches!(err, CwdError::OutsideRoot { .. }), "{err}");
        let err = resolve_cwd(&l.root, Some("../root-evil")).unwrap_err();
        assert!(matches!(err, CwdError::OutsideRoot { .. }), "{err}");
    }

    #[test]
    fn dotdot_and_symlinks_that_leave_are_outside() {
        let l = layout();
        for bad in ["..", "../..", "sub/../..", "link-out", "/"] {
            let err = resolve_cwd(&l.root, Some(bad)).unwrap_err();
            assert!(matches!(err, CwdError::OutsideRoot { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn missing_paths_and_files_are_refused() {
        let l = layout();
        assert!(matches!(
            resolve_cwd(&l.root, Some("nope")).unwrap_err(),
            CwdError::Unresolvable { .. }
        ));
        assert!(matches!(
            resolve_cwd(&l.root, Some("file")).unwrap_err(),
            CwdError::NotADirectory { .. }
        ));
        assert!(matches!(
            resolve_cwd(&l.root, Some("a\0b")).unwrap_err(),
            CwdError::Unresolvable { .. }
        ));
    }
}
