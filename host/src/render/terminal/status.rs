//! The status line after a turn: how it ended (when not by itself), the model and the
//! permission mode, then tokens (with the measured rate), cost and how full the context is.

use tern_protocol::RunStatus;

use super::style::sanitize;
use super::{TerminalPrinter, rate, status_line};

impl TerminalPrinter {
    /// The status line after a turn: how it ended when not by itself, the model and the mode,
    /// then tokens (with the measured rate), cost and context.
    pub(super) fn turn_line(&mut self, turn: Turn<'_>) -> String {
        let usage = turn.usage;
        let context = match turn.context_tokens {
            0 => self.last_context,
            n => n,
        };
        self.last_context = context;
        let mut parts: Vec<String> = Vec::new();
        if turn.status != RunStatus::Success {
            parts.push(turn.status.as_str().replace('_', " "));
        }
        parts.extend(turn.model.map(sanitize));
        parts.extend(turn.mode.map(sanitize));
        let rate = self.rate.finish_turn();
        let line = status_line(usage, turn.cost_usd, context, turn.context_window);
        // A turn that never got an answer: `0 in · 0 out` says nothing.
        let silent =
            turn.status != RunStatus::Success && usage.total_input() == 0 && usage.output == 0;
        for part in line.split(" · ") {
            if silent && !part.starts_with("context") {
                continue;
            }
            parts.push(part.to_string());
            if part.ends_with(" out")
                && let Some(rate) = rate
            {
                parts.push(rate::shown(rate, false));
            }
        }
        parts.join(" · ")
    }
}

/// A finished turn, for its status line.
pub(super) struct Turn<'a> {
    pub status: RunStatus,
    pub usage: &'a tern_protocol::Usage,
    pub cost_usd: Option<f64>,
    pub context_tokens: u64,
    pub context_window: Option<u64>,
    pub model: Option<&'a str>,
    pub mode: Option<&'a str>,
}
