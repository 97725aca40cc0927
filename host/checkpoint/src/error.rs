//! What can go wrong with a checkpoint store, each with the next step where there is one (the
//! `hint:` line, printed by the binary with the rest of the message).

use std::path::PathBuf;

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors from a checkpoint store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `git` could not be run at all.
    #[error(
        "checkpoints need the system `git`, which cannot be run: {reason}\n\
         hint: install git, or turn checkpoints off with `[checkpoints] enabled = false`"
    )]
    GitMissing { reason: String },
    /// `git` runs but predates a feature the store relies on.
    #[error(
        "checkpoints need git {required} or newer; this is git {found}\n\
         hint: upgrade git, or turn checkpoints off with `[checkpoints] enabled = false`"
    )]
    GitTooOld {
        found: String,
        required: &'static str,
    },
    /// A `git` command the store ran failed.
    #[error("`git {command}` failed in the checkpoint store {store}: {stderr}")]
    Git {
        command: String,
        store: PathBuf,
        stderr: String,
    },
    /// A file or directory of the workspace or the store could not be read or written.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The workspace to keep checkpoints of is not a directory.
    #[error("{} is not a directory, so it has no checkpoints", path.display())]
    NotADirectory { path: PathBuf },
    /// A path of the store is a symlink: someone could redirect the store's writes with one.
    #[error(
        "{} is a symlink; tern does not keep checkpoints through one\n\
         hint: remove the symlink (tern recreates the directory)",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// The store's directory belongs to another workspace (a copied `$TERN_HOME`, or a hash
    /// collision).
    #[error(
        "the checkpoint store {} belongs to {}, not {}\n\
         hint: move that directory away to start a new store for this workspace",
        store.display(),
        recorded.display(),
        workspace.display()
    )]
    ForeignStore {
        store: PathBuf,
        recorded: PathBuf,
        workspace: PathBuf,
    },
    /// Not a checkpoint id.
    #[error("`{0}` is not a checkpoint id (40 or 64 hex digits)")]
    InvalidId(String),
    /// An id that is not (or no longer) in this workspace's store.
    #[error(
        "no checkpoint {id} in the store of {}\n\
         hint: list the checkpoints there are; old ones are pruned by age and size",
        workspace.display()
    )]
    UnknownCheckpoint { id: String, workspace: PathBuf },
    /// Recording would copy more new content than the configured bound: most likely the
    /// workspace is a home directory or holds build output or data not in `.gitignore`.
    #[error(
        "a checkpoint would copy {files} new or changed files of {bytes} bytes, over the \
         {limit}-byte limit for one checkpoint, so none was recorded\n\
         hint: add what need not be restorable (build output, data) to .gitignore, raise \
         `[checkpoints] max_checkpoint_bytes`, or set `[checkpoints] enabled = false`"
    )]
    TooLarge {
        files: usize,
        bytes: u64,
        limit: u64,
    },
    /// The store holds something this code did not write.
    #[error(
        "the checkpoint store {} is damaged: {detail}\n\
         hint: move the directory away to start over (its checkpoints are lost)",
        store.display()
    )]
    Corrupt { store: PathBuf, detail: String },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
