//! The stdio fast path: quick tool calls answered on the stdin reader, without rmcp.
//!
//! Through rmcp, each `tools/call` is parsed into its untagged message enums (serde buffers
//! the whole message to try each variant), handed to a task spawned for it, answered through
//! an mpsc channel to the service loop, which spawns a second task to write the reply after
//! building the result's `serde_json::Value` tree and escaping the file text twice. For a
//! `read_file` of a small file that machinery was most of the server's CPU per call (issue 25
//! item 5; numbers and profiles in `notes/wave3/house.md`).
//!
//! Here the bytes from stdin pass through [`Reader`] before rmcp's line reader sees them. A
//! line that is exactly a `read_file` or `list_dir` call ([`call`] says what "exactly" means)
//! is answered on the spot: the same tool function rmcp's route runs
//! (`tools::read::call`, `tools::list::call`), the reply written by
//! [`call::read_reply`] (one escape of the text, copied into `structuredContent`) or by rmcp's
//! own types and serializer ([`call::serde_reply`]), in one `write` to stdout. Everything else
//! — the handshake, lists, other tools, errors, cancellations, anything the fast path is not
//! sure about — reaches rmcp byte for byte as the client sent it. The fast path is on only in a
//! session opened with `initialize` at a protocol version before 2026-07-28 (whose reply shape
//! it writes); `tern-fs --no-fast-path` turns it off.
//!
//! Equivalence: `tests/suite/fast_path.rs` sends one corpus of requests (unicode, control
//! characters, invalid UTF-8 files, paging, host caps, deny rules, path escapes, errors, ids
//! as numbers and strings, notifications and cancellations between calls) to a server with
//! and one without the fast path and compares the replies byte for byte, checking from the
//! server's log which route answered each.
//!
//! Cancellation: a call answered here is finished before the next line is read, so a
//! `notifications/cancelled` for it arrives after its reply — which the MCP spec allows
//! ("the request may have already completed"); rmcp ignores it as it would for any finished
//! request.

mod call;
mod json;
mod reader;
mod writer;

pub(crate) use reader::Reader;
pub(crate) use writer::{Shared, Writer};
