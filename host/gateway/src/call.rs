//! What goes into the gateway besides the call itself, and what comes out besides the result.

use std::{path::PathBuf, time::Duration};

use serde::Serialize;
use tern_mcp::Progress;
use tern_protocol::{Decision, ToolResult};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

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
    /// Extra entries for the request's `_meta` (the W3C `traceparent` of the call's span when
    /// telemetry is on). tern's own `tern/…` keys are set after these and cannot be overridden.
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// Facts about a finished call for the trace and the audit (the model sees only the result).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CallMeta {
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
    /// The result's `_meta` (redacted), when it gave one (e.g. `tern/usage`: tokens a
    /// sub-agent spent on the call).
    pub result_meta: Option<serde_json::Value>,
    /// A hook answered `continue: false`: the run stops after this call, for this reason
    /// (Claude Code's `stopReason`, shown to the person, not the model).
    pub stop: Option<String>,
}

/// What one gateway call produced: the result for the model, and the facts about the call.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: ToolResult,
    pub meta: CallMeta,
}

pub(crate) mod duration_ms {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}
