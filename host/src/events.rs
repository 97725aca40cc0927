//! The one event stream of a run.
//!
//! Every part of the engine (loop, gateway, pool) reports what it does as an
//! [`AgentEvent`] on the [`EventBus`]; it never prints. Renderers subscribe:
//! the events file, the terminal printer, the JSONL printer. Each event is
//! wrapped in an [`Envelope`] carrying `run_id`, `session_id`, a gap-free `seq`
//! and a timestamp, so `events.jsonl` is a replayable trace of the run.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happened. Serialized with `"type": "<snake_case variant>"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The run began: what it was asked, with which model and servers.
    RunStarted {
        goal: String,
        model: String,
        provider: String,
        servers: Vec<String>,
        cwd: String,
    },
    /// A server initialized and its tools joined the table.
    ServerReady {
        server: String,
        tools: usize,
        startup_ms: u64,
    },
    /// A server failed to start or crashed (with the reason and its stderr tail).
    ServerFailed {
        server: String,
        reason: String,
        stderr_tail: Vec<String>,
        will_restart: bool,
    },
    /// The loop moved to another state (`build_context`, `call_model`, `run_tools`, …).
    State { state: String, step: u32 },
    /// The request about to be sent to the model.
    ModelRequest {
        step: u32,
        messages: usize,
        tools: usize,
        estimated_tokens: u64,
        /// The full neutral request (messages, tools), for replay.
        request: Value,
    },
    /// A piece of streamed assistant text.
    TextDelta { text: String },
    /// The model finished a turn.
    ModelResponse {
        step: u32,
        stop_reason: String,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_creation_tokens: u64,
        latency_ms: u64,
        request_id: Option<String>,
        text: String,
        tool_calls: usize,
    },
    /// The model request is being retried.
    ModelRetry {
        attempt: u32,
        reason: String,
        delay_ms: u64,
        discard_partial: bool,
    },
    /// A tool call is about to go through the gateway.
    ToolCallStarted {
        call_id: String,
        tool: String,
        arguments: Value,
    },
    /// The gateway decided whether the call may run.
    PermissionDecided {
        call_id: String,
        tool: String,
        decision: String,
        rule: String,
    },
    /// Progress reported by the server for a running call.
    ToolProgress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A tool call ended (exactly one per call the model made).
    ToolCallFinished {
        call_id: String,
        tool: String,
        is_error: bool,
        error_type: Option<String>,
        duration_ms: u64,
        /// The first lines of the result.
        summary: String,
        /// The full text given to the model.
        output: String,
        /// For edits: the unified diff.
        diff: Option<String>,
    },
    /// A log message a server sent (`notifications/message`).
    ServerLog {
        server: String,
        level: String,
        data: Value,
    },
    /// The gateway's audit record of a finished call (also in `audit.jsonl`).
    Audit { record: Value },
    /// A notice from the engine (e.g. an ignored project config).
    Notice { message: String },
    /// Something went wrong that the run reports (it may still continue).
    Error { message: String },
    /// The assistant turn ended (after its tools ran, if any).
    TurnEnd { step: u32 },
    /// The run ended. Always the last event.
    RunFinished {
        status: RunStatus,
        steps: u32,
        duration_ms: u64,
        input_tokens: u64,
        output_tokens: u64,
        cache_read_tokens: u64,
        cache_creation_tokens: u64,
        answer: Option<String>,
        error: Option<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave a final answer.
    Success,
    /// `max_steps` was reached.
    MaxSteps,
    /// An unrecoverable error.
    Error,
    /// Ctrl-C.
    Cancelled,
}

impl RunStatus {
    /// The process exit code for this status (documented in the README).
    pub fn exit_code(self) -> i32 {
        match self {
            RunStatus::Success => 0,
            RunStatus::MaxSteps | RunStatus::Error => 1,
            RunStatus::Cancelled => 130,
        }
    }

    /// `success`, `max_steps`, …
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Success => "success",
            RunStatus::MaxSteps => "max_steps",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// An event with the ids that thread a run together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub run_id: String,
    pub session_id: String,
    pub seq: u64,
    /// RFC 3339, UTC, milliseconds.
    pub ts: String,
    #[serde(flatten)]
    pub event: AgentEvent,
}

/// Receives every event, in order.
pub trait Subscriber: Send {
    /// Called once per event, in `seq` order.
    fn on_event(&mut self, event: &Envelope);
    /// Called when the bus closes (flush and close files).
    fn close(&mut self) {}
}

struct BusInner {
    seq: u64,
    subscribers: Vec<Box<dyn Subscriber>>,
    closed: bool,
}

/// Fans events out to subscribers synchronously, so their order is the order
/// of `seq` everywhere (terminal, file, JSONL).
#[derive(Clone)]
pub struct EventBus {
    run_id: Arc<str>,
    session_id: Arc<str>,
    inner: Arc<Mutex<BusInner>>,
}

impl EventBus {
    /// A bus for one run.
    pub fn new(run_id: &str, session_id: &str) -> Self {
        Self {
            run_id: run_id.into(),
            session_id: session_id.into(),
            inner: Arc::new(Mutex::new(BusInner {
                seq: 0,
                subscribers: Vec::new(),
                closed: false,
            })),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Adds a subscriber; it sees events emitted from now on.
    pub fn subscribe(&self, s: Box<dyn Subscriber>) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.subscribers.push(s);
        }
    }

    /// Publishes an event. After [`EventBus::close`] events are dropped.
    pub fn emit(&self, event: AgentEvent) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.closed {
            return;
        }
        inner.seq += 1;
        let envelope = Envelope {
            run_id: self.run_id.to_string(),
            session_id: self.session_id.to_string(),
            seq: inner.seq,
            ts: now_rfc3339(),
            event,
        };
        for s in inner.subscribers.iter_mut() {
            s.on_event(&envelope);
        }
    }

    /// Closes every subscriber (idempotent).
    pub fn close(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            if inner.closed {
                return;
            }
            inner.closed = true;
            for s in inner.subscribers.iter_mut() {
                s.close();
            }
        }
    }
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let (y, mo, d, h, mi, s) = civil(now.as_secs() as i64);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        now.subsec_millis()
    )
}

/// Seconds since the epoch → (year, month, day, hour, minute, second), UTC.
pub fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's days-from-civil inverse.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Arc<Mutex<Vec<Envelope>>>);
    impl Subscriber for Collect {
        fn on_event(&mut self, e: &Envelope) {
            self.0.lock().unwrap().push(e.clone());
        }
    }

    #[test]
    fn events_carry_ids_and_gap_free_seq_and_serialize_with_a_type_tag() {
        let bus = EventBus::new("r1", "s1");
        let seen = Arc::new(Mutex::new(Vec::new()));
        bus.subscribe(Box::new(Collect(seen.clone())));
        bus.emit(AgentEvent::TextDelta { text: "hi".into() });
        bus.emit(AgentEvent::TurnEnd { step: 1 });
        bus.close();
        bus.emit(AgentEvent::TurnEnd { step: 2 });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].seq, 1);
        assert_eq!(seen[1].seq, 2);
        let json = serde_json::to_value(&seen[0]).unwrap();
        assert_eq!(json["type"], "text_delta");
        assert_eq!(json["run_id"], "r1");
        assert_eq!(json["session_id"], "s1");
        let back: Envelope = serde_json::from_value(json).unwrap();
        assert_eq!(back, seen[0]);
    }

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        // 2026-11-30T09:30:00Z
        assert_eq!(civil(1_796_031_000), (2026, 11, 30, 9, 30, 0));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
    }
}
