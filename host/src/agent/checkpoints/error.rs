//! Errors of a rewind, each with its next step (a leaf: the log, the rewinds and the
//! checkpointer all return them).

use std::path::PathBuf;

use super::{point::Point, session};

/// Errors of a rewind, each with the next step.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("session {session} has no turn {turn}\nhint: {listing}")]
    NoSuchTurn {
        session: String,
        turn: u64,
        listing: String,
    },
    #[error(
        "no checkpoint was recorded before turn {turn}, so its files cannot be put back\n\
         hint: checkpoints were off or failed then; `--conversation` rewinds the conversation alone"
    )]
    NoCheckpoint { turn: u64 },
    #[error("session {session} has no shell call {point}\nhint: {listing}")]
    NoSuchCall {
        session: String,
        point: Point,
        listing: String,
    },
    #[error(
        "the state before shell call {point} has files only: a turn's conversation is saved when \
         the turn ends\nhint: rewind its files with `--code` (`/rewind {point} code`), or the \
         conversation to before turn {turn}"
    )]
    CallPointIsCodeOnly { point: Point, turn: u64 },
    #[error(
        "nothing to undo: the last change to session {0} was not a rewind\n\
         hint: a rewind can be undone until the next turn or undo"
    )]
    NothingToUndo(String),
    #[error(transparent)]
    Store(#[from] tern_checkpoint::Error),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error("the turn log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a checkpoint task failed: {0}")]
    Task(String),
}
