//! The prompt line and the mode-cycle key. The prompt is the REPL's status line while a person
//! types: it names the permission mode when it is not `default` and the model when `/model`
//! changed it (`[plan] tern> `, `[gpt-5 · accept-edits] tern> `), so what the next turn will do
//! is visible before it is sent.
//!
//! Shift-Tab (the terminal sends `ESC [ Z`, rustyline's `BackTab`) cycles default →
//! accept-edits → plan → default, as in Claude Code. rustyline cannot change its prompt while it
//! reads, so the key ends the line (like Ctrl-O), the REPL switches the gateway's mode, erases
//! the old prompt and reads again with the typed text given back.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use rustyline::{Cmd, ConditionalEventHandler, Event, EventContext, RepeatCount};
use tern_config::PermissionMode;
use unicode_width::UnicodeWidthStr;

/// Shift-Tab: ends the line and asks for the next mode.
pub(super) struct CycleKey(pub Arc<AtomicBool>);

impl ConditionalEventHandler for CycleKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        self.0.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// Two Esc presses at most this far apart open `/rewind`.
const DOUBLE_ESC: std::time::Duration = std::time::Duration::from_millis(500);

/// Esc at the prompt: alone it does nothing (no `^[` left in the line: the editor's key
/// sequence timeout makes a lone Esc a key of its own), twice within [`DOUBLE_ESC`] it ends the
/// line and asks for `/rewind`, as Esc-Esc does in Claude Code.
pub(super) struct EscKey {
    pub rewind: Arc<AtomicBool>,
    pub last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl ConditionalEventHandler for EscKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        let now = std::time::Instant::now();
        let Ok(mut last) = self.last.lock() else {
            return Some(Cmd::Noop);
        };
        if last.is_some_and(|t| now.duration_since(t) <= DOUBLE_ESC) {
            *last = None;
            self.rewind.store(true, Ordering::SeqCst);
            return Some(Cmd::AcceptLine);
        }
        *last = Some(now);
        Some(Cmd::Noop)
    }
}

/// The mode after `mode` in the cycle. Modes outside it (read-only, yolo: chosen on the command
/// line or with `/mode`) go back to default, the start of the cycle.
pub(super) fn next_mode(mode: PermissionMode) -> PermissionMode {
    match mode {
        PermissionMode::Default => PermissionMode::AcceptEdits,
        PermissionMode::AcceptEdits => PermissionMode::Plan,
        PermissionMode::Plan | PermissionMode::ReadOnly | PermissionMode::Yolo => {
            PermissionMode::Default
        }
    }
}

/// The prompt: `tern> ` with what differs from the start of the session in front.
pub(super) fn prompt(mode: PermissionMode, changed_model: Option<&str>) -> String {
    let mut parts: Vec<String> = changed_model.map(str::to_string).into_iter().collect();
    if mode != PermissionMode::Default {
        parts.push(mode.to_string());
    }
    if parts.is_empty() {
        "tern> ".to_string()
    } else {
        format!("[{}] tern> ", parts.join(" · "))
    }
}

/// The escape sequence that moves up over a prompt just ended with `line` (rustyline wrote a
/// newline after it) and erases it, so the redrawn prompt takes its place.
pub(super) fn erase(prompt: &str, line: &str, columns: usize) -> String {
    let columns = columns.max(1);
    let mut rows = 0;
    for (i, part) in line.split('\n').enumerate() {
        let width = if i == 0 {
            prompt.width() + part.width()
        } else {
            part.width()
        };
        rows += width.max(1).div_ceil(columns);
    }
    format!("\x1b[{rows}A\r\x1b[J")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_is_default_accept_edits_plan_and_back() {
        let mut mode = PermissionMode::Default;
        let mut seen = Vec::new();
        for _ in 0..3 {
            mode = next_mode(mode);
            seen.push(mode);
        }
        assert_eq!(
            seen,
            [
                PermissionMode::AcceptEdits,
                PermissionMode::Plan,
                PermissionMode::Default
            ]
        );
        assert_eq!(next_mode(PermissionMode::ReadOnly), PermissionMode::Default);
        assert_eq!(next_mode(PermissionMode::Yolo), PermissionMode::Default);
    }

    #[test]
    fn the_prompt_names_only_what_differs() {
        assert_eq!(prompt(PermissionMode::Default, None), "tern> ");
        assert_eq!(prompt(PermissionMode::Plan, None), "[plan] tern> ");
        assert_eq!(
            prompt(PermissionMode::AcceptEdits, Some("gpt-5")),
            "[gpt-5 · accept-edits] tern> "
        );
    }

    #[test]
    fn erasing_counts_wrapped_and_continued_rows() {
        assert_eq!(erase("tern> ", "hi", 120), "\x1b[1A\r\x1b[J");
        assert_eq!(erase("tern> ", &"x".repeat(120), 120), "\x1b[2A\r\x1b[J");
        assert_eq!(erase("tern> ", "a\nb", 120), "\x1b[2A\r\x1b[J");
    }
}
