//! What goes into the gateway and what comes out of it.

use std::{path::PathBuf, time::Duration};

use serde::Serialize;
use tern_mcp::Progress;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// One tool call the model made.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The model's id for the call; the result carries it back and files are named after it.
    pub call_id: String,
    /// The model-facing tool name, `server__tool`.
    pub name: String,
    /// The arguments as the model wrote them (checked against the schema before anything else).
    pub arguments: serde_json::Value,
}

/// Where the call happens: identifiers for the audit, and the controls of the running turn.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The run (`$TERN_HOME/runs/<run_id>/`).
    pub run_id: String,
    /// The session the run belongs to.
    pub session_id: String,
    /// Cancelled on Ctrl-C: an approval prompt or a call in flight ends with a `cancelled` result.
    pub cancel: CancellationToken,
    /// Receives the server's progress notifications while the call runs.
    pub progress: Option<UnboundedSender<Progress>>,
}

/// Why a call did not produce a normal result. A tool's own `isError: true` answer is not one of
/// these: it comes back with `is_error: true` and no `error_type`, since the call itself worked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorType {
    /// No tool of that name.
    UnknownTool,
    /// The arguments do not satisfy the tool's input schema.
    InvalidArguments,
    /// A rule, a mode, or the user said no.
    Denied,
    /// The call took longer than its timeout.
    Timeout,
    /// The user cancelled (Ctrl-C).
    Cancelled,
    /// The server answered with a JSON-RPC error.
    ServerError,
    /// The server died during the call, or is down.
    ServerCrashed,
    /// The connection failed in another way.
    Transport,
}

impl ErrorType {
    /// The snake_case name used in results, events and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::UnknownTool => "unknown_tool",
            ErrorType::InvalidArguments => "invalid_arguments",
            ErrorType::Denied => "denied",
            ErrorType::Timeout => "timeout",
            ErrorType::Cancelled => "cancelled",
            ErrorType::ServerError => "server_error",
            ErrorType::ServerCrashed => "server_crashed",
            ErrorType::Transport => "transport",
        }
    }
}

/// The permission outcome as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

/// Facts about a result for the loop, the trace and the audit.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResultMetadata {
    /// The text given to the model was cut to head + tail.
    pub truncated: bool,
    /// Characters of the full output text.
    pub original_size: usize,
    /// From the start of the gateway call to its result.
    #[serde(with = "duration_ms")]
    pub duration: Duration,
    /// Where the full output was written when it was cut.
    pub spill_path: Option<PathBuf>,
    /// The permission decision (none when the call failed before the permission stage).
    pub decision: Option<Decision>,
    /// What decided it: `file:line`, `annotation:readOnlyHint`, `mode:yolo`, `user:always`, ….
    pub rule: Option<String>,
    /// The server's `structuredContent` (redacted), when it gave one.
    pub structured: Option<serde_json::Value>,
}

/// The one result of one call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolResult {
    /// The call it answers.
    pub call_id: String,
    /// What the model reads (capped, redacted).
    pub content: String,
    /// The call failed or the tool reported an error.
    pub is_error: bool,
    /// Why the call failed, when the gateway or the transport made it fail.
    pub error_type: Option<ErrorType>,
    pub metadata: ResultMetadata,
}

impl ToolResult {
    /// An error result made by the gateway itself.
    pub(crate) fn error(call_id: &str, error_type: ErrorType, content: String) -> Self {
        Self {
            call_id: call_id.to_owned(),
            content,
            is_error: true,
            error_type: Some(error_type),
            metadata: ResultMetadata::default(),
        }
    }
}

pub(crate) mod duration_ms {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}
