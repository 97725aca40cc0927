//! Where a workspace's store lives and what its private files say.
//!
//! ```text
//! $TERN_HOME/checkpoints/<workspace-hash>/   0700
//!   workspace   the workspace's path (which store is whose, for people and for a check)
//!   lock        held (flock) by whoever reads or writes the store
//!   index       the store's own index: git's stat cache, what makes a checkpoint incremental
//!   repo/       the object store: a git repository with no work tree of its own
//! ```

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tern_protocol::files;

use crate::error::{Error, Result};

/// The store directory of `workspace` (canonical) under `home`.
pub(crate) fn store_dir(home: &Path, workspace: &Path) -> PathBuf {
    let digest = Sha256::digest(workspace.as_os_str().as_bytes());
    let key = hex::encode(&digest[..8]);
    home.join("checkpoints").join(key)
}

/// Creates `dir` `0700` (or makes it so), refusing a symlink in its place: the store is
/// written by git, which follows symlinks, so a planted one would redirect every write.
pub(crate) fn private_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(md) if md.file_type().is_symlink() => {
            return Err(Error::Symlink {
                path: dir.to_path_buf(),
            });
        }
        _ => {}
    }
    files::private_dir(dir).map_err(|e| Error::io("create", dir, e))
}

/// Writes `path` (privately, never through a symlink) unless it already holds `content`.
pub(crate) fn write_if_changed(path: &Path, content: &[u8]) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => {
            return Err(Error::Symlink {
                path: path.to_path_buf(),
            });
        }
        _ => {}
    }
    if std::fs::read(path).is_ok_and(|old| old == content) {
        return Ok(());
    }
    files::write_atomic(path, content).map_err(|e| Error::io("write", path, e))
}

/// The store's git config, whole: nothing else writes it, and every key that changes what a
/// checkpoint records (line endings, case folding, symlinks, the executable bit) or could run
/// a program (hooks, fsmonitor) is pinned.
pub(crate) const CONFIG: &str = "\
# Written by tern for its checkpoint store; rewritten when tern opens the store.
[core]
\trepositoryformatversion = 0
\tbare = false
\tfilemode = true
\tsymlinks = true
\tignorecase = false
\tprecomposeunicode = false
\tautocrlf = false
\tsafecrlf = false
\tfsmonitor = false
\thooksPath = /dev/null
\texcludesFile = /dev/null
\tattributesFile = /dev/null
\tlogAllRefUpdates = false
\tsharedRepository = 0600
\tuntrackedCache = true
\tpreloadIndex = true
\ttrustctime = true
\tcheckStat = default
\tsplitIndex = false
\tquotePath = false
\tlooseCompression = 1
[index]
\tversion = 4
[gc]
\tauto = 0
[maintenance]
\tauto = false
[commit]
\tgpgSign = false
[user]
\tname = tern
\temail = tern@localhost
[submodule]
\trecurse = false
";

/// `info/attributes` outranks every `.gitattributes` of the project: no line-ending or
/// encoding conversion and no filter (LFS, git-crypt) — a checkpoint is the bytes on disk.
pub(crate) const ATTRIBUTES: &str = "\
# Written by tern: checkpoints keep and restore the bytes on disk, unconverted.
* -text -eol -filter -ident -working-tree-encoding -export-subst
";

/// `info/exclude`: what is never recorded besides what `.gitignore` leaves out — tern's own
/// home when it is inside the workspace (its sessions and this store).
pub(crate) fn exclude(workspace: &Path, home: &Path) -> String {
    let mut out = String::from("# Written by tern: never recorded in checkpoints.\n");
    if let Ok(rel) = home.strip_prefix(workspace)
        && !rel.as_os_str().is_empty()
    {
        out.push('/');
        out.push_str(&escape_pattern(&rel.to_string_lossy()));
        out.push_str("/\n");
    }
    out
}

/// A literal path as a gitignore pattern.
fn escape_pattern(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | ' ' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_inside_the_workspace_is_excluded_literally() {
        let ws = Path::new("/w");
        assert_eq!(
            exclude(ws, Path::new("/w/.tern home[1]")),
            "# Written by tern: never recorded in checkpoints.\n/.tern\\ home\\[1\\]/\n"
        );
        assert!(!exclude(ws, Path::new("/home/u/.tern")).contains("/\n/"));
        assert_ne!(
            store_dir(Path::new("/h"), Path::new("/a")),
            store_dir(Path::new("/h"), Path::new("/b"))
        );
    }
}
