//! Bringing the store's index up to the workspace and writing it as a tree: the heart of a
//! checkpoint.
//!
//! `git status` compares every file's stat data with the index (and lists files the index
//! does not know, honouring `.gitignore`), so only files that changed are read again; the
//! store then adds them — unless they are too large or not files at all — and writes the tree.
//! Permission bits, which git keeps one of, are read for every recorded file ([`Modes`]).

use std::os::unix::fs::PermissionsExt;

use crate::error::{Error, Result};
use crate::git::{self, split_nul};
use crate::meta::{SkipReason, Skipped};
use crate::modes::Modes;
use crate::paths;
use crate::store::Store;

/// The workspace as the index now records it.
pub(crate) struct Snapshot {
    pub(crate) tree: String,
    pub(crate) modes: Modes,
    pub(crate) files: usize,
    pub(crate) skipped: Vec<Skipped>,
}

/// A path `git status` reports.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Changed {
    pub(crate) path: Vec<u8>,
    /// In the index (changed or deleted), as opposed to untracked.
    pub(crate) tracked: bool,
}

impl Store {
    /// Updates the index from the workspace and writes its tree. Must hold the lock.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        let status = self.git.run(&[
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ])?;
        let mut add = Vec::new();
        let mut drop = Vec::new();
        let mut skipped = Vec::new();
        let mut new_bytes = 0u64;
        for changed in parse_status(&status) {
            // An untracked directory with a `.git` of its own is listed as `dir/`.
            if let Some(dir) = changed.path.strip_suffix(b"/") {
                skipped.push(Skipped {
                    path: paths::from_bytes(dir),
                    reason: SkipReason::NestedRepository,
                });
                continue;
            }
            let full = self.workspace.join(paths::from_bytes(&changed.path));
            let kind = match std::fs::symlink_metadata(&full) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // Deleted: `update-index --remove` drops it.
                    add.push(changed.path);
                    continue;
                }
                Err(_) => {
                    // A directory on the way that we may not enter: as unreadable as the file.
                    skip_unreadable(&mut skipped, &mut drop, changed);
                    continue;
                }
                Ok(md) => md,
            };
            let ft = kind.file_type();
            let skip = if ft.is_symlink() {
                None
            } else if ft.is_file() {
                if kind.len() > self.limits.max_file_bytes {
                    Some(SkipReason::TooLarge { bytes: kind.len() })
                } else if std::fs::File::open(&full).is_err() {
                    // git would fail the whole update on it.
                    Some(SkipReason::Unreadable)
                } else {
                    new_bytes += kind.len();
                    None
                }
            } else if ft.is_dir() {
                // A tracked file replaced by a directory: the directory's files are listed on
                // their own, as untracked.
                drop.push(changed.path);
                continue;
            } else {
                Some(SkipReason::Special)
            };
            match skip {
                None => add.push(changed.path),
                Some(reason) => {
                    if changed.tracked {
                        drop.push(changed.path.clone());
                    }
                    skipped.push(Skipped {
                        path: paths::from_bytes(&changed.path),
                        reason,
                    });
                }
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
        let out = self.git.run(&["write-tree"])?;
        let tree = git::oid_line(&out, self.git.git_dir(), "write-tree")?;
        let (files, modes) = self.modes()?;
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Snapshot {
            tree,
            modes,
            files,
            skipped,
        })
    }

    /// How many files the index holds, and the permission bits of its regular files as they
    /// are on disk.
    fn modes(&self) -> Result<(usize, Modes)> {
        let listed = self.git.run(&["ls-files", "-z", "--stage"])?;
        let mut files = 0;
        let mut regular = Vec::new();
        for record in split_nul(&listed) {
            // `<mode> <object> <stage>\t<path>`
            let Some(tab) = record.iter().position(|b| *b == b'\t') else {
                return Err(self.corrupt("ls-files printed a record without a path".into()));
            };
            let (info, path) = (&record[..tab], &record[tab + 1..]);
            files += 1;
            let git_mode = info.split(|b| *b == b' ').next().unwrap_or_default();
            let fallback = match git_mode {
                b"100644" => 0o644,
                b"100755" => 0o755,
                // Symlinks have no bits of their own; nothing else is ever added.
                _ => continue,
            };
            let full = self.workspace.join(paths::from_bytes(path));
            let mode = std::fs::symlink_metadata(&full)
                .ok()
                .filter(|md| md.is_file())
                .map_or(fallback, |md| md.permissions().mode() & 0o7777);
            regular.push((path.to_vec(), mode));
        }
        Ok((files, Modes::from_files(regular)))
    }
}

fn skip_unreadable(skipped: &mut Vec<Skipped>, drop: &mut Vec<Vec<u8>>, changed: Changed) {
    skipped.push(Skipped {
        path: paths::from_bytes(&changed.path),
        reason: SkipReason::Unreadable,
    });
    if changed.tracked {
        drop.push(changed.path);
    }
}

/// The paths of `git status --porcelain=v2 -z` output (renames are off).
pub(crate) fn parse_status(out: &[u8]) -> Vec<Changed> {
    let mut records = split_nul(out);
    let mut changed = Vec::new();
    while let Some(record) = records.next() {
        let (tracked, fields) = match record.first() {
            // `1 XY sub mH mI mW hH hI path`
            Some(b'1') => (true, 9),
            // `2 XY sub mH mI mW hH hI Xscore path` then the original path as its own record.
            Some(b'2') => {
                records.next();
                (true, 10)
            }
            // `u XY sub m1 m2 m3 mW h1 h2 h3 path`
            Some(b'u') => (true, 11),
            Some(b'?') => (false, 2),
            _ => continue,
        };
        if let Some(path) = record.splitn(fields, |b| *b == b' ').nth(fields - 1) {
            changed.push(Changed {
                path: path.to_vec(),
                tracked,
            });
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_records_give_their_paths_spaces_and_all() {
        let out = b"1 .M N... 100644 100644 100644 aaaa bbbb src/a b.rs\0\
            ? new file.txt\0? nested/\0\
            2 R. N... 100644 100644 100644 aaaa bbbb R100 to.rs\0from.rs\0";
        let got = parse_status(out);
        assert_eq!(
            got,
            vec![
                Changed {
                    path: b"src/a b.rs".to_vec(),
                    tracked: true
                },
                Changed {
                    path: b"new file.txt".to_vec(),
                    tracked: false
                },
                Changed {
                    path: b"nested/".to_vec(),
                    tracked: false
                },
                Changed {
                    path: b"to.rs".to_vec(),
                    tracked: true
                },
            ]
        );
    }
}
