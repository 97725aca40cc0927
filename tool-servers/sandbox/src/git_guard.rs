//! With `[sandbox] git_writes` the `.git` directory is writable, and a bind
//! mount cannot keep a command from *creating* a control entry that does not
//! exist yet (`.git/commondir` naming a hostile copy of the repository,
//! `.git/modules/x/config`, `.git/worktrees/…`). So the entries missing before
//! a call are looked for after it: anything created is removed before the
//! user's next `git` command can read it, and reported.

use std::path::{Path, PathBuf};

use crate::policy::{GIT_CONTROL_ENTRIES, GitWrites, Policy};

/// The control entries missing from each writable root's `.git` before a call.
#[derive(Debug, Default)]
pub struct GitGuard {
    missing: Vec<PathBuf>,
}

impl GitGuard {
    /// Notes what is missing now. Empty (nothing to check) unless the policy
    /// lets commands write to `.git`.
    pub fn before(policy: &Policy) -> Self {
        if policy.git != GitWrites::Objects {
            return Self::default();
        }
        let missing = policy
            .writable_roots
            .iter()
            .map(|root| root.join(".git"))
            .filter(|git| git.is_dir())
            .flat_map(|git| GIT_CONTROL_ENTRIES.map(|e| git.join(e)))
            .filter(|entry| entry.symlink_metadata().is_err())
            .collect();
        Self { missing }
    }

    /// Removes every noted entry that a command created, and says which.
    pub fn after(self) -> Vec<String> {
        let mut notes = Vec::new();
        for entry in self.missing {
            let Ok(meta) = entry.symlink_metadata() else {
                continue;
            };
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&entry)
            } else {
                std::fs::remove_file(&entry)
            };
            notes.push(match removed {
                Ok(()) => format!(
                    "{} was created by the command and has been removed: git would read it \
                     outside the sandbox",
                    display(&entry)
                ),
                Err(e) => format!(
                    "{} was created by the command and could not be removed ({e}); remove it \
                     before running git",
                    display(&entry)
                ),
            });
            tracing::warn!(path = %entry.display(), "git control entry created in the sandbox");
        }
        notes
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
