//! Putting the workspace back as a checkpoint recorded it.
//!
//! A restore first records the workspace as it is (so the restore can be undone by restoring
//! that checkpoint), then changes only what differs: files created since are deleted, changed
//! and deleted ones are written back (content, symlinks, permission bits), and the result is
//! recorded too. What the store never recorded — ignored files, files over the size limit —
//! is never deleted or overwritten: a restore that cannot be undone must not destroy anything,
//! so such a file in the way is kept and reported instead.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::git::{self, split_nul};
use crate::meta::{Id, Kind, Meta};
use crate::paths;
use crate::store::Store;

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// The checkpoint restored.
    pub target: Id,
    /// The state before the restore: restoring it undoes this restore.
    pub before: Id,
    /// The state after it.
    pub after: Id,
    /// Files written back (changed or deleted since the checkpoint).
    #[serde(serialize_with = "serialize_paths")]
    pub written: Vec<PathBuf>,
    /// Files deleted (created since the checkpoint).
    #[serde(serialize_with = "serialize_paths")]
    pub deleted: Vec<PathBuf>,
    /// Files whose permission bits alone were put back.
    #[serde(serialize_with = "serialize_paths")]
    pub modes_restored: Vec<PathBuf>,
    /// Files of the checkpoint not written back, because something the store never recorded
    /// is in their place.
    pub kept: Vec<Kept>,
}

/// A file a restore did not write, and what is in its way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kept {
    #[serde(serialize_with = "serialize_path")]
    pub path: PathBuf,
    /// The file or directory in the way (`path` itself, or a directory above it that is now
    /// a file), which the store never recorded and so could not bring back.
    #[serde(serialize_with = "serialize_path")]
    pub blocked_by: PathBuf,
}

fn serialize_path<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&paths::escape(paths::as_bytes(p)))
}

fn serialize_paths<S: serde::Serializer>(ps: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ps.iter().map(|p| paths::escape(paths::as_bytes(p))))
}

impl Store {
    /// Restores the workspace to checkpoint `id` (see the module docs for what is and is
    /// not touched). Returns what it did, with the checkpoint that undoes it.
    pub fn restore(&self, id: &Id) -> Result<Restored> {
        let _lock = self.lock()?;
        let target = self.read(id)?;
        let before =
            self.checkpoint_locked(&Meta::new(Kind::BeforeRestore { target: id.clone() }))?;
        let changes = self.raw_diff(&before.tree, &target.tree)?;

        let mut deleted = Vec::new();
        for change in changes.iter().filter(|c| c.status == b'D') {
            let full = self.full(&change.path);
            match std::fs::symlink_metadata(&full) {
                Ok(md) if !md.is_dir() => {
                    std::fs::remove_file(&full).map_err(|e| Error::io("delete", &full, e))?;
                    deleted.push(paths::from_bytes(&change.path));
                }
                // Gone already, or a directory now (its files were recorded on their own).
                _ => {}
            }
        }
        for path in &deleted {
            self.remove_empty_parents(path);
        }

        let mut writes = Vec::new();
        let mut kept = Vec::new();
        for change in changes.iter().filter(|c| c.status != b'D') {
            match self.in_the_way(&change.path, change.status == b'A') {
                None => writes.push(change.path.clone()),
                Some(blocked_by) => kept.push(Kept {
                    path: paths::from_bytes(&change.path),
                    blocked_by,
                }),
            }
        }

        // The index becomes the target's (stat data kept for what did not change), then the
        // files that differ are written from it, and their stat data taken (`-u`).
        self.git
            .run(&["read-tree", "-m", &before.tree, &target.tree])?;
        if !kept.is_empty() {
            let input = git::join_nul(kept.iter().map(|k| paths::as_bytes(&k.path)));
            self.git.run_with(
                &["update-index", "-z", "--force-remove", "--stdin"],
                Some(&input),
            )?;
        }
        if !writes.is_empty() {
            let input = git::join_nul(writes.iter().map(Vec::as_slice));
            self.git.run_with(
                &["checkout-index", "-f", "-u", "-z", "--stdin"],
                Some(&input),
            )?;
        }

        let modes_restored = self.restore_modes(&before.modes, &target.modes, &writes)?;
        let after = self.checkpoint_locked(&Meta::new(Kind::Restored {
            target: id.clone(),
            before: before.id.clone(),
        }))?;
        Ok(Restored {
            target: id.clone(),
            before: before.id,
            after: after.id,
            written: writes.iter().map(|p| paths::from_bytes(p)).collect(),
            deleted,
            modes_restored,
            kept,
        })
    }

    /// Sets the recorded permission bits on every regular file of the index (now the
    /// target's) whose bits differ: the files just written, and those only `chmod`ed since.
    fn restore_modes(
        &self,
        before: &crate::modes::Modes,
        target: &crate::modes::Modes,
        written: &[Vec<u8>],
    ) -> Result<Vec<PathBuf>> {
        let listed = self.git.run(&["ls-files", "-z", "--stage"])?;
        let written: std::collections::HashSet<&[u8]> = written.iter().map(Vec::as_slice).collect();
        let mut restored = Vec::new();
        for record in split_nul(&listed) {
            let Some(tab) = record.iter().position(|b| *b == b'\t') else {
                continue;
            };
            if !matches!(record.get(..6), Some(b"100644" | b"100755")) {
                continue;
            }
            let path = &record[tab + 1..];
            let want = target.get(path);
            let was_written = written.contains(path);
            if !was_written && before.get(path) == want {
                continue;
            }
            let full = self.full(path);
            let Ok(md) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            if !md.is_file() || md.permissions().mode() & 0o7777 == want {
                continue;
            }
            std::fs::set_permissions(&full, std::fs::Permissions::from_mode(want))
                .map_err(|e| Error::io("set the permissions of", &full, e))?;
            if !was_written {
                restored.push(paths::from_bytes(path));
            }
        }
        Ok(restored)
    }

    /// What, if anything, keeps `path` from being written: a file the store did not record
    /// at `path` (only possible when the path is `new` to the recorded state), a non-empty
    /// directory there, or a file where a directory above it should be.
    fn in_the_way(&self, path: &[u8], new: bool) -> Option<PathBuf> {
        let rel = paths::from_bytes(path);
        let mut above = PathBuf::new();
        let parents: Vec<_> = rel
            .parent()
            .into_iter()
            .flat_map(Path::components)
            .collect();
        for part in parents {
            above.push(part);
            match std::fs::symlink_metadata(self.workspace.join(&above)) {
                Ok(md) if md.is_dir() => {}
                Ok(_) => return Some(above),
                Err(_) => return None,
            }
        }
        let full = self.workspace.join(&rel);
        match std::fs::symlink_metadata(&full) {
            Err(_) => None,
            // An empty directory holds nothing to lose.
            Ok(md) if md.is_dir() => std::fs::remove_dir(&full).err().map(|_| rel),
            Ok(_) if new => Some(rel),
            Ok(_) => None,
        }
    }

    /// Removes the directories above a deleted file that it left empty.
    fn remove_empty_parents(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::remove_dir(self.workspace.join(d)).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    fn full(&self, path: &[u8]) -> PathBuf {
        self.workspace.join(paths::from_bytes(path))
    }
}
