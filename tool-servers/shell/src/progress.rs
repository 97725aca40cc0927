//! Progress notifications of a running `run` call: a tick every second, and, for a client that
//! asked with `_meta["tern/output_tail"]`, the output's last lines whenever they change (see
//! `tern_protocol::meta::OUTPUT_TAIL` and [`crate::exec::Report`]).

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{NotificationMetaObject, ProgressNotificationParam, ProgressToken};
use tern_tool_common::meta::{self, OutputTail};

use crate::exec::Report;

/// Lines of live tail the call asked for in its `_meta` (0 when it did not, or asked
/// nonsense), at most [`OutputTail::MAX_LINES`].
pub(crate) fn tail_request(meta: &serde_json::Map<String, serde_json::Value>) -> usize {
    meta.get(meta::OUTPUT_TAIL)
        .and_then(|v| serde_json::from_value::<meta::TailRequest>(v.clone()).ok())
        .map_or(0, |r| r.lines.min(OutputTail::MAX_LINES))
}

/// Notifications queued to one task that sends them in order: the output reader never waits
/// for a slow client (a full queue drops a notification), and a tail never overtakes a newer
/// one on the wire.
pub(crate) struct Notifier {
    queue: tokio::sync::mpsc::Sender<ProgressNotificationParam>,
    token: ProgressToken,
    total: f64,
    /// Progress counted to the millisecond (tails come several a second, and the value must
    /// rise with each notification); whole seconds, as before, for a client that asked for no
    /// tail.
    fine: bool,
    last: f64,
}

/// Notifications waiting to be sent; more are dropped.
const QUEUE: usize = 16;

impl Notifier {
    pub(crate) fn start(
        peer: rmcp::Peer<RoleServer>,
        token: ProgressToken,
        timeout: Duration,
        fine: bool,
    ) -> Self {
        let (queue, mut rx) = tokio::sync::mpsc::channel::<ProgressNotificationParam>(QUEUE);
        tokio::spawn(async move {
            while let Some(note) = rx.recv().await {
                if let Err(e) = peer.notify_progress(note).await {
                    tracing::debug!("progress notification not sent: {e}");
                }
            }
        });
        Self {
            queue,
            token,
            total: timeout.as_secs_f64(),
            fine,
            last: 0.0,
        }
    }

    /// The progress value for `elapsed`, above every one sent before.
    fn progress(&mut self, elapsed: Duration) -> f64 {
        let value = if self.fine {
            (elapsed.as_millis() as f64 / 1000.0).max(self.last + 0.001)
        } else {
            elapsed.as_secs() as f64
        };
        self.last = value;
        value
    }

    pub(crate) fn report(&mut self, report: Report) {
        let note = match report {
            Report::Tick { elapsed, bytes } => {
                let secs = elapsed.as_secs();
                ProgressNotificationParam::new(self.token.clone(), self.progress(elapsed))
                    .with_total(self.total)
                    .with_message(format!("{secs} s elapsed, {bytes} bytes of output"))
            }
            Report::Tail { elapsed, lines } => {
                let mut note =
                    ProgressNotificationParam::new(self.token.clone(), self.progress(elapsed))
                        .with_total(self.total);
                let mut meta = NotificationMetaObject::new();
                meta.0.0.insert(
                    meta::OUTPUT_TAIL.into(),
                    serde_json::json!(OutputTail { lines }),
                );
                note.meta = Some(meta);
                note
            }
        };
        if self.queue.try_send(note).is_err() {
            tracing::debug!("progress notification dropped: the client is not keeping up");
        }
    }
}
