//! Background notices while the person types: a server that failed or came up is printed above
//! the prompt, and the prompt is drawn again under it with the text typed so far and the cursor
//! where it was.
//!
//! rustyline's external printer does exactly that, inside the line editor's own loop (erase
//! the prompt rows, print, redraw), so a notice never races the redraw of a keystroke. Two
//! things about it shape this module:
//! - rustyline 17.0.2 held typed keys back once an external printer existed: with a printer,
//!   `PosixRawReader::wait_for_input` waits in `select()` on the terminal and the printer's
//!   pipe, but `select()` cannot see the bytes an earlier `read()` already took into the
//!   reader's buffer; so of `hello` typed (or pasted) at once only `h` showed, the rest waiting
//!   for the next key (kkawakam/rustyline#976). 19.0.0 serves buffered bytes before it waits
//!   (`if !self.tty_in.buffer().is_empty()`), so tern requires it.
//! - `ExternalPrinter::print` sends into a channel of one slot and blocks while it is full. A
//!   notice sent just as the prompt ends (the editor no longer drains the channel, raw mode not
//!   yet off) waits there until the next prompt. The engine emits events under its bus lock,
//!   so it must never block on that: notices go through an unbounded queue to a thread of
//!   their own, which is the only caller of `print`. Such a notice shows above the next prompt
//!   instead of being lost.

use std::sync::mpsc;

use rustyline::ExternalPrinter as _;

use super::plan::LineEditor;
use crate::render::PromptPrinter;

/// The queue to the thread that prints above the prompt.
pub(super) struct AbovePrompt {
    queue: mpsc::Sender<String>,
}

impl AbovePrompt {
    /// Starts the printing thread; `None` when the terminal cannot have one (stdin or stdout is
    /// not a terminal, a `dumb` one): output is then written as it comes.
    pub(super) fn start(editor: &mut LineEditor) -> Option<Self> {
        let mut printer = match editor.create_external_printer() {
            Ok(p) => p,
            Err(e) => {
                tracing::debug!("no external printer, notices print in place: {e}");
                return None;
            }
        };
        let (queue, notices) = mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("tern-notices".into())
            .spawn(move || {
                for text in notices {
                    if let Err(e) = printer.print(text) {
                        tracing::debug!("a notice could not be printed above the prompt: {e}");
                    }
                }
            })
            .ok()?;
        Some(Self { queue })
    }

    /// What the screen prints through while the prompt is read.
    pub(super) fn printer(&self) -> PromptPrinter {
        let queue = self.queue.clone();
        Box::new(move |text| {
            let _ = queue.send(text);
        })
    }
}
