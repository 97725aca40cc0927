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
mod line_limit;
pub mod schema;
mod signals;

pub use cap::{Capped, HeadTail};
pub use line_limit::{BoundedStdio, MAX_LINE};
/// The catalog server's contract with the host.
pub use tern_protocol::allowed_tools;
pub use tern_protocol::catalog;
/// The editor-fs bridge's wire (`tern-fs --editor-socket`), the same types `tern acp` answers.
pub use tern_protocol::editor_fs;
/// The editor-terminal bridge's wire (`tern-shell --editor-socket`), the same types `tern acp`
/// answers.
pub use tern_protocol::editor_terminal;
/// tern's `_meta` keys and payloads, the same table the host reads.
pub use tern_protocol::meta;

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

/// The async runtime a server runs on.
///
/// Chosen per server because the right flavour depends on what its calls wait for, and both
/// the standalone binary and `tern serve NAME` must run the server on the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// One thread: for servers whose calls finish in microseconds, where extra workers only
    /// add cross-thread wake-ups to every request (heavy work goes to the blocking pool).
    CurrentThread,
    /// This many worker threads: for servers whose calls wait on processes or the network.
    Workers(usize),
}

/// Runs a server future to completion on a runtime of its own and turns the outcome into the
/// process's exit code, logging a failure to stderr (stdout is the protocol).
///
/// This is the whole `main` of every standalone server binary and of `tern serve NAME`, so
/// the two run the same code on the same runtime.
pub fn serve_main<F>(runtime: Runtime, serve: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<(), ServeError>>,
{
    let built = match runtime {
        Runtime::CurrentThread => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        Runtime::Workers(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n.max(1))
            .enable_all()
            .build(),
    };
    let result = match built {
        Ok(rt) => rt.block_on(serve),
        Err(e) => Err(ServeError::Config(format!(
            "cannot start the async runtime: {e}"
        ))),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
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
/// Tokio's blocking pool, which halves the round trip (see RMCP-NOTES.md). Wrapped in
/// [`BoundedStdio`] so a request line over [`MAX_LINE`] gets an error reply, not silence.
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    let signals = signals::Signals::register();
    let (read, write) = rmcp::transport::stdio_pipes();
    let service = server
        .serve(BoundedStdio::new(read, write))
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    wait_or_signal(service, signals).await
}

/// Waits for a running stdio session to end: the client closing the pipe, or SIGTERM / Ctrl-C,
/// which cancels the session and every call in flight (see the `signals` module), then lets
/// the server return normally.
pub async fn serve_until_closed<S: ServerHandler>(
    service: rmcp::service::RunningService<rmcp::RoleServer, S>,
) -> Result<(), ServeError> {
    wait_or_signal(service, signals::Signals::register()).await
}

async fn wait_or_signal<S: ServerHandler>(
    service: rmcp::service::RunningService<rmcp::RoleServer, S>,
    signals: signals::Signals,
) -> Result<(), ServeError> {
    let cancel = service.cancellation_token();
    let watcher = tokio::spawn(async move {
        signals.recv().await;
        tracing::info!("shutting down: cancelling the session and its calls");
        cancel.cancel();
    });
    let ended = service.waiting().await;
    watcher.abort();
    ended.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// The `serverInfo` every tern server reports: its own crate name and version,
/// not rmcp's defaults, so clients can tell which server they talk to.
pub fn implementation(name: &str, version: &str) -> rmcp::model::Implementation {
    rmcp::model::Implementation::new(name, version)
}
