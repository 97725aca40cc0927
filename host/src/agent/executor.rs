//! The loop's view of tools. The only implementation in the product is the gateway (every call
//! is an MCP request through it); the seam exists so the loop does not know about rules, audit
//! or servers, and so the loop can be tested with a fake.

use async_trait::async_trait;
use tern_model::ToolSpec;
use tern_protocol::{ToolCall, ToolResult};
use tokio_util::sync::CancellationToken;

/// A plan a successful `plan__exit` call carried, with that call's id (the approval question is
/// asked on it: ACP's permission request names the call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposedPlan {
    pub call_id: String,
    pub plan: String,
}

/// Runs tool calls for the loop.
#[async_trait]
pub trait ToolExecutor: Send + Sync {
    /// Waits until the tool list is not mid-change (a server announced a change and is being
    /// listed again), so the next [`Self::tools`] reflects it. Called before every request.
    async fn settle(&self) {}
    /// The servers whose tools are not (all) in the table yet because they are still starting.
    fn starting(&self) -> Vec<String> {
        Vec::new()
    }
    /// The tools the model may call now (servers that became ready since the last request join
    /// here).
    fn tools(&self) -> Vec<ToolSpec>;
    /// Whether the tool only reads, so it may run concurrently with other reads.
    fn is_read_only(&self, name: &str) -> bool;
    /// The session's todo list as the tools last reported it (`_meta["tern/todo"]`), so a
    /// compaction's summary can carry it.
    fn todo(&self) -> Option<tern_protocol::todo::TodoList> {
        None
    }
    /// A new session began (`/clear`): the todo list reported so far is not its list.
    fn forget_todo(&self) {}
    /// The session is in plan mode now: the system prompt says so and how to finish.
    fn plan_mode(&self) -> bool {
        false
    }
    /// The plan a successful `plan__exit` result carried since the last call of this (taken:
    /// the loop ends the turn on it).
    fn take_plan(&self) -> Option<ProposedPlan> {
        None
    }
    /// A hook's `continue: false` on one of the step's calls since the last call of this
    /// (taken: the loop ends the turn with it).
    fn take_stop(&self) -> Option<String> {
        None
    }
    /// Runs one call. Must return a result for every call, whatever happens.
    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ToolResult;
}
