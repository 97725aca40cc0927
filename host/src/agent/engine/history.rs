//! The session's history: the transcript appended to the session file after each turn, and the
//! checkpoints behind `/rewind` and `/diff`.

use tern_protocol::Event;

use super::Engine;
use crate::agent::{
    checkpoints::{self, Point, Rewind, RewindError, Rewound, TurnInfo},
    session,
};

impl Engine {
    /// This session's turns, with the files each changed (`/rewind`).
    pub async fn turns(&self) -> Result<Vec<TurnInfo>, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        blocking(move || checkpoints::list_turns(&home, &sessions, &session, &section)).await
    }

    /// Rewinds this session to `point` (`/rewind`): before a turn the files, the conversation
    /// or both; before a shell call the files. A rewound conversation is the one the next
    /// request sends.
    pub async fn rewind(&mut self, point: Point, what: Rewind) -> Result<Rewound, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        let done = blocking(move || {
            checkpoints::rewind(&home, &sessions, &session, point, what, &section)
        })
        .await?;
        self.adopt(&done);
        Ok(done)
    }

    /// Undoes the last rewind (`/rewind undo`).
    pub async fn undo_rewind(&mut self) -> Result<Rewound, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        let done =
            blocking(move || checkpoints::undo(&home, &sessions, &session, &section)).await?;
        self.adopt(&done);
        Ok(done)
    }

    /// The diff of the workspace since the checkpoint before `turn` (the latest) — `/diff`.
    pub async fn diff_since(&self, turn: Option<u64>) -> Result<(u64, String), RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        blocking(move || checkpoints::diff_since(&home, &sessions, &session, turn, &section)).await
    }

    fn rewind_args(
        &self,
    ) -> (
        std::path::PathBuf,
        std::path::PathBuf,
        String,
        tern_config::CheckpointsSection,
    ) {
        (
            self.tern_home.clone(),
            self.sessions_dir.clone(),
            self.session_id.clone(),
            self.checkpoints.clone(),
        )
    }

    /// Takes a rewound conversation as the transcript (already saved to the session).
    fn adopt(&mut self, done: &Rewound) {
        if let Some(messages) = &done.conversation {
            self.conv.transcript = messages.clone();
            self.conv.budget.forget_from(0);
            self.conv.compacted = false;
        }
    }

    /// Appends what joined the transcript since `before` to the session — or, after a
    /// compaction rewrote it, the whole compacted transcript.
    pub(super) fn save(&mut self, before: usize) {
        let redactor = self.redactor.clone();
        // Image data is kept whole: a secret shape found in base64 by chance is no secret.
        let redact =
            |line: &str| crate::agent::context::images::redact_keeping_images(&redactor, line);
        let saved = if self.conv.compacted {
            self.conv.compacted = false;
            session::append_snapshot(
                &self.sessions_dir,
                &self.session_id,
                &self.conv.transcript,
                &redact,
            )
        } else {
            let from = before.min(self.conv.transcript.len());
            session::append(
                &self.sessions_dir,
                &self.session_id,
                &self.conv.transcript[from..],
                &redact,
            )
        };
        let saved = saved.and_then(|()| {
            session::note_workspace(&self.sessions_dir, &self.session_id, &self.workspace)
        });
        if let Err(e) = saved {
            self.bus.emit(Event::Error {
                message: format!("session not saved: {e}"),
            });
        }
    }
}

/// Runs a blocking checkpoint call on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RewindError> + Send + 'static,
) -> Result<T, RewindError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RewindError::Task(e.to_string()))?
}
