//! The turn log, `$TERN_HOME/sessions/<session>.turns.ndjson`: one [`Entry`] per line, and
//! the turns and points read back from it.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use tern_checkpoint::Id;

use super::{error::RewindError, point::Point};

/// One line of the turn log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A turn began: the state before it.
    Turn {
        /// 1-based, in the order the session's turns began.
        turn: u64,
        /// Milliseconds since the epoch.
        time_ms: u64,
        /// The user's message, as sent.
        message: String,
        /// The workspace the checkpoint is of.
        workspace: PathBuf,
        /// The checkpoint before the turn (none when checkpoints are off or it failed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<Id>,
        /// The transcript file's length before the turn.
        session_bytes: u64,
    },
    /// A shell call of the current turn is about to run: the state before it.
    Call {
        /// The turn it belongs to.
        turn: u64,
        /// 1-based among the turn's shell calls (`/rewind TURN.CALL`).
        call: u64,
        time_ms: u64,
        /// The model's call id.
        call_id: String,
        tool: String,
        /// The command line, redacted.
        command: String,
        workspace: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<Id>,
    },
    /// A rewind ran: what it changed, and what undoing it restores.
    Rewind {
        to_turn: u64,
        /// The shell call of `to_turn` it went back to before, when it was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to_call: Option<u64>,
        time_ms: u64,
        /// The workspace whose files were rewound.
        workspace: PathBuf,
        /// The workspace as the rewind found it (the code was rewound).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code_before: Option<Id>,
        /// The transcript file's length before the rewind (the conversation was rewound).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_bytes_before: Option<u64>,
    },
    /// The last rewind was undone.
    Undo { time_ms: u64 },
}

/// The turn log of `session`.
pub fn log_path(sessions_dir: &Path, session: &str) -> PathBuf {
    sessions_dir.join(format!("{session}.turns.ndjson"))
}

/// The entries of the turn log (none before the first turn). A line that does not parse is
/// skipped: the log is an index; the transcript and the store are the data.
pub fn read_log(sessions_dir: &Path, session: &str) -> Result<Vec<Entry>, RewindError> {
    let path = log_path(sessions_dir, session);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(RewindError::Log { path, source }),
    }
}

pub(super) fn append_log(
    sessions_dir: &Path,
    session: &str,
    entry: &Entry,
) -> Result<(), RewindError> {
    let path = log_path(sessions_dir, session);
    let err = |source| RewindError::Log {
        path: path.clone(),
        source,
    };
    let mut line = serde_json::to_string(entry).map_err(|e| err(std::io::Error::other(e)))?;
    line.push('\n');
    let mut file = tern_protocol::files::open_append(&path).map_err(err)?;
    file.write_all(line.as_bytes()).map_err(err)
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A point of the log with a checkpoint: a turn's or a shell call's, in the order taken.
pub(super) struct PointRef<'a> {
    pub(super) point: Point,
    pub(super) time_ms: u64,
    pub(super) label: &'a str,
    pub(super) workspace: &'a Path,
    pub(super) checkpoint: Option<&'a Id>,
}

pub(super) fn points(entries: &[Entry]) -> Vec<PointRef<'_>> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Turn {
                turn,
                time_ms,
                message,
                workspace,
                checkpoint,
                ..
            } => Some(PointRef {
                point: Point::turn(*turn),
                time_ms: *time_ms,
                label: message,
                workspace,
                checkpoint: checkpoint.as_ref(),
            }),
            Entry::Call {
                turn,
                call,
                time_ms,
                command,
                workspace,
                checkpoint,
                ..
            } => Some(PointRef {
                point: Point {
                    turn: *turn,
                    call: Some(*call),
                },
                time_ms: *time_ms,
                label: command,
                workspace,
                checkpoint: checkpoint.as_ref(),
            }),
            _ => None,
        })
        .collect()
}

/// A [`Entry::Turn`], borrowed.
pub(super) struct TurnRef<'a> {
    pub(super) turn: u64,
    pub(super) time_ms: u64,
    pub(super) message: &'a str,
    pub(super) workspace: &'a Path,
    pub(super) checkpoint: Option<&'a Id>,
    pub(super) session_bytes: u64,
}

pub(super) fn turns(entries: &[Entry]) -> Vec<TurnRef<'_>> {
    entries
        .iter()
        .filter_map(|e| match e {
            Entry::Turn {
                turn,
                time_ms,
                message,
                workspace,
                checkpoint,
                session_bytes,
            } => Some(TurnRef {
                turn: *turn,
                time_ms: *time_ms,
                message,
                workspace,
                checkpoint: checkpoint.as_ref(),
                session_bytes: *session_bytes,
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_log_round_trips_and_skips_a_broken_line() {
        let dir = tempfile::tempdir().unwrap();
        let entry = Entry::Turn {
            turn: 1,
            time_ms: 5,
            message: "fix it".into(),
            workspace: "/w".into(),
            checkpoint: None,
            session_bytes: 0,
        };
        append_log(dir.path(), "s", &entry).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(log_path(dir.path(), "s"))
            .unwrap()
            .write_all(b"{broken\n")
            .unwrap();
        append_log(dir.path(), "s", &Entry::Undo { time_ms: 6 }).unwrap();
        let entries = read_log(dir.path(), "s").unwrap();
        assert_eq!(entries, vec![entry, Entry::Undo { time_ms: 6 }]);
        assert!(read_log(dir.path(), "none").unwrap().is_empty());
    }
}
