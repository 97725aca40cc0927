//! Listing a session's turns and shell-call points, rewinding to one of them (code,
//! conversation or both), undoing that, and the diff since a turn.

use std::path::{Path, PathBuf};

use tern_checkpoint::{Change, Id, Limits, Restored, Store};
use tern_model::Message;

use super::{
    error::RewindError,
    log::{Entry, TurnRef, append_log, now_ms, points, read_log, turns},
    point::Point,
    session,
};

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
