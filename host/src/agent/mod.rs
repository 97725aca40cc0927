//! The engine: the agent loop and everything it is assembled from. It emits events and never
//! prints; it knows nothing of the terminal or the command line (`render` and `commands` use it,
//! never the other way round).

mod bus;
pub mod checkpoints;
mod compaction;
pub mod context;
mod conversation;
pub mod delegated;
mod engine;
mod executor;
mod gateway_tools;
pub mod inherit;
mod model;
mod model_call;
mod oversize;
pub mod replay;
mod resources;
mod run_loop;
mod secrets;
pub mod servers;
pub mod session;
pub mod session_list;
mod trace_file;

pub use bus::{EventBus, Subscriber};
pub use context::{SYSTEM_PROMPT, system_blocks};
pub use conversation::{Conversation, Reason};
pub use engine::hook_points::{EndReason, StartSource};
pub use engine::{Engine, EngineOptions, attach, plan_todo};
pub use executor::ToolExecutor;
pub use resources::{Outputs, RunResources};
pub use run_loop::{Agent, AgentSettings, TurnOutcome, summary};

/// The redactor a run in `ws` would use (the environment's keys, the stored OAuth tokens), for
/// commands that show what servers print without running an agent (`tern mcp list`).
pub fn redactor_for(ws: &crate::workspace::Workspace) -> tern_gateway::Redactor {
    tern_gateway::Redactor::new(secrets::for_run(ws))
}
