//! The loop's view of tools. The only implementation in the product is the
//! gateway (every call is an MCP request through it); the seam exists so the
//! loop does not know about rules, audit or servers.

use async_trait::async_trait;
use tern_model::{ToolCall, ToolSpec};
use tokio_util::sync::CancellationToken;

/// The result of one tool call, as the loop needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecOutcome {
    /// Text for the model.
    pub content: String,
    pub is_error: bool,
    /// `unknown_tool`, `denied`, `timeout`, … when it failed.
    pub error_type: Option<String>,
    /// A unified diff, for edits.
    pub diff: Option<String>,
    /// Wall time of the call.
    pub duration_ms: u64,
}

/// Runs tool calls for the loop.
#[async_trait]
pub trait ToolExecutor: Send + Sync {
    /// The tools the model may call now (servers that became ready since the
    /// last request join here).
    fn tools(&self) -> Vec<ToolSpec>;
    /// Whether the tool only reads (may run concurrently with other reads).
    fn is_read_only(&self, name: &str) -> bool;
    /// Runs one call. Must return for every call, whatever happens.
    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ExecOutcome;
}
