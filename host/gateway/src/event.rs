//! What the gateway reports. It never prints: the host subscribes and renders (issue 6 maps these
//! onto its `permission_decided` and `tool_call_finished` events).

use std::sync::Arc;

use serde::Serialize;

use crate::{audit::AuditRecord, call::Decision};

/// Receives gateway events. Called synchronously from the calling task: keep it cheap (push onto
/// a channel).
pub type EventSink = Arc<dyn Fn(GatewayEvent) + Send + Sync>;

/// An event that does nothing with events, for callers that only want results.
pub fn ignore_events() -> EventSink {
    Arc::new(|_| {})
}

/// Something the gateway did. Every string in an event has been through the redactor.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GatewayEvent {
    /// The permission stage decided a call (after asking, when it asked).
    PermissionDecided {
        call_id: String,
        /// Model-facing tool name.
        tool: String,
        server: String,
        decision: Decision,
        /// What decided it: `file:line`, `annotation:readOnlyHint`, `mode:yolo`, `user:always`, ….
        rule: String,
        /// Whether the user (or the headless approver) was asked.
        asked: bool,
        /// Why, in words; for a headless deny, the `--allow` rule that would permit the call.
        reason: Option<String>,
    },
    /// A call finished, in any way: the same record as its audit line.
    ToolCallFinished(AuditRecord),
    /// Something the user should know that is not tied to one result, e.g. an "always" rule that
    /// could not be saved to the config file.
    Notice { message: String },
}
