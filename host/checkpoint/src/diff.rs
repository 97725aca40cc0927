//! What changed between two checkpoints, or between a checkpoint and the workspace now.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::Result;
use crate::git::split_nul;
use crate::meta::Id;
use crate::modes::Modes;
use crate::paths;
use crate::store::Store;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    /// A file became a symlink or the other way round.
    TypeChanged,
    /// Only its permission bits changed.
    ModeChanged,
}

/// A file that differs between two states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Relative to the workspace.
    #[serde(serialize_with = "serialize_path")]
    pub path: PathBuf,
    pub kind: ChangeKind,
}

fn serialize_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&paths::escape(paths::as_bytes(p)))
}

/// One entry of `git diff-tree --raw`.
pub(crate) struct RawChange {
    pub(crate) path: Vec<u8>,
    pub(crate) status: u8,
}

/// One end of a comparison.
pub(crate) struct State {
    pub(crate) tree: String,
    pub(crate) modes: Modes,
}

impl Store {
    /// The files that differ from checkpoint `from` to checkpoint `to`, or to the workspace
    /// as it is now when `to` is `None`, sorted by path.
    pub fn changed_files(&self, from: &Id, to: Option<&Id>) -> Result<Vec<Change>> {
        let _lock = self.lock()?;
        let (a, b) = self.endpoints(from, to)?;
        let mut changes: Vec<Change> = self
            .raw_diff(&a.tree, &b.tree)?
            .into_iter()
            .map(|c| Change {
                path: paths::from_bytes(&c.path),
                kind: match c.status {
                    b'A' => ChangeKind::Added,
                    b'D' => ChangeKind::Deleted,
                    b'T' => ChangeKind::TypeChanged,
                    _ => ChangeKind::Modified,
                },
            })
            .collect();
        for path in self.mode_changes(&a, &b)? {
            let path = paths::from_bytes(&path);
            if !changes.iter().any(|c| c.path == path) {
                changes.push(Change {
                    path,
                    kind: ChangeKind::ModeChanged,
                });
            }
        }
        changes.sort_by(|x, y| x.path.cmp(&y.path));
        Ok(changes)
    }

    /// A unified diff from checkpoint `from` to `to` (or to the workspace now), with paths
    /// relative to the workspace (`a/PATH`, `b/PATH`, as `git diff` and `patch -p1` read
    /// them). Binary files show as `Binary files … differ`; a change of permission bits alone
    /// shows as `old mode` / `new mode` lines.
    pub fn diff(&self, from: &Id, to: Option<&Id>) -> Result<String> {
        let _lock = self.lock()?;
        let (a, b) = self.endpoints(from, to)?;
        let out = self.git.run(&[
            "diff-tree",
            "-p",
            "-r",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            &a.tree,
            &b.tree,
        ])?;
        let mut text = String::from_utf8_lossy(&out).into_owned();
        let content_changed: Vec<Vec<u8>> = self
            .raw_diff(&a.tree, &b.tree)?
            .into_iter()
            .map(|c| c.path)
            .collect();
        for path in self.mode_changes(&a, &b)? {
            if content_changed.contains(&path) {
                continue;
            }
            let shown = String::from_utf8_lossy(&path);
            text.push_str(&format!(
                "diff --git a/{shown} b/{shown}\nold mode 10{:04o}\nnew mode 10{:04o}\n",
                a.modes.get(&path),
                b.modes.get(&path)
            ));
        }
        Ok(text)
    }

    fn endpoints(&self, from: &Id, to: Option<&Id>) -> Result<(State, State)> {
        let a = self.read(from)?;
        let b = match to {
            Some(id) => {
                let c = self.read(id)?;
                State {
                    tree: c.tree,
                    modes: c.modes,
                }
            }
            None => {
                let snap = self.snapshot()?;
                State {
                    tree: snap.tree,
                    modes: snap.modes,
                }
            }
        };
        Ok((
            State {
                tree: a.tree,
                modes: a.modes,
            },
            b,
        ))
    }

    /// Files whose content or kind differs between two trees.
    pub(crate) fn raw_diff(&self, a: &str, b: &str) -> Result<Vec<RawChange>> {
        let out = self
            .git
            .run(&["diff-tree", "-r", "-z", "--no-renames", "--raw", a, b])?;
        let mut records = split_nul(&out);
        let mut changes = Vec::new();
        // `:modeA modeB oidA oidB STATUS` then the path as its own record.
        while let Some(info) = records.next() {
            let Some(path) = records.next() else { break };
            let status = info.last().copied().unwrap_or(b'M');
            changes.push(RawChange {
                path: path.to_vec(),
                status,
            });
        }
        Ok(changes)
    }

    /// Regular files in both trees whose permission bits differ.
    fn mode_changes(&self, a: &State, b: &State) -> Result<Vec<Vec<u8>>> {
        if a.modes == b.modes {
            return Ok(Vec::new());
        }
        let in_a = self.regular_files(&a.tree)?;
        let in_b = self.regular_files(&b.tree)?;
        Ok(in_b
            .into_iter()
            .filter(|p| in_a.binary_search(p).is_ok() && a.modes.get(p) != b.modes.get(p))
            .collect())
    }

    /// The regular files of a tree, sorted.
    pub(crate) fn regular_files(&self, tree: &str) -> Result<Vec<Vec<u8>>> {
        let out = self.git.run(&["ls-tree", "-r", "-z", tree])?;
        let mut files: Vec<Vec<u8>> = split_nul(&out)
            .filter_map(|record| {
                // `<mode> <type> <object>\t<path>`
                let tab = record.iter().position(|b| *b == b'\t')?;
                let mode = record.split(|b| *b == b' ').next()?;
                matches!(mode, b"100644" | b"100755").then(|| record[tab + 1..].to_vec())
            })
            .collect();
        files.sort();
        Ok(files)
    }
}
