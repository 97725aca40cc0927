//! Checkpoints of a session (issue 20): the workspace recorded before each turn in the shadow
//! store of `tern-checkpoint`, and the session's turn log, so a rewind can put back the code,
//! the conversation or both as they were before any turn — and be undone.
//!
//! The turn log is `$TERN_HOME/sessions/<session>.turns.ndjson`, one [`Entry`] per line: for
//! each turn, the checkpoint taken before it and the length of the session transcript then
//! (the transcript file only grows — a compaction or a rewind appends a snapshot line — so a
//! length is a point in its history, valid across later compactions); for each rewind, what
//! undoing it goes back to. The headless `tern rewind` and the REPL's `/rewind` both call
//! [`rewind`] and [`undo`]: one implementation.
//!
//! The store is blocking (it runs `git`), so every call here that touches it runs on a
//! blocking thread.

use std::{
    io::Write,
    path::{Path, PathBuf},
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};
use tern_checkpoint::{Change, Id, Limits, Meta, Restored, Store};
use tern_model::Message;

use super::session;

mod gate;
mod point;

pub use gate::{Gate, ShellPoints};
pub use point::Point;

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

/// What to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewind {
    /// The files only.
    Code,
    /// The conversation only.
    Conversation,
    /// Both.
    Both,
}

impl Rewind {
    fn code(self) -> bool {
        matches!(self, Rewind::Code | Rewind::Both)
    }
    fn conversation(self) -> bool {
        matches!(self, Rewind::Conversation | Rewind::Both)
    }
}

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

fn append_log(sessions_dir: &Path, session: &str, entry: &Entry) -> Result<(), RewindError> {
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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A recorded turn, as `/rewind` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnInfo {
    pub turn: u64,
    pub time_ms: u64,
    pub message: String,
    pub checkpoint: Option<Id>,
    /// Files the turn changed (from its checkpoint to the next turn's, or to now for the last
    /// one); `None` without checkpoints.
    pub changed: Option<Vec<Change>>,
    /// The turn's shell calls, each a point of its own.
    pub calls: Vec<CallInfo>,
}

/// A shell call's point, as `/rewind` lists it under its turn.
#[derive(Debug, Clone, PartialEq)]
pub struct CallInfo {
    pub point: Point,
    pub time_ms: u64,
    pub command: String,
    pub checkpoint: Option<Id>,
    /// Files changed from this point to the next one (or to now).
    pub changed: Option<Vec<Change>>,
}

/// Opens the store of `workspace` under `home` with `[checkpoints]`'s limits (blocking).
pub fn open_store(
    home: &Path,
    workspace: &Path,
    section: &tern_config::CheckpointsSection,
) -> Result<Store, tern_checkpoint::Error> {
    let limits = Limits {
        max_file_bytes: section.max_file_bytes,
        ..Limits::default()
    };
    Store::open_with(home, workspace, limits)
}

/// What the engine keeps to checkpoint a session's turns.
pub struct Checkpointer {
    pub store: Option<Store>,
    pub sessions_dir: PathBuf,
    pub workspace: PathBuf,
}

/// What recording one turn's checkpoint did (the `checkpoint_recorded` event's content).
pub struct Recorded {
    pub turn: u64,
    /// The shell call of the turn it was taken before, when it was one.
    pub call: Option<u64>,
    pub checkpoint: Option<Id>,
    pub files: usize,
    pub reused: bool,
    pub duration_ms: u64,
    /// Why there is no checkpoint, when recording failed.
    pub error: Option<String>,
}

impl Checkpointer {
    /// Records the workspace before turn `message` of `session` and logs the turn (blocking:
    /// call it on a blocking thread). Without a store (checkpoints off), the turn is still
    /// logged, so `--conversation` can rewind it.
    pub fn before_turn(&self, session: &str, message: &str) -> Recorded {
        let started = Instant::now();
        let entries = read_log(&self.sessions_dir, session).unwrap_or_default();
        let turn = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Turn { turn, .. } => Some(*turn),
                _ => None,
            })
            .max()
            .unwrap_or(0)
            + 1;
        let mut recorded = Recorded {
            turn,
            call: None,
            checkpoint: None,
            files: 0,
            reused: false,
            duration_ms: 0,
            error: None,
        };
        self.record(&Meta::turn(session, turn, message), &mut recorded);
        let entry = Entry::Turn {
            turn,
            time_ms: now_ms(),
            message: message.to_string(),
            workspace: self.workspace.clone(),
            checkpoint: recorded.checkpoint.clone(),
            session_bytes: session::file_len(&self.sessions_dir, session),
        };
        if let Err(e) = append_log(&self.sessions_dir, session, &entry) {
            recorded.error.get_or_insert(e.to_string());
        }
        recorded.duration_ms = started.elapsed().as_millis() as u64;
        recorded
    }

    /// Takes the checkpoint `meta` describes into `recorded`, when there is a store (shared by
    /// the turn and shell-call points).
    fn record(&self, meta: &Meta, recorded: &mut Recorded) {
        let Some(store) = &self.store else { return };
        match store.checkpoint(meta) {
            Ok(cp) => {
                recorded.checkpoint = Some(cp.id);
                recorded.files = cp.files;
                recorded.reused = cp.reused;
            }
            Err(e) => recorded.error = Some(e.to_string()),
        }
    }

    /// Records the workspace before a shell call of the session's current turn and logs it
    /// (blocking). `command` is already redacted.
    pub fn before_call(&self, session: &str, call_id: &str, tool: &str, command: &str) -> Recorded {
        let started = Instant::now();
        let entries = read_log(&self.sessions_dir, session).unwrap_or_default();
        let turn = turns(&entries).last().map_or(0, |t| t.turn);
        let call = entries
            .iter()
            .filter(|e| matches!(e, Entry::Call { turn: t, .. } if *t == turn))
            .count() as u64
            + 1;
        let mut recorded = Recorded {
            turn,
            call: Some(call),
            checkpoint: None,
            files: 0,
            reused: false,
            duration_ms: 0,
            error: None,
        };
        let meta = Meta {
            kind: tern_checkpoint::Kind::Shell,
            session: Some(session.to_string()),
            turn: Some(turn),
            message: Some(command.to_string()),
        };
        self.record(&meta, &mut recorded);
        let entry = Entry::Call {
            turn,
            call,
            time_ms: now_ms(),
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            command: command.to_string(),
            workspace: self.workspace.clone(),
            checkpoint: recorded.checkpoint.clone(),
        };
        if let Err(e) = append_log(&self.sessions_dir, session, &entry) {
            recorded.error.get_or_insert(e.to_string());
        }
        recorded.duration_ms = started.elapsed().as_millis() as u64;
        recorded
    }
}

