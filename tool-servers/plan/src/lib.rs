//! tern-plan: an MCP server (stdio) with one tool, `exit`, which the model calls in plan mode
//! to hand over its finished plan (markdown).
//!
//! The server does nothing with the plan but return it: the *host* decides what a plan means
//! (tern ends the turn, emits `plan_proposed` and asks the user to approve). Keeping it a
//! server keeps tern's rule that the host never runs tool code in-process, and lets any MCP
//! client use the same tool.
//!
//! A successful result carries the plan as text and as `structuredContent` `{"plan": "…"}`
//! (declared in `outputSchema`). An empty plan is an `isError` result asking for one.
//! `exit` is annotated read-only: it changes nothing, so plan mode (which offers only
//! read-only tools) can offer it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod server;

pub use server::{ExitParams, PlanServer, Proposed};

/// Command-line flags, shared by `tern-plan` and `tern serve plan` (none yet).
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-plan",
    version,
    about = "tern's plan-mode MCP server over stdio"
)]
pub struct Args {}

/// One thread: a call copies one string.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::CurrentThread;

/// Runs the server over stdio until the client disconnects.
pub async fn run(_args: Args) -> Result<(), tern_tool_common::ServeError> {
    tracing::debug!("tern-plan serving");
    tern_tool_common::serve_stdio(PlanServer::new()).await
}
