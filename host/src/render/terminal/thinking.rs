//! The model's thinking on the terminal: dimmed, and by default folded to one line when it ends
//! (`✻ thinking… N words`); `/thinking` makes it stream in full. Kept apart from the answer: it
//! never enters the markdown line buffer, so a thought cannot restyle the answer after it.

use super::Screen;
use super::style::{DIM, Palette, sanitize};

/// The thinking of the current block, between its first piece and the next other event.
#[derive(Default)]
pub(super) struct Thinking {
    text: String,
    /// This block streams in full (decided at its first piece, so a toggle mid-block is clean).
    full: bool,
}

impl Thinking {
    /// Whether a block is open.
    pub(super) fn open(&self) -> bool {
        !self.text.is_empty()
    }

    /// Whether this block streams in full (else it is one folded line at its end).
    pub(super) fn full(&self) -> bool {
        self.full
    }

    /// A piece of thinking (the caller ends the answer's current line before a block's first).
    pub(super) fn piece(&mut self, screen: &Screen, palette: Palette, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if self.text.is_empty() {
            self.full = screen.shows_thinking();
            if self.full {
                screen.write(&format!("{}\n  ", palette.paint(DIM, "✻ thinking")));
            } else {
                screen.spin(Some("thinking…".into()));
            }
        }
        self.text.push_str(delta);
        if self.full {
            let clean = sanitize(delta).replace('\t', "    ");
            let mut parts = clean.split('\n').peekable();
            while let Some(part) = parts.next() {
                screen.write(&palette.paint(DIM, part));
                if parts.peek().is_some() {
                    screen.write("\n  ");
                }
            }
        }
    }

    /// Ends the block: its folded line, or the end of the streamed lines; keeps the text for
    /// `/thinking`.
    pub(super) fn close(&mut self, screen: &Screen, palette: Palette, interactive: bool) {
        if self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        if self.full {
            screen.write("\n");
        } else {
            screen.spin(None);
            let words = text.split_whitespace().count();
            let hint = if interactive {
                " (/thinking shows it)"
            } else {
                ""
            };
            let line = format!("✻ thinking… {words} word(s){hint}");
            screen.write(&format!("{}\n", palette.paint(DIM, &line)));
        }
        screen.keep_thought(text);
    }
}

/// `/thinking`'s view of a kept thought: dimmed, indented.
pub fn thought_lines(text: &str, color: bool) -> Vec<String> {
    let palette = Palette { color };
    sanitize(text)
        .lines()
        .map(|l| format!("  {}", palette.paint(DIM, l)))
        .collect()
}
