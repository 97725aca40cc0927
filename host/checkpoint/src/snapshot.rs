//! Bringing the store's index up to the workspace and writing it as a tree: the heart of a
//! checkpoint, and what makes one cheap.
//!
//! Two listings run side by side: `git diff-files` compares every recorded file's stat data
//! (size, times, inode, mode) with the index, which flags content changes, deletions and a
//! `chmod` alike (it changes the inode's ctime) without reading any file; `git ls-files
//! --others` lists the files the index does not know, honouring `.gitignore`. Only the files
//! they name are looked at: added to the index (unless too large or not files at all), and
//! their permission bits — which git keeps one of — read for the record ([`Modes`]).
//!
//! What the index held before is remembered in `state.json` beside it, with the index file's
//! identity; when the index is not the one described there (the first checkpoint, after a
//! restore, or a process killed half-way), the bits of every recorded file are read instead.
//!
//! One case escapes stat data: a file changed within the same clock tick as git recorded it
//! (timestamps are coarse) looks unchanged. git re-reads such "racily clean" files' content
//! itself; for their permission bits the store keeps the files whose inode changed in the
//! last [`RACY`] in `state.json` and reads their bits again next time.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::git::{self, split_nul};
use crate::meta::{Checkpoint, SkipReason, Skipped};
use crate::modes::Modes;
use crate::paths;
use crate::store::Store;
use tern_protocol::files;

/// The workspace as the index now records it.
pub(crate) struct Snapshot {
    pub(crate) tree: String,
    pub(crate) modes: Modes,
    pub(crate) files: usize,
    pub(crate) skipped: Vec<Skipped>,
    /// The latest checkpoint, read under the same lock.
    pub(crate) latest: Option<Checkpoint>,
}

/// A path one of the listings reports.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Changed {
    pub(crate) path: Vec<u8>,
    /// In the index (changed or deleted), as opposed to untracked.
    pub(crate) tracked: bool,
}

/// How recent an inode change must be for stat data to possibly hide the next one: well over
/// the coarsest timestamp tick of the file systems tern runs on (a jiffy, or a second).
const RACY: Duration = Duration::from_secs(2);

/// What the index holds, as of the last snapshot (`state.json`).
#[derive(Debug, Serialize, Deserialize)]
struct State {
    /// The index file it describes: size, modification time (ns), inode. Every write of the
    /// index replaces the file, so another index is another identity.
    index: (u64, i128, u64),
    tree: String,
    files: usize,
    modes: Modes,
    /// Regular files whose inode changed less than [`RACY`] before the snapshot (escaped).
    #[serde(default)]
    recheck: Vec<String>,
}

/// What is known of the index before this snapshot.
struct Base {
    tree: Option<String>,
    files: usize,
    modes: Modes,
    /// Files whose bits must be read again (see [`RACY`]).
    recheck: Vec<Vec<u8>>,
}

