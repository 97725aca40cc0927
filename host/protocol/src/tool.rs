//! A tool call and its result: the same two types from the model's stream, through the gateway,
//! into the transcript and the events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the matching [`ToolResult::call_id`] repeats it.
    pub id: String,
    /// The model-facing tool name, `server__tool`.
    pub name: String,
    /// The arguments, a JSON object when the model's call was complete.
    pub arguments: Value,
}

/// An image a tool returned, passed to the model as image content where the provider takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, …
    pub mime_type: String,
    /// Base64, as the server sent it.
    pub data: String,
}

/// The outcome of one tool call: what the model reads next turn.
///
/// Every call the model makes gets exactly one, whether the tool ran, failed, was denied or was
/// never run; `error` says which layer made it fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    #[serde(alias = "tool_call_id")]
    pub call_id: String,
    /// What the model reads (capped and redacted by the gateway). May be empty.
    pub content: String,
    /// Images the tool returned, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The call failed, or the tool itself reported an error (`isError: true`).
    #[serde(default)]
    pub is_error: bool,
    /// Why the call failed when tern (not the tool) made it fail. `None` with `is_error` means
    /// the tool ran and answered with an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorKind>,
    /// A unified diff the tool returned (an MCP resource of type `text/x-diff`), for display;
    /// its text is also part of `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl ToolResult {
    /// A successful result holding `content`.
    pub fn text(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            images: Vec::new(),
            is_error: false,
            error: None,
            diff: None,
        }
    }

    /// A result for a call that failed for `kind`, explained to the model by `message`.
    pub fn failed(call_id: impl Into<String>, kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            is_error: true,
            error: Some(kind),
            ..Self::text(call_id, message)
        }
    }
}

/// Why a call did not produce a normal result. Exhaustive matches on it are intended: a new kind
/// must be decided on everywhere (the trace, the terminal, the exit status of replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
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
    /// The server died during the call.
    ServerCrashed,
    /// The server is not running: it failed to start, is still starting, or is restarting.
    ServerUnavailable,
    /// The connection failed in another way.
    Transport,
    /// The same call was repeated too often in a row; the loop answered instead of running it.
    RepeatedCall,
    /// The model's call was cut off or malformed and could not be run.
    IncompleteCall,
}

impl ErrorKind {
    /// The snake_case name used in results, events and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::Denied => "denied",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::ServerError => "server_error",
            ErrorKind::ServerCrashed => "server_crashed",
            ErrorKind::ServerUnavailable => "server_unavailable",
            ErrorKind::Transport => "transport",
            ErrorKind::RepeatedCall => "repeated_call",
            ErrorKind::IncompleteCall => "incomplete_call",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A permission outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call may run.
    Allow,
    /// It may not.
    Deny,
}

impl Decision {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_serialize_as_their_names() {
        for kind in [
            ErrorKind::UnknownTool,
            ErrorKind::InvalidArguments,
            ErrorKind::Denied,
            ErrorKind::Timeout,
            ErrorKind::Cancelled,
            ErrorKind::ServerError,
            ErrorKind::ServerCrashed,
            ErrorKind::ServerUnavailable,
            ErrorKind::Transport,
            ErrorKind::RepeatedCall,
            ErrorKind::IncompleteCall,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
            assert_eq!(serde_json::from_value::<ErrorKind>(json).unwrap(), kind);
        }
    }

    #[test]
    fn results_read_the_old_transcript_field_name() {
        let old = r#"{"tool_call_id":"t1","content":"ok","is_error":false}"#;
        let r: ToolResult = serde_json::from_str(old).unwrap();
        assert_eq!(r, ToolResult::text("t1", "ok"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"call_id":"t1","content":"ok","is_error":false})
        );
    }
}
