//! A model that answers from a recording: the model turns of a run's `events.jsonl`, served in
//! order as the same [`ModelEvent`]s the provider's adapter produced, with no network.
//!
//! `tern replay`, `tern demo` and `tern eval --replay` give it to the engine in place of the
//! configured model ([`EngineOptions::model`](super::EngineOptions)); everything else — servers,
//! gateway, permission rules, audit, events — runs for real. The model does not look at what it
//! is asked: turn N of the replay is turn N of the recording, whatever the tools returned. That
//! is what makes a replay a test of the tools and the workspace rather than of the model.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use tern_model::{EventStream, ModelAdapter, ModelError, ModelEvent, ModelRequest, StopReason};
use tern_protocol::{Envelope, Event, IncompleteCall, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

use super::context::compact::SUMMARY_MARKER;

mod compare;
mod drive;

pub use compare::{Checker, Expected, Normalizer, Observer, RecordedCall};
pub use drive::{ReplayApprover, ReplayOutcome, replay};

/// One model turn as the run recorded it (`model_response`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedTurn {
    pub step: u32,
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub incomplete: Vec<IncompleteCall>,
    pub stop_reason: String,
    pub usage: Usage,
    pub request_id: Option<String>,
    pub latency_ms: u64,
}

/// What a replay needs from a run's events.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The recorded run's id.
    pub run_id: String,
    pub goal: String,
    pub model: String,
    pub provider: tern_model::Provider,
    /// The directory the run worked in.
    pub cwd: String,
    /// What the user said, one entry per input the run handled (`tern run` has one: the goal;
    /// a REPL session one per prompt), read from each input's first model request.
    pub inputs: Vec<String>,
    /// The main loop's model turns, in order.
    pub turns: Vec<RecordedTurn>,
    /// The summaries the model wrote when the conversation was compacted, in order.
    pub summaries: Vec<String>,
    /// The context window the run worked with, when it was known.
    pub context_window: Option<u64>,
}

/// Why events cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("the recording has no run_started event: it is not a tern run's events.jsonl")]
    NoRunStarted,
    #[error(
        "the recording's provider {0:?} is not one this tern knows (anthropic, openai)\nhint: \
         replay it with the tern version that recorded it"
    )]
    UnknownProvider(String),
    #[error(
        "the recording holds no model turns (it was written by a tern that did not record them, or \
         the run failed before the model answered)"
    )]
    NoTurns,
    #[error(
        "model turn {step} of the recording made {made} tool call(s) but recorded none of their \
         arguments (a recording from an older tern cannot be replayed)"
    )]
    CallsNotRecorded { step: u32, made: usize },
}

impl Recording {
    /// Reads the recording out of a run's events.
    pub fn from_events(events: &[Envelope]) -> Result<Recording, RecordingError> {
        let (run_id, goal, model, provider, cwd) = events
            .iter()
            .find_map(|e| match &e.event {
                Event::RunStarted {
                    goal,
                    model,
                    provider,
                    cwd,
                    ..
                } => Some((
                    e.run_id.clone(),
                    goal.clone(),
                    model.clone(),
                    provider.clone(),
                    cwd.clone(),
                )),
                _ => None,
            })
            .ok_or(RecordingError::NoRunStarted)?;
        let provider = tern_model::Provider::parse(&provider)
            .ok_or(RecordingError::UnknownProvider(provider))?;
        let mut turns = Vec::new();
        let mut summaries = Vec::new();
        let mut context_window = None;
        let mut inputs = Vec::new();
        let mut awaiting_input = true;
        for e in events {
            match &e.event {
                Event::ModelRequest { request, .. } if awaiting_input => {
                    awaiting_input = false;
                    inputs.push(last_user_text(request).unwrap_or_else(|| goal.clone()));
                }
                Event::TurnFinished {
                    context_window: window,
                    ..
                } => {
                    awaiting_input = true;
                    context_window = window.or(context_window);
                }
                Event::ModelResponse {
                    step,
                    stop_reason,
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    cache_creation_tokens,
                    latency_ms,
                    request_id,
                    text,
                    tool_calls,
                    calls,
                    incomplete,
                } => {
                    if *tool_calls > calls.len() + incomplete.len() {
                        return Err(RecordingError::CallsNotRecorded {
                            step: *step,
                            made: *tool_calls,
                        });
                    }
                    turns.push(RecordedTurn {
                        step: *step,
                        text: text.clone(),
                        calls: calls.clone(),
                        incomplete: incomplete.clone(),
                        stop_reason: stop_reason.clone(),
                        usage: Usage {
                            input: *input_tokens,
                            output: *output_tokens,
                            cache_read: *cache_read_tokens,
                            cache_creation: *cache_creation_tokens,
                        },
                        request_id: request_id.clone(),
                        latency_ms: *latency_ms,
                    });
                }
                Event::Compaction {
                    summary: Some(summary),
                    ..
                } => summaries.push(summary.clone()),
                _ => {}
            }
        }
        if turns.is_empty() {
            return Err(RecordingError::NoTurns);
        }
        if inputs.is_empty() {
            inputs.push(goal.clone());
        }
        Ok(Recording {
            run_id,
            inputs,
            goal,
            model,
            provider,
            cwd,
            turns,
            summaries,
            context_window,
        })
    }
}

