//! tern-lsp: code intelligence for the model, as an MCP server (stdio) that speaks LSP to the
//! language servers already on the machine (issue 20, item 4).
//!
//! Tools: `diagnostics` (a file's compiler errors and warnings), `definition`, `references`,
//! `hover`, `symbols`. Each call reads the file from disk inside `--root` (through tern-fs's
//! confining resolver), syncs it to the file's language server — started on first use, one
//! per language, restarted if it dies — and renders the answer with 1-based line:column
//! positions.
//!
//! Language servers are found on `PATH` ([`detect`]: rust-analyzer, pyright-langserver or
//! basedpyright-langserver, typescript-language-server, gopls, clangd) or named with
//! `--server LANG=COMMAND`. **When none is found the server is off**: it still answers MCP,
//! but declares no tools capability and offers no tools, and its `instructions` say what it
//! looked for — so a host lists nothing and the model pays nothing for it. A server named
//! with `--server` that cannot be found is a startup error instead: that was asked for.
//!
//! For a host that wants "the errors this edit introduced" after each write,
//! `diagnostics {path, severity: "error", new_only: true, wait_ms, max}` is the cheap call:
//! bounded by `wait_ms`, and its `structuredContent` carries `diagnostics` (a list, empty when
//! there is nothing to say), `settled` and `counts`. A file no language server handles is an
//! error result with `structuredContent.error == "no_server"`.
//!
//! Why a JSON-RPC client of its own rather than `async-lsp`: tern-lsp needs requests with
//! timeouts, a handful of notifications and canned answers to a few server requests — about
//! 300 lines over `tokio` (see [`rpc`]) — while async-lsp brings a tower service stack built
//! for writing servers. `lsp-types` gives the message types.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! use clap::Parser;
//! let args = tern_lsp::Args::parse_from(["tern-lsp", "--root", "/srv/project"]);
//! tern_lsp::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod detect;
pub mod render;
pub mod rpc;
mod server;
mod session;
pub mod text;
mod tools;
mod workspace;

use std::path::PathBuf;
use std::time::Duration;

use tern_tool_common::ServeError;

pub use detect::{Detected, Language, ServerFlag};
pub use server::{DiagnosticsParams, LspServer, instructions};

/// Command-line flags, shared by `tern-lsp` and `tern serve lsp`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-lsp",
    version,
    about = "tern's language-server MCP server over stdio: diagnostics, definition, references, hover, symbols"
)]
pub struct Args {
    /// The directory the tools may read (default: the current directory); the language
    /// servers run in it.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The language server for a language, as `LANG=COMMAND` (repeatable), e.g.
    /// `--server python="basedpyright-langserver --stdio"`; the command is split on spaces.
    /// `LANG=off` serves no language server for it. LANG: rust, python, typescript, go, c.
    #[arg(long = "server", value_name = "LANG=COMMAND")]
    pub servers: Vec<ServerFlag>,
    /// Only the languages `--server` names: do not look on PATH.
    #[arg(long)]
    pub no_detect: bool,
    /// Milliseconds `diagnostics` waits for a language server when the call does not say.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub wait_ms: u64,
}

/// The runtime tern-lsp runs on: calls wait on language server processes, so two workers keep
/// one slow answer from holding up the others.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::Workers(2);

/// Finds the language servers and builds the server the flags describe.
pub fn server_from(args: &Args) -> Result<LspServer, ServeError> {
    let ws = workspace::Workspace::open(&args.root).map_err(ServeError::Config)?;
    let path = std::env::var_os("PATH");
    let detected = detect::detect(&args.servers, !args.no_detect, path.as_ref())
        .map_err(|e| ServeError::Config(e.to_string()))?;
    if detected.servers.is_empty() {
        tracing::info!("no language server found; offering no tools");
    } else {
        for s in &detected.servers {
            tracing::debug!(language = %s.language, command = %s.shown, "language server");
        }
    }
    let lsp = tools::Lsp::new(ws, detected, Duration::from_millis(args.wait_ms));
    Ok(LspServer::new(lsp))
}

/// Runs the server over stdio until the client disconnects; the language servers it started
/// are shut down with it.
pub async fn run(args: Args) -> Result<(), ServeError> {
    let server = server_from(&args)?;
    let handle = server.clone();
    let served = tern_tool_common::serve_stdio(server).await;
    handle.shutdown().await;
    served
}
