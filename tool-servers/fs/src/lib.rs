//! tern-fs: a standalone MCP server (being built).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod resolve;

/// Command-line flags, shared by `tern-fs` and `tern serve fs`.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "tern-fs", version, about = "tern's fs MCP server over stdio")]
pub struct Args {}

/// Runs the server over stdio until the client disconnects.
pub async fn run(_args: Args) -> Result<(), tern_tool_common::ServeError> {
    Ok(())
}
