//! tern-fs: a filesystem MCP server over stdio (or streamable HTTP with `--http ADDR`),
//! confined to a set of roots.
//!
//! Tools: `read_file`, `write_file`, `edit_file`, `list_dir`, `glob`, `grep`.
//! Every path goes through [`resolve`], which walks it one component at a time
//! from an open root handle and refuses anything that leads outside the roots
//! (see that module for why string checks are not enough).
//!
//! ## What a host can rely on
//!
//! - `write_file` and `edit_file` carry `"tern/edits_files": true` in their tool
//!   definition's `_meta` (in `tools/list`): a host recognises file-editing tools by
//!   that key, never by this server's name.
//! - `edit_file`, and `write_file` when it replaced an existing small UTF-8 file,
//!   answer with two content blocks: a one-line summary (text) and the unified diff
//!   as an embedded resource `{"uri": "file:///abs/path", "mimeType": "text/x-diff",
//!   "text": "<diff>"}`. A host gives the resource's text to the model, so the model
//!   sees the diff once.
//! - Every tool declares an `outputSchema`, and its `structuredContent` carries all the
//!   text says (the numbered lines of `read_file` as `content`, the diff as `diff`, every
//!   note): clients that show the model only `structuredContent` (Claude Code, VS Code)
//!   lose nothing, and the text states every string in it, so a host that adds
//!   structured data missing from the text adds nothing. Refusals are text only
//!   (`src/tools/output.rs`).
//! - Tool input schemas are plain JSON Schema 2020-12 (`tern_tool_common::schema`): an
//!   optional argument is absent from `required`, never `"type": [.., "null"]`, and
//!   integer ranges are `minimum`/`maximum`, never custom formats.
//! - Paths the host denies (`--deny-read GLOB`, repeatable, and per call the request
//!   `_meta` key `"tern/deny_paths": ["GLOB", ...]`) are refused by read_file,
//!   write_file and edit_file ("denied by the host's rule") and silently left out
//!   by grep, glob and list_dir, whether reached by name, through a symlink, or as
//!   a hard link to a denied file (`src/deny.rs` has the rules and their cost).
//! - grep and glob walk the tree through directory handles, in parallel, and never
//!   follow a symlink, not even one swapped in mid-walk (`src/walk/`).
//! - At most 16 requests are handled at once; more wait unread in the pipe, and a
//!   `notifications/cancelled` still gets through (`src/transport.rs`).
//!
//! Run it standalone (`tern-fs --root DIR`) or as `tern serve fs --root DIR`; both
//! run [`run`] on [`RUNTIME`], the single-threaded runtime it is tuned for. Embedding the server in a program of your own, on your runtime:
//!
//! ```no_run
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! use clap::Parser;
//! let args = tern_fs::Args::parse_from(["tern-fs", "--root", "/srv/project"]);
//! tern_fs::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod deny;
mod editor;
pub mod resolve;
mod server;
mod tools;
mod transport;
mod walk;

use std::path::PathBuf;

use rmcp::ServiceExt;
use tern_tool_common::ServeError;

pub use deny::{DENY_META_KEY, DenyError};
pub use server::FsServer;
pub use tools::Limits;

/// Command-line flags, shared by `tern-fs` and `tern serve fs`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-fs",
    version,
    about = "tern's filesystem MCP server over stdio (or streamable HTTP with --http)"
)]
pub struct Args {
    /// A directory the tools may read and write (repeatable; default: the current
    /// directory). Relative paths in tool calls resolve against the first one.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Bytes of file content one read_file call returns at most.
    #[arg(long, value_name = "BYTES", default_value_t = 512 * 1024)]
    pub max_read_bytes: usize,
    /// Bytes of an image file (PNG, JPEG, GIF, WebP) read_file returns at most, as an image
    /// block. The default, 10 MiB, keeps the reply (13.4 MiB of base64) under the 16 MiB
    /// message limit of rmcp and tern's client; the model's own limit (Anthropic 3.75 MiB,
    /// OpenAI 20 MB) is the host's to apply.
    #[arg(long, value_name = "BYTES", default_value_t = 10 * 1024 * 1024)]
    pub max_image_bytes: usize,
    /// Entries glob and list_dir return at most.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_glob_results: usize,
    /// Matching lines (content mode) or files grep returns at most.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub max_grep_results: usize,
    /// Never read, write, list or search paths matching this glob (repeatable).
    /// Relative globs are anchored at every root (`**/.env`), absolute ones are
    /// taken as is; `*` stays within a directory, `**` crosses directories.
    /// Matched against the real path of what is opened and the path asked for;
    /// hard links to a matching file are refused too. A call can add globs in
    /// its request `_meta` under `tern/deny_paths`.
    #[arg(long = "deny-read", value_name = "GLOB")]
    pub deny_read: Vec<String>,
    /// Read and write file text through the editor: the unix socket of the `tern acp`
    /// process that drives this session (it sets this flag when the editor offers
    /// `fs/read_text_file` and `fs/write_text_file`). Paths are still confined to the roots
    /// and checked against the deny rules here; grep, glob and list_dir read the disk.
    #[arg(long, value_name = "PATH")]
    pub editor_socket: Option<PathBuf>,
    #[command(flatten)]
    pub http: tern_tool_common::http::HttpArgs,
}

impl Args {
    /// The limits the tools enforce.
    pub fn limits(&self) -> Limits {
        Limits {
            max_read_bytes: self.max_read_bytes,
            max_entries: self.max_glob_results,
            max_matches: self.max_grep_results,
            max_image_bytes: self.max_image_bytes,
        }
    }
}

/// Runs the server over stdio until the client disconnects, or with `--http` over
/// streamable HTTP until SIGTERM or Ctrl-C.
///
/// Fails before serving when a root cannot be opened, so a typo in `--root`
/// is a startup error rather than a server that refuses every path.
pub async fn run(args: Args) -> Result<(), ServeError> {
    let http = args.http.config()?;
    let dirs = if args.roots.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.roots.clone()
    };
    let roots = resolve::Roots::open(&dirs).map_err(|e| ServeError::Config(e.to_string()))?;
    tracing::debug!(roots = ?roots.paths().collect::<Vec<_>>(), "tern-fs serving");
    let server = FsServer::new(
        roots,
        args.limits(),
        args.deny_read.clone(),
        args.editor_socket.clone(),
    )
    .map_err(|e| ServeError::Config(e.to_string()))?;
    match http {
        None => serve_stdio(server).await,
        // Every session shares the one server: its roots' directory handles and deny rules.
        Some(http) => tern_tool_common::http::serve(http, move || server.clone()).await,
    }
}

/// The runtime tern-fs runs on (the standalone binary and `tern serve fs` alike).
///
/// Single-threaded: every tool but the tree walks finishes in microseconds, so extra workers
/// only add cross-thread wake-ups to each request (the profile showed ~15 % of the server's
/// CPU per call in them); grep and glob run on the blocking pool and their own walker
/// threads, so a long search never stalls other calls.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::CurrentThread;

/// Serves over rmcp's non-blocking stdio pipes, with at most
/// [`transport::DEFAULT_SLOTS`] requests in flight (see [`transport`]); a request line over
/// 16 MiB gets an error reply ([`tern_tool_common::BoundedStdio`]).
async fn serve_stdio(server: FsServer) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    let transport = transport::Bounded::new(
        tern_tool_common::BoundedStdio::new(read, write),
        transport::DEFAULT_SLOTS,
        transport::DEFAULT_READ_AHEAD,
    );
    let service = server
        .serve(transport)
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    tern_tool_common::serve_until_closed(service).await
}