impl Store {
    /// Updates the index from the workspace and writes its tree. Must hold the lock.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        let (tracked, untracked, latest) = std::thread::scope(|scope| {
            let tracked = scope.spawn(|| self.git.run(&["diff-files", "-z", "--name-only"]));
            let untracked = scope.spawn(|| {
                self.git
                    .run(&["ls-files", "-z", "--others", "--exclude-standard"])
            });
            let latest = self.latest();
            (tracked.join(), untracked.join(), latest)
        });
        let panicked = |_| self.corrupt("a git listing thread panicked".into());
        let (tracked, untracked, latest) = (
            tracked.map_err(panicked)??,
            untracked.map_err(panicked)??,
            latest?,
        );
        let mut base = match self.read_state() {
            Some(state) => Base {
                tree: Some(state.tree),
                files: state.files,
                modes: state.modes,
                recheck: state
                    .recheck
                    .iter()
                    .filter_map(|p| paths::unescape(p))
                    .collect(),
            },
            None => self.scan_index()?,
        };
        let reported: Vec<Changed> = split_nul(&tracked)
            .map(|p| Changed {
                path: p.to_vec(),
                tracked: true,
            })
            .chain(split_nul(&untracked).map(|p| Changed {
                path: p.to_vec(),
                tracked: false,
            }))
            .collect();
        let clean = reported.is_empty();
        let now = SystemTime::now();
        let mut recheck = Vec::new();
        for path in std::mem::take(&mut base.recheck) {
            if reported.iter().any(|c| c.path == path) {
                continue;
            }
            let full = self.workspace.join(paths::from_bytes(&path));
            if let Ok(md) = std::fs::symlink_metadata(full)
                && md.is_file()
            {
                base.modes.set(&path, md.permissions().mode() & 0o7777);
                if is_racy(&md, now) {
                    recheck.push(path);
                }
            }
        }

        let mut add = Vec::new();
        let mut drop = Vec::new();
        let mut skipped = Vec::new();
        let mut new_bytes = 0u64;
        for changed in reported {
            // A directory with a `.git` of its own is listed as `dir/`, never entered.
            if let Some(dir) = changed.path.strip_suffix(b"/") {
                skipped.push(Skipped {
                    path: paths::from_bytes(dir),
                    reason: SkipReason::NestedRepository,
                });
                continue;
            }
            // Leaves the index, whatever else happens to the path below.
            if changed.tracked {
                base.files = base.files.saturating_sub(1);
                base.modes.remove(&changed.path);
            }
            let full = self.workspace.join(paths::from_bytes(&changed.path));
            let md = match std::fs::symlink_metadata(&full) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Deleted: `update-index --remove` drops it.
                    add.push(changed.path);
                    continue;
                }
                Err(_) => {
                    // A directory on the way that we may not enter: as unreadable as the file.
                    skip(&mut skipped, &mut drop, changed, SkipReason::Unreadable);
                    continue;
                }
                Ok(md) => md,
            };
            let ft = md.file_type();
            let reason = if ft.is_symlink() {
                None
            } else if ft.is_file() {
                if md.len() > self.limits.max_file_bytes {
                    Some(SkipReason::TooLarge { bytes: md.len() })
                } else if std::fs::File::open(&full).is_err() {
                    // git would fail the whole update on it.
                    Some(SkipReason::Unreadable)
                } else {
                    new_bytes += md.len();
                    base.modes
                        .set(&changed.path, md.permissions().mode() & 0o7777);
                    if is_racy(&md, now) {
                        recheck.push(changed.path.clone());
                    }
                    None
                }
            } else if ft.is_dir() {
                // A recorded file replaced by a directory: its files are listed as untracked.
                drop.push(changed.path);
                continue;
            } else {
                Some(SkipReason::Special)
            };
            match reason {
                None => {
                    base.files += 1;
                    add.push(changed.path);
                }
                Some(reason) => skip(&mut skipped, &mut drop, changed, reason),
            }
        }
        if new_bytes > self.limits.max_checkpoint_bytes {
            return Err(Error::TooLarge {
                files: add.len(),
                bytes: new_bytes,
                limit: self.limits.max_checkpoint_bytes,
            });
        }
        if !drop.is_empty() {
            let input = git::join_nul(drop.iter().map(Vec::as_slice));
            self.git.run_with(
                &["update-index", "-z", "--force-remove", "--stdin"],
                Some(&input),
            )?;
        }
        if !add.is_empty() {
            // `--replace`: a file where a directory was (or the other way round) replaces the
            // old entries instead of failing.
            let input = git::join_nul(add.iter().map(Vec::as_slice));
            self.git.run_with(
                &[
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                ],
                Some(&input),
            )?;
        }
        let tree = match base.tree.take().filter(|_| clean) {
            Some(tree) => tree,
            None => {
                let out = self.git.run(&["write-tree"])?;
                git::oid_line(&out, self.git.git_dir(), "write-tree")?
            }
        };
        self.write_state(&tree, &base, &recheck)?;
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Snapshot {
            tree,
            modes: base.modes,
            files: base.files,
            skipped,
            latest,
        })
    }

    /// The index's files and their permission bits read from disk, for an index that
    /// `state.json` does not describe.
    fn scan_index(&self) -> Result<Base> {
        let listed = self.git.run(&["ls-files", "-z", "--stage"])?;
        let now = SystemTime::now();
        let mut files = 0;
        let mut regular = Vec::new();
        let mut recheck = Vec::new();
        for record in split_nul(&listed) {
            // `<mode> <object> <stage>\t<path>`
            let Some(tab) = record.iter().position(|b| *b == b'\t') else {
                return Err(self.corrupt("ls-files printed a record without a path".into()));
            };
            files += 1;
            let fallback = match record.split(|b| *b == b' ').next() {
                Some(b"100644") => 0o644,
                Some(b"100755") => 0o755,
                // A symlink has no bits of its own; nothing else is ever added.
                _ => continue,
            };
            let path = &record[tab + 1..];
            let md = std::fs::symlink_metadata(self.workspace.join(paths::from_bytes(path)))
                .ok()
                .filter(|md| md.is_file());
            if md.as_ref().is_some_and(|md| is_racy(md, now)) {
                recheck.push(path.to_vec());
            }
            let mode = md.map_or(fallback, |md| md.permissions().mode() & 0o7777);
            regular.push((path.to_vec(), mode));
        }
        Ok(Base {
            tree: None,
            files,
            modes: Modes::from_files(regular),
            recheck,
        })
    }

    fn state_path(&self) -> std::path::PathBuf {
        self.dir.join("state.json")
    }

    fn read_state(&self) -> Option<State> {
        let state: State = serde_json::from_slice(&std::fs::read(self.state_path()).ok()?).ok()?;
        (index_identity(&self.dir.join("index")) == Some(state.index)).then_some(state)
    }

    fn write_state(&self, tree: &str, base: &Base, recheck: &[Vec<u8>]) -> Result<()> {
        let path = self.state_path();
        let Some(index) = index_identity(&self.dir.join("index")) else {
            // No index yet (an empty workspace): nothing to describe.
            let _ = std::fs::remove_file(&path);
            return Ok(());
        };
        let state = State {
            index,
            tree: tree.to_string(),
            files: base.files,
            modes: base.modes.clone(),
            recheck: recheck.iter().map(|p| paths::escape(p)).collect(),
        };
        let json = serde_json::to_vec(&state)
            .map_err(|e| self.corrupt(format!("cannot encode the index state: {e}")))?;
        // Not synced: a lost or torn file only means the next snapshot reads every file's
        // bits again.
        files::write(&path, &json).map_err(|e| Error::io("write", &path, e))
    }
}

