//! tern-todo: an MCP server (stdio) that keeps the session's todo list — the plan the model
//! writes for a task of several steps and updates as it goes, which the user watches.
//!
//! Tools: `write` replaces the whole list (items with `id`, `text` and `status` `pending`,
//! `in_progress`, `done` or `cancelled`; the rules are in [`list`]), `read` returns it.
//!
//! ## What a host can rely on
//!
//! - Every successful result carries the list three ways: as text, a checklist the model reads
//!   (`- [x] 1: Read the parser`, one line per item, every field shown); as `structuredContent`
//!   `{"todos": [{"id", "text", "status"}], "counts": {"pending", "in_progress", "done",
//!   "cancelled"}}`, declared in both tools' `outputSchema`; and in the result's `_meta` under
//!   `"tern/todo"`, the same object plus `"changed": bool` (true when a `write` changed the
//!   list), so a host shows the list and emits its own event without knowing this server's name.
//! - A refused list (broken rules, or a state file that cannot be saved) is an `isError` result
//!   and the old list stays, in memory and on disk.
//! - With `--state FILE` (or `TERN_TODO_STATE`) the list lives in that file (format in
//!   [`store`]): read at startup, re-read whenever it changed on disk (so the host may write it
//!   itself), written `0600` through a temporary file and a rename. Without it the list lives
//!   in memory for the life of the process, which suits any other MCP client.
//!
//! ```no_run
//! use clap::Parser;
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! let args = tern_todo::Args::parse_from(["tern-todo", "--state", "session.todo.json"]);
//! tern_todo::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod list;
mod server;
pub mod store;

use std::path::PathBuf;

pub use list::{Counts, Item, Status, TodoList};
pub use server::{Snapshot, TODO_META, TodoServer, WriteParams};
pub use store::{Store, StoreError};

/// Command-line flags, shared by `tern-todo` and `tern serve todo`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-todo",
    version,
    about = "tern's todo-list MCP server over stdio"
)]
pub struct Args {
    /// Keep the list in this file (JSON, written 0600 atomically), so a restart or a resumed
    /// session has it back; created by the first write. Without it the list lives in memory.
    /// From the environment too, so a host can name a file per session without changing the
    /// command line it identifies the server by.
    #[arg(long, value_name = "FILE", env = "TERN_TODO_STATE")]
    pub state: Option<PathBuf>,
    /// Keep the list in the file whose path this pointer file holds, read again before every
    /// call: a host moves the list to another session's file by rewriting the pointer (tern's
    /// `/clear`). Not with `--state`.
    #[arg(
        long,
        value_name = "POINTER",
        env = "TERN_TODO_STATE_FROM",
        conflicts_with = "state"
    )]
    pub state_from: Option<PathBuf>,
}

/// The runtime tern-todo runs on (the standalone binary and `tern serve todo` alike).
///
/// One thread: a call validates a list of at most 100 items and writes one small file.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::CurrentThread;

/// Runs the server over stdio until the client disconnects.
///
/// Fails before serving when the state file exists but cannot be used (unreadable, not a list
/// this server wrote, a newer version), so it is reported at startup and never overwritten.
pub async fn run(args: Args) -> Result<(), tern_tool_common::ServeError> {
    let opened = match (args.state, args.state_from) {
        (Some(path), _) => Some(Store::open(path)),
        (None, Some(pointer)) => Some(Store::follow(pointer)),
        (None, None) => None,
    };
    let store = match opened {
        Some(store) => store.map_err(|e| {
            tern_tool_common::ServeError::Config(format!(
                "{e}\nhint: fix the file, or move it away to start with an empty list"
            ))
        })?,
        None => Store::in_memory(),
    };
    tracing::debug!(state = ?store.path(), "tern-todo serving");
    tern_tool_common::serve_stdio(TodoServer::new(store)).await
}
