//! tern-catalog: an MCP server (stdio) with one tool, `tool_search`, that finds tools the host
//! has deferred — kept out of the model's tool table to save context — by what they do.
//!
//! The host writes the deferred tools' definitions to a JSON file (`--catalog`) and rewrites it
//! when its table changes; the server reads it again whenever it changed. A search answers with
//! the best matches and their arguments, as text for the model and as `structuredContent`
//! (`{"tools": [{"name", "description", "arguments"}]}`, declared in the tool's output schema)
//! for the host, which makes the matches callable from the next request on.
//!
//! ```no_run
//! use clap::Parser;
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! let args = tern_catalog::Args::parse_from(["tern-catalog", "--catalog", "catalog.json"]);
//! tern_catalog::run(args).await
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod index;
mod server;

use std::path::PathBuf;

pub use index::{Entry, Index};
pub use server::{CatalogServer, SearchParams};

/// Command-line flags, shared by `tern-catalog` and `tern serve catalog`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-catalog",
    version,
    about = "tern's tool-search MCP server over stdio"
)]
pub struct Args {
    /// The catalog: a JSON array of `{"name", "description", "input_schema"}`.
    #[arg(long, value_name = "FILE")]
    pub catalog: PathBuf,
}

/// The runtime tern-catalog runs on (the standalone binary and `tern serve catalog` alike).
///
/// One thread: a search over an in-memory index finishes in microseconds.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::CurrentThread;

/// Runs the server over stdio until the client disconnects.
pub async fn run(args: Args) -> Result<(), tern_tool_common::ServeError> {
    tern_tool_common::serve_stdio(CatalogServer::new(args.catalog)).await
}