/// Whether the inode changed so recently that a change now might not show in its stat data.
fn is_racy(md: &std::fs::Metadata, now: SystemTime) -> bool {
    let ctime = UNIX_EPOCH
        + Duration::new(
            md.ctime().max(0) as u64,
            md.ctime_nsec().clamp(0, 999_999_999) as u32,
        );
    match now.duration_since(ctime) {
        Ok(age) => age < RACY,
        // A change time in the future: the clock moved; trust nothing.
        Err(_) => true,
    }
}

fn index_identity(index: &Path) -> Option<(u64, i128, u64)> {
    let md = std::fs::symlink_metadata(index).ok()?;
    let mtime = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
    Some((md.len(), mtime, md.ino()))
}

fn skip(skipped: &mut Vec<Skipped>, drop: &mut Vec<Vec<u8>>, changed: Changed, reason: SkipReason) {
    skipped.push(Skipped {
        path: paths::from_bytes(&changed.path),
        reason,
    });
    if changed.tracked {
        drop.push(changed.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_identity_changes_when_the_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join("index");
        assert_eq!(index_identity(&index), None);
        std::fs::write(&index, "one").unwrap();
        let first = index_identity(&index).unwrap();
        let tmp = dir.path().join("index.lock");
        std::fs::write(&tmp, "two").unwrap();
        std::fs::rename(&tmp, &index).unwrap();
        assert_ne!(index_identity(&index).unwrap(), first);
    }
}
