//! Subscribers that turn events into output. The engine never prints; these do.

mod jsonl;
mod terminal;

pub use jsonl::JsonlPrinter;
pub use terminal::{
    CallPreview, Mode, Notifier, PromptPrinter, Screen, TerminalPrinter, approval_preview,
    format_cost, format_tokens, sanitize, status_line, thought_lines, todo_lines,
};