/// A point of the log with a checkpoint: a turn's or a shell call's, in the order taken.
struct PointRef<'a> {
    point: Point,
    time_ms: u64,
    label: &'a str,
    workspace: &'a Path,
    checkpoint: Option<&'a Id>,
}

fn points(entries: &[Entry]) -> Vec<PointRef<'_>> {
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
struct TurnRef<'a> {
    turn: u64,
    time_ms: u64,
    message: &'a str,
    workspace: &'a Path,
    checkpoint: Option<&'a Id>,
    session_bytes: u64,
}

fn turns(entries: &[Entry]) -> Vec<TurnRef<'_>> {
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

/// The session's turns with what each changed, and under each its shell-call points
/// (blocking). `home` is `$TERN_HOME`.
pub fn list_turns(
    home: &Path,
    sessions_dir: &Path,
    session: &str,
    section: &tern_config::CheckpointsSection,
) -> Result<Vec<TurnInfo>, RewindError> {
    let entries = read_log(sessions_dir, session)?;
    let turns = turns(&entries);
    let points = points(&entries);
    let mut stores: Vec<(PathBuf, Option<Store>)> = Vec::new();
    let mut changed = |workspace: &Path, from: Option<&Id>, to: Option<&Id>| {
        let from = from?;
        if !stores.iter().any(|(w, _)| w.as_path() == workspace) {
            stores.push((
                workspace.to_path_buf(),
                open_store(home, workspace, section).ok(),
            ));
        }
        let store = stores
            .iter()
            .find(|(w, _)| w.as_path() == workspace)
            .and_then(|(_, s)| s.as_ref())?;
        store.changed_files(from, to).ok()
    };
    let mut out = Vec::new();
    for (i, t) in turns.iter().enumerate() {
        let next = turns
            .get(i + 1)
            .filter(|next| next.workspace == t.workspace)
            .and_then(|next| next.checkpoint);
        let turn_changed = changed(t.workspace, t.checkpoint, next);
        let mut calls = Vec::new();
        for (j, p) in points.iter().enumerate() {
            if p.point.turn != t.turn || p.point.call.is_none() {
                continue;
            }
            let next = points
                .get(j + 1)
                .filter(|next| next.workspace == p.workspace)
                .and_then(|next| next.checkpoint);
            calls.push(CallInfo {
                point: p.point,
                time_ms: p.time_ms,
                command: p.label.to_string(),
                checkpoint: p.checkpoint.cloned(),
                changed: changed(p.workspace, p.checkpoint, next),
            });
        }
        out.push(TurnInfo {
            turn: t.turn,
            time_ms: t.time_ms,
            message: t.message.to_string(),
            checkpoint: t.checkpoint.cloned(),
            changed: turn_changed,
            calls,
        });
    }
    Ok(out)
}

