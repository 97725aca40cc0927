//! Command-line interface: the `tern` binary's arguments.

use clap::{Parser, Subcommand};

/// tern — a terminal AI agent whose every capability is an MCP server.
#[derive(Debug, Parser)]
#[command(name = "tern", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one of tern's built-in MCP tool servers over stdio.
    ///
    /// Identical to the standalone `tern-fs`, `tern-shell` and `tern-web` binaries;
    /// other MCP clients can launch `tern serve fs --root DIR` directly.
    Serve {
        #[command(subcommand)]
        server: ServeCommand,
    },
}

/// The built-in servers `tern serve` can run.
#[derive(Debug, Subcommand)]
pub enum ServeCommand {
    /// Files: read, write, edit, list, glob, grep — confined to the roots.
    Fs(tern_fs::Args),
    /// Run shell commands in a root with timeouts, caps and a clean environment.
    Shell(tern_shell::Args),
    /// Fetch web pages as readable text, with an SSRF guard.
    Web(tern_web::Args),
}
