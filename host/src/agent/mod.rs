//! The agent: the loop that turns a goal into model turns and tool calls.

mod executor;
mod run_loop;

pub use executor::{ExecOutcome, ToolExecutor};
pub use run_loop::{Agent, AgentSettings, TurnOutcome};