/// What a rewind (or its undo) did.
#[derive(Debug, Default)]
pub struct Rewound {
    /// The code restore, when the code was rewound.
    pub restored: Option<Restored>,
    /// The conversation after the rewind, when it was rewound.
    pub conversation: Option<Vec<Message>>,
}

fn listing(entries: &[Entry]) -> String {
    let turns = turns(entries);
    match (turns.first(), turns.last()) {
        (Some(first), Some(last)) => format!(
            "its turns are {}..={}; `/rewind` (or `tern rewind` without `--to`) lists them \
             with their shell calls (TURN.CALL)",
            first.turn, last.turn
        ),
        _ => "it has no recorded turn yet".to_string(),
    }
}

/// Rewinds `session` to `point` (blocking): before a turn, the files to the checkpoint taken
/// before it, the conversation to where it stood then, or both; before a shell call, the files
/// only (the conversation of a turn is saved when it ends). Logged so [`undo`] can reverse it.
/// The code restore records the workspace first, so nothing is lost.
pub fn rewind(
    home: &Path,
    sessions_dir: &Path,
    session: &str,
    point: Point,
    what: Rewind,
    section: &tern_config::CheckpointsSection,
) -> Result<Rewound, RewindError> {
    let entries = read_log(sessions_dir, session)?;
    let turn = point.turn;
    let Some(t) = turns(&entries).into_iter().find(|t| t.turn == turn) else {
        return Err(RewindError::NoSuchTurn {
            session: session.to_string(),
            turn,
            listing: listing(&entries),
        });
    };
    let (workspace, checkpoint) = match point.call {
        None => (t.workspace, t.checkpoint),
        Some(_) => {
            let Some(p) = points(&entries).into_iter().find(|p| p.point == point) else {
                return Err(RewindError::NoSuchCall {
                    session: session.to_string(),
                    point,
                    listing: listing(&entries),
                });
            };
            if what.conversation() {
                return Err(RewindError::CallPointIsCodeOnly { point, turn });
            }
            (p.workspace, p.checkpoint)
        }
    };
    let mut out = Rewound::default();
    let mut code_before = None;
    if what.code() {
        let id = checkpoint.ok_or(RewindError::NoCheckpoint { turn })?;
        let store = open_store(home, workspace, section)?;
        let restored = store.restore(id)?;
        code_before = Some(restored.before.clone());
        out.restored = Some(restored);
    }
    let mut session_bytes_before = None;
    if what.conversation() {
        session_bytes_before = Some(session::file_len(sessions_dir, session));
        let messages = session::load_until(sessions_dir, session, t.session_bytes)?;
        // Already redacted: they were read back from the transcript.
        session::append_snapshot(sessions_dir, session, &messages, &|l| l.to_string())?;
        out.conversation = Some(messages);
    }
    append_log(
        sessions_dir,
        session,
        &Entry::Rewind {
            to_turn: turn,
            to_call: point.call,
            time_ms: now_ms(),
            workspace: workspace.to_path_buf(),
            code_before,
            session_bytes_before,
        },
    )?;
    Ok(out)
}

