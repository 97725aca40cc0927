//! What the pool reports, and the progress of calls in flight.
//!
//! The pool reports through the shared [`tern_protocol::EventSink`]: its events are the run's
//! events (`server_ready`, `server_failed`, `tools_changed`, …), so nothing maps them by hand.

use serde::Serialize;

pub use tern_protocol::EventSink;

/// One `notifications/progress` for a call in flight.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}
