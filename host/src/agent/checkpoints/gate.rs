//! When checkpoints are taken during a turn: the one before the turn (overlapping the first
//! model request) and one before each shell call in a writable sandbox — a command can change
//! any file of the workspace, so `/rewind TURN.CALL` can put back the state just before it.

use std::sync::{Arc, Mutex};

use tern_protocol::Event;

use super::{Checkpointer, Recorded};
use tern_gateway::Redactor;

use crate::agent::bus::EventBus;

/// Whether shell calls get a checkpoint of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellPoints {
    /// Before each call of a tool with a command argument (`tern/command_arg`).
    On,
    /// Never (a read-only sandbox: a command cannot change the workspace).
    Off,
}

/// The checkpoint of the current turn while it is being recorded: started when the turn
/// starts, so it overlaps the first model request, and waited for before the turn's first
/// tool call (nothing may change the workspace before it is recorded) and before the turn's
/// messages are saved (the turn log points into the transcript as it was).
pub struct Gate {
    pending: tokio::sync::Mutex<Option<tokio::task::JoinHandle<Recorded>>>,
    bus: EventBus,
    shell: ShellPoints,
    redactor: Arc<Redactor>,
    /// The checkpointer and session of the running turn (for its shell calls).
    current: Mutex<Option<(Arc<Checkpointer>, String)>>,
}

impl Gate {
    pub fn new(bus: EventBus, shell: ShellPoints, redactor: Arc<Redactor>) -> Self {
        Self {
            pending: tokio::sync::Mutex::new(None),
            bus,
            shell,
            redactor,
            current: Mutex::new(None),
        }
    }

    /// Starts recording the workspace before turn `message` of `session`.
    pub async fn start(&self, checkpointer: Arc<Checkpointer>, session: String, message: String) {
        if let Ok(mut current) = self.current.lock() {
            *current = Some((checkpointer.clone(), session.clone()));
        }
        let task =
            tokio::task::spawn_blocking(move || checkpointer.before_turn(&session, &message));
        *self.pending.lock().await = Some(task);
    }

    /// Waits for the checkpoint being recorded, if any, and reports it.
    pub async fn wait(&self) {
        let mut pending = self.pending.lock().await;
        let Some(task) = pending.take() else {
            return;
        };
        self.report(task.await);
    }

    /// Records the workspace before shell call `call_id` (its command line `command`), after
    /// the turn's own checkpoint; the call waits for it. Nothing when shell points are off,
    /// checkpoints are off, or no turn is running (a sub-agent's run, a tool called outside a
    /// turn).
    pub async fn before_shell(&self, call_id: &str, tool: &str, command: &str) {
        self.wait().await;
        if self.shell == ShellPoints::Off {
            return;
        }
        let current = self.current.lock().ok().and_then(|c| c.clone());
        let Some((checkpointer, session)) = current else {
            return;
        };
        if checkpointer.store.is_none() {
            return;
        }
        let (call_id, tool) = (call_id.to_string(), tool.to_string());
        let command = self.redactor.redact(command);
        let task = tokio::task::spawn_blocking(move || {
            checkpointer.before_call(&session, &call_id, &tool, &command)
        });
        self.report(task.await);
    }

    fn report(&self, done: Result<Recorded, tokio::task::JoinError>) {
        match done {
            Ok(r) => {
                let point = match r.call {
                    Some(call) => format!("shell call {}.{call}", r.turn),
                    None => format!("turn {}", r.turn),
                };
                if let Some(id) = r.checkpoint {
                    self.bus.emit(Event::CheckpointRecorded {
                        turn: r.turn,
                        call: r.call,
                        checkpoint: id.to_string(),
                        files: r.files,
                        reused: r.reused,
                        duration_ms: r.duration_ms,
                    });
                }
                if let Some(e) = r.error {
                    self.bus.emit(Event::Notice {
                        message: format!("no checkpoint before {point}: {e}"),
                    });
                }
            }
            Err(e) => self.bus.emit(Event::Notice {
                message: format!("no checkpoint recorded: {e}"),
            }),
        }
    }
}
