//! The context of a conversation: the system prompt it starts from, the budget its window
//! allows, and the compaction that keeps it inside that window.

pub mod budget;
pub mod compact;
pub mod defer;
pub mod images;
mod prompt;

pub use prompt::{SYSTEM_PROMPT, system_blocks};
