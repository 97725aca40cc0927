//! What the pool reports, and the progress of calls in flight.
//!
//! The pool reports through the shared [`tern_protocol::EventSink`]: its events are the run's
//! events (`server_ready`, `server_failed`, `tools_changed`, …), so nothing maps them by hand.

use serde::Serialize;

pub use tern_protocol::EventSink;

/// One `notifications/progress` for a call in flight — or, for a call the server runs as a task,
/// a change of the task's status (`task` set; `message` then says it in words too).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub progress: f64,
    /// The editor terminal the call's command runs in, when the notification's `_meta` named
    /// one ([`tern_protocol::meta::TERMINAL`]).
    pub terminal_id: Option<String>,
    pub total: Option<f64>,
    pub message: Option<String>,
    pub task: Option<TaskProgress>,
    /// The last lines of the call's output, when the notification's `_meta` carried them
    /// ([`tern_protocol::meta::OUTPUT_TAIL`]), already bounded.
    pub tail: Option<Vec<String>>,
}

/// The state of the task a call became (2025-11-25 SEP-1686 or the 2026-07-28 tasks extension):
/// what `tasks/get` said when it last changed.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TaskProgress {
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed`, `cancelled`.
    pub status: String,
    /// The server's `statusMessage`.
    pub message: Option<String>,
}
