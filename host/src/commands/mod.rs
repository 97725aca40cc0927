//! The subcommands. Each takes the [`Workspace`](crate::workspace::Workspace), writes to the
//! writer it is given (stdout at the binary's edge) and returns the process exit code.

pub mod acp;
pub mod demo;
pub mod eval;
pub mod hooks;
pub mod login;
pub mod mcp;
pub mod mcp_skills;
pub mod plugin;
pub mod repl;
pub mod replay;
pub mod rewind;
pub mod run;
pub mod runs;
pub mod sandbox;
pub mod tools;
pub mod trust;
