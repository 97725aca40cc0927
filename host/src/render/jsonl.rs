//! `--output-format jsonl`: stdout carries only the events, one JSON object per
//! line, nothing else (a contract scripts rely on).

use std::io::Write;

use tern_protocol::Envelope;

use crate::agent::Subscriber;

/// Prints every event as a JSON line on stdout.
#[derive(Default)]
pub struct JsonlPrinter;

impl Subscriber for JsonlPrinter {
    fn on_event(&mut self, event: &Envelope) {
        let mut out = std::io::stdout().lock();
        if serde_json::to_writer(&mut out, event).is_ok() {
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
    }
}
