//! Pieces every tern tool server shares.
//!
//! A tool server's stdout *is* the MCP protocol, so everything here is built
//! around that: logs go to stderr only ([`init_tracing`]), serving uses rmcp's
//! non-blocking pipe transport ([`serve_stdio`]), and output that a tool
//! captures from the outside world is bounded in memory ([`HeadTail`]).
//! [`http`] serves the same servers over MCP streamable HTTP (`--http ADDR`).
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cap;
pub mod http;
pub mod schema;

pub use cap::{Capped, HeadTail};

use rmcp::{ServerHandler, ServiceExt};

/// Errors from running a stdio server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The server's own flags are unusable (e.g. a `--root` that does not exist);
    /// detected before the handshake so the user sees it at startup.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The MCP handshake with the client failed (bad first message, closed pipe).
    #[error("MCP initialization failed: {0}")]
    Initialize(String),
    /// The session ended abnormally after it started.
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// Sends `tracing` output to stderr, without ANSI colours, filtered by `TERN_LOG`
/// (default `warn`). Never stdout: that is the protocol stream.
///
/// Safe to call more than once (later calls are no-ops), which matters when the
/// `tern` binary has already set up its own subscriber before `tern serve`.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TERN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Serves `server` over stdin/stdout until the client closes the pipe.
///
/// Both of MCP's eras are served on the same pipe: a client that opens with `initialize`
/// (revisions up to 2025-11-25) gets a session, one that opens with `server/discover`
/// (2026-07-28) gets per-request handling — rmcp picks by the first request, so every tern
/// server answers both (`tests/suite/interop_clients.rs` and `tests/suite/eras.rs` prove it).
///
/// Uses [`rmcp::transport::stdio_pipes`]: when the client launched us with pipes
/// (every MCP client does) reads and writes run on the IO reactor instead of
/// Tokio's blocking pool, which halves the round trip (see RMCP-NOTES.md).
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    let service = server
        .serve(rmcp::transport::stdio_pipes())
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    service
        .waiting()
        .await
        .map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// The `serverInfo` every tern server reports: its own crate name and version,
/// not rmcp's defaults, so clients can tell which server they talk to.
pub fn implementation(name: &str, version: &str) -> rmcp::model::Implementation {
    rmcp::model::Implementation::new(name, version)
}
