//! What the pool reports. The host maps these onto its own event bus.

use std::sync::Arc;

use serde::Serialize;

/// A receiver of pool events. Called synchronously from pool tasks: keep it cheap
/// (push onto a channel).
pub type EventSink = Arc<dyn Fn(PoolEvent) + Send + Sync>;

/// Something that happened to a server.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PoolEvent {
    /// A server finished initialize and tools/list.
    ServerReady {
        server: String,
        transport: &'static str,
        pid: Option<u32>,
        tools: usize,
        startup_ms: u64,
        protocol_version: String,
        server_name: String,
        server_version: String,
    },
    /// A server failed to start, or crashed. `will_restart` says whether supervision
    /// tries again.
    ServerFailed {
        server: String,
        reason: String,
        stderr_tail: Vec<String>,
        will_restart: bool,
        required: bool,
    },
    /// A crashed server is about to be restarted.
    ServerRestarting {
        server: String,
        attempt: usize,
        delay_ms: u64,
    },
    /// The server's tool list was re-read (after `notifications/tools/list_changed`
    /// or a restart).
    ToolsChanged { server: String, tools: usize },
    /// A tool was left out of the table (invalid schema, pin mismatch, collision note).
    ToolDropped {
        server: String,
        tool: String,
        reason: String,
    },
    /// A log message the server sent (`notifications/message`).
    ServerLog {
        server: String,
        level: String,
        logger: Option<String>,
        data: serde_json::Value,
    },
}

/// One `notifications/progress` for a call in flight.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}
