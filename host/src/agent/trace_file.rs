//! `runs/<run_id>/events.jsonl`: one line per event, flushed per line.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
};

use tern_gateway::Redactor;

use tern_protocol::Envelope;

use super::bus::Subscriber;

/// Writes every event to the run's events file, through the redactor (a key
/// pasted into a goal or printed by a tool never lands on disk).
pub struct EventWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    redactor: std::sync::Arc<Redactor>,
}

impl EventWriter {
    /// Creates `path` (and its directory): `0600` in a `0700` directory, never through a
    /// symlink.
    pub fn create(path: &Path, redactor: std::sync::Arc<Redactor>) -> std::io::Result<Self> {
        let file = tern_protocol::files::open_append(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            out: Some(BufWriter::new(file)),
            redactor,
        })
    }
}

impl Subscriber for EventWriter {
    fn on_event(&mut self, event: &Envelope) {
        if let Some(out) = self.out.as_mut() {
            let line = serde_json::to_string(event).unwrap_or_default();
            let ok = out
                .write_all(self.redactor.redact(&line).as_bytes())
                .is_ok()
                && out.write_all(b"\n").is_ok()
                && out.flush().is_ok();
            if !ok {
                tracing::warn!(
                    "cannot write {}; events are no longer recorded",
                    self.path.display()
                );
                self.out = None;
            }
        }
    }

    fn close(&mut self) {
        if let Some(mut out) = self.out.take() {
            let _ = out.flush();
            let _ = out.get_ref().sync_data();
        }
    }
}
