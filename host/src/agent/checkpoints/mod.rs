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

use std::{path::PathBuf, time::Instant};

use tern_checkpoint::{Id, Meta, Store};

use super::session;

mod error;
mod gate;
mod log;
mod point;
mod rewind;

pub use error::RewindError;
pub use gate::{Gate, ShellPoints};
pub use log::{Entry, log_path, read_log};
use log::{append_log, now_ms, turns};
pub use point::Point;
pub use rewind::{
    CallInfo, Rewind, Rewound, TurnInfo, diff_since, list_turns, open_store, rewind, undo,
};

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

#[cfg(test)]
mod tests {
    use tern_model::Message;

    use super::*;

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
