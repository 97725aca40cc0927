//! The vocabulary every layer of tern shares, in one place.
//!
//! A tool call, a tool result and an event each have exactly one type, defined here and used by
//! the model adapters, the server pool, the gateway and the agent alike — so no layer converts one
//! shape into another by hand, and a field added here reaches the events file, the trace and the
//! renderers at once. This crate has no behaviour beyond (de)serialisation and small helpers —
//! and [`files`], the one way every layer writes tern's private files.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod allowed_tools;
pub mod catalog;
pub mod editor_fs;
pub mod editor_terminal;
mod event;
pub mod files;
pub mod image;
pub mod meta;
mod time;
pub mod todo;
mod tool;
mod usage;

pub use event::{
    AnsweredBy, AuditRecord, CompactionReason, CompactionStage, ElicitationAction, ElicitationMode,
    Envelope, Event, EventSink, IncompleteCall, LoopState, ReplayVerdict, RunStatus, ignore_events,
};
pub use time::{civil, now_rfc3339, rfc3339};
pub use tool::{Decision, ErrorKind, Image, ToolCall, ToolResult};
pub use usage::{Price, Usage};
