//! tern-web: a standalone MCP server (stub; being built).
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// Command-line flags, shared by `tern-web` and `tern serve web`.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "tern-web", version, about = "tern's web MCP server over stdio")]
pub struct Args {}

/// Runs the server over stdio until the client disconnects.
pub async fn run(_args: Args) -> Result<(), tern_tool_common::ServeError> {
    Ok(())
}