/// Undoes the rewind of `session` that was its last change (no turn since; blocking): the
/// files as it found them, the conversation as it was before it.
pub fn undo(
    home: &Path,
    sessions_dir: &Path,
    session: &str,
    section: &tern_config::CheckpointsSection,
) -> Result<Rewound, RewindError> {
    let entries = read_log(sessions_dir, session)?;
    let Some(Entry::Rewind {
        code_before,
        session_bytes_before,
        workspace,
        ..
    }) = entries.last()
    else {
        return Err(RewindError::NothingToUndo(session.to_string()));
    };
    let mut out = Rewound::default();
    if let Some(id) = code_before {
        let store = open_store(home, workspace, section)?;
        out.restored = Some(store.restore(id)?);
    }
    if let Some(bytes) = session_bytes_before {
        let messages = session::load_until(sessions_dir, session, *bytes)?;
        session::append_snapshot(sessions_dir, session, &messages, &|l| l.to_string())?;
        out.conversation = Some(messages);
    }
    append_log(sessions_dir, session, &Entry::Undo { time_ms: now_ms() })?;
    Ok(out)
}

/// The diff of the workspace since the checkpoint before `turn` (the latest turn when
/// `None`), blocking.
pub fn diff_since(
    home: &Path,
    sessions_dir: &Path,
    session: &str,
    turn: Option<u64>,
    section: &tern_config::CheckpointsSection,
) -> Result<(u64, String), RewindError> {
    let entries = read_log(sessions_dir, session)?;
    let all = turns(&entries);
    let found = match turn {
        Some(n) => all.iter().find(|t| t.turn == n),
        None => all.iter().rev().find(|t| t.checkpoint.is_some()),
    };
    let Some(TurnRef {
        turn: n,
        workspace,
        checkpoint,
        ..
    }) = found
    else {
        return Err(RewindError::NoSuchTurn {
            session: session.to_string(),
            turn: turn.unwrap_or(0),
            listing: listing(&entries),
        });
    };
    let id = (*checkpoint).ok_or(RewindError::NoCheckpoint { turn: *n })?;
    let store = open_store(home, workspace, section)?;
    Ok((*n, store.diff(id, None)?))
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

    #[test]
    fn a_conversation_rewind_goes_back_to_the_transcript_before_the_turn_and_undoes() {
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path();
        let keep = |s: &str| s.to_string();
        let cp = Checkpointer {
            store: None,
            sessions_dir: sessions.to_path_buf(),
            workspace: dir.path().to_path_buf(),
        };
        assert_eq!(cp.before_turn("s", "one").turn, 1);
        session::append(sessions, "s", &[Message::user_text("one")], &keep).unwrap();
        assert_eq!(cp.before_turn("s", "two").turn, 2);
        session::append(sessions, "s", &[Message::user_text("two")], &keep).unwrap();
        let section = tern_config::CheckpointsSection::default();
        let home = dir.path().join("home");
        let err = rewind(&home, sessions, "s", Point::turn(2), Rewind::Code, &section).unwrap_err();
        assert!(
            matches!(err, RewindError::NoCheckpoint { turn: 2 }),
            "{err}"
        );
        let err = rewind(&home, sessions, "s", Point::turn(9), Rewind::Both, &section).unwrap_err();
        assert!(err.to_string().contains("turns are 1..=2"), "{err}");
        let done = rewind(
            &home,
            sessions,
            "s",
            Point::turn(2),
            Rewind::Conversation,
            &section,
        )
        .unwrap();
        assert_eq!(done.conversation, Some(vec![Message::user_text("one")]));
        assert_eq!(
            session::load(sessions, "s").unwrap(),
            vec![Message::user_text("one")]
        );
        undo(&home, sessions, "s", &section).unwrap();
        assert_eq!(
            session::load(sessions, "s").unwrap(),
            vec![Message::user_text("one"), Message::user_text("two")]
        );
        assert!(matches!(
            undo(&home, sessions, "s", &section),
            Err(RewindError::NothingToUndo(_))
        ));
    }
}