/// The text of the last user message of a recorded request (the input that started the turn).
fn last_user_text(request: &serde_json::Value) -> Option<String> {
    let last = request["messages"].as_array()?.last()?;
    if last["role"] != "user" {
        return None;
    }
    let text: Vec<&str> = last["content"]
        .as_array()?
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// How fast the recorded turns are played.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// As fast as the loop asks (replay, eval).
    Instant,
    /// As a live run looks: a pause for the model to "think" (the recorded latency, capped),
    /// then the text in small pieces. `speed` 2.0 plays twice as fast.
    Live { speed: f64 },
}

impl Pacing {
    fn scaled(self, d: Duration) -> Duration {
        match self {
            Pacing::Instant => Duration::ZERO,
            Pacing::Live { speed } if speed > 0.0 => d.div_f64(speed),
            Pacing::Live { .. } => d,
        }
    }
}

/// Shortest and longest "thinking" pause of a live-paced turn, whatever the recording's latency
/// (a recording made against a scripted model has almost none).
const MIN_THINK: Duration = Duration::from_millis(700);
const MAX_THINK: Duration = Duration::from_millis(1_600);
/// Pause between streamed pieces of text in a live-paced turn.
const PIECE_DELAY: Duration = Duration::from_millis(18);

/// Called when the loop asks for a turn (before it is served): `tern replay` reports how the
/// previous step's tool calls compared with the recording here.
pub type TurnHook = Arc<dyn Fn() + Send + Sync>;

/// A [`ModelAdapter`] serving a [`Recording`]'s turns in order.
pub struct ReplayModel {
    name: String,
    provider: tern_model::Provider,
    context_window: Option<u64>,
    turns: Mutex<VecDeque<RecordedTurn>>,
    summaries: Mutex<VecDeque<String>>,
    total: usize,
    pacing: Pacing,
    hook: Option<TurnHook>,
}

impl ReplayModel {
    pub fn new(recording: &Recording, pacing: Pacing, hook: Option<TurnHook>) -> Self {
        Self {
            name: recording.model.clone(),
            provider: recording.provider,
            context_window: recording.context_window,
            turns: Mutex::new(recording.turns.iter().cloned().collect()),
            summaries: Mutex::new(recording.summaries.iter().cloned().collect()),
            total: recording.turns.len(),
            pacing,
            hook,
        }
    }

    /// The events of one recorded turn, with the delay before each.
    fn events(&self, turn: RecordedTurn) -> Vec<(Duration, ModelEvent)> {
        let mut out = Vec::new();
        let think = self
            .pacing
            .scaled(Duration::from_millis(turn.latency_ms).clamp(MIN_THINK, MAX_THINK));
        let mut first = Some(think);
        let mut delay = || first.take().unwrap_or(self.pacing.scaled(PIECE_DELAY));
        for piece in pieces(&turn.text) {
            out.push((delay(), ModelEvent::TextDelta(piece)));
        }
        for call in turn.calls {
            out.push((
                delay(),
                ModelEvent::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                },
            ));
            out.push((
                Duration::ZERO,
                ModelEvent::ToolCallComplete {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                },
            ));
        }
        for IncompleteCall { id, name, reason } in turn.incomplete {
            out.push((
                Duration::ZERO,
                ModelEvent::ToolCallIncomplete { id, name, reason },
            ));
        }
        out.push((delay(), ModelEvent::Usage(turn.usage)));
        out.push((
            Duration::ZERO,
            ModelEvent::Completed {
                stop_reason: stop_reason(&turn.stop_reason),
                request_id: turn.request_id,
            },
        ));
        out
    }

    fn summary_events(&self, summary: String) -> Vec<(Duration, ModelEvent)> {
        vec![
            (Duration::ZERO, ModelEvent::TextDelta(summary)),
            (
                Duration::ZERO,
                ModelEvent::Completed {
                    stop_reason: StopReason::EndTurn,
                    request_id: None,
                },
            ),
        ]
    }
}

/// Text in the pieces a live stream would bring: a few words at a time.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for part in text.split_inclusive([' ', '\n']) {
        current.push_str(part);
        words += 1;
        if words == 3 || part.ends_with('\n') {
            out.push(std::mem::take(&mut current));
            words = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        other => StopReason::Other(other.to_string()),
    }
}

#[async_trait::async_trait]
impl ModelAdapter for ReplayModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> tern_model::Provider {
        self.provider
    }

    async fn context_window(&self) -> Option<u32> {
        self.context_window.and_then(|w| u32::try_from(w).ok())
    }

    async fn stream(
        &self,
        req: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        if let Some(hook) = &self.hook {
            hook();
        }
        let summarizing = req.system.iter().any(|s| s.contains(SUMMARY_MARKER));
        let events = if summarizing {
            let next = self.summaries.lock().ok().and_then(|mut q| q.pop_front());
            match next {
                Some(summary) => self.summary_events(summary),
                None => {
                    return Err(ModelError::InvalidRequest(
                        "the replay asked for a summary of the conversation, but the recording \
                         has none left (the recorded run compacted less often)"
                            .into(),
                    ));
                }
            }
        } else {
            let next = self.turns.lock().ok().and_then(|mut q| q.pop_front());
            match next {
                Some(turn) => self.events(turn),
                None => {
                    return Err(ModelError::InvalidRequest(format!(
                        "the replay asked for model turn {} but the recording has only {}",
                        self.total + 1,
                        self.total
                    )));
                }
            }
        };
        let stream = futures::stream::iter(events).then(move |(delay, event)| {
            let cancel = cancel.clone();
            async move {
                if !delay.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return Err(ModelError::Cancelled),
                    }
                }
                Ok(event)
            }
        });
        Ok(Box::pin(stream))
    }
}

#[cfg(test)]
mod tests;
