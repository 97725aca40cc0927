//! The loop alone: a scripted model and a fake tool executor, no processes, no HTTP. What is
//! proven here — order, concurrency, the repeat guard, truncated calls, cancellation — must hold
//! whatever the tools and the provider are.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use serde_json::json;
use tern_model::{
    EventStream, Message, ModelAdapter, ModelError, ModelEvent, ModelRequest, StopReason, ToolSpec,
    UserContent,
};
use tern_protocol::{Envelope, ErrorKind, Event, RunStatus, ToolCall, ToolResult, Usage};
use tokio_util::sync::CancellationToken;

use super::{Agent, AgentSettings, MAX_CONTINUATIONS};
use crate::agent::context::compact::SUMMARY_MARKER;
use crate::agent::{
    bus::{EventBus, Subscriber},
    context::budget::{Budget, Limits},
    conversation::Conversation,
    executor::ToolExecutor,
};

/// A conversation with no known window: never compacted.
fn conversation() -> Conversation {
    windowed(None)
}

fn windowed(window: Option<u64>) -> Conversation {
    Conversation::new(
        Vec::new(),
        Budget::new(
            tern_model::tokens::Tokenizer::Estimate,
            Limits {
                window,
                reserve: 100,
                compact_at: 0.8,
                compact_to: 0.5,
            },
        ),
        true,
    )
}

/// One scripted answer: a turn, or a refusal of the request.
enum Step {
    Turn(Vec<ModelEvent>),
    Fail(ModelError),
}

/// A model that plays scripted steps in order and records every request. A request for a
/// summary (its system prompt carries the compaction marker) is answered with a canned summary,
/// outside the script.
struct ScriptedModel {
    /// The model's name (the catalog decides from it whether it takes images).
    name: &'static str,
    steps: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<ModelRequest>>,
    summaries: AtomicUsize,
}

impl ScriptedModel {
    fn new(turns: Vec<Vec<ModelEvent>>) -> Arc<Self> {
        Self::script(turns.into_iter().map(Step::Turn).collect())
    }

    fn script(steps: Vec<Step>) -> Arc<Self> {
        Arc::new(Self {
            name: "scripted",
            steps: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
            summaries: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl ModelAdapter for ScriptedModel {
    fn name(&self) -> &str {
        self.name
    }
    fn provider(&self) -> tern_model::Provider {
        tern_model::Provider::Anthropic
    }
    async fn stream(
        &self,
        req: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        if req.system.iter().any(|s| s.contains(SUMMARY_MARKER)) {
            self.summaries.fetch_add(1, Ordering::SeqCst);
            return Ok(Box::pin(futures::stream::iter(
                answer("Goal: go. Files read: many.").into_iter().map(Ok),
            )));
        }
        self.requests.lock().unwrap().push(req.clone());
        let step = self
            .steps
            .lock()
            .unwrap()
            .pop_front()
            .expect("no step left");
        Ok(match step {
            Step::Turn(turn) => Box::pin(futures::stream::iter(turn.into_iter().map(Ok))),
            Step::Fail(e) => Box::pin(futures::stream::iter([Err(e)])),
        })
    }
}

fn calls(list: &[(&str, &str)]) -> Vec<ModelEvent> {
    let mut events: Vec<ModelEvent> = list
        .iter()
        .map(|(id, name)| ModelEvent::ToolCallComplete {
            id: (*id).into(),
            name: (*name).into(),
            arguments: json!({"id": id}),
        })
        .collect();
    events.push(ModelEvent::Completed {
        stop_reason: StopReason::ToolUse,
        request_id: None,
    });
    events
}

fn answer(text: &str) -> Vec<ModelEvent> {
    vec![
        ModelEvent::TextDelta(text.into()),
        ModelEvent::Usage(Usage {
            input: 5,
            output: 2,
            ..Usage::default()
        }),
        ModelEvent::Completed {
            stop_reason: StopReason::EndTurn,
            request_id: None,
        },
    ]
}

/// Tools named `read*` are read-only. Each call records when it started and ended; a `read_wait`
/// call waits until three `read_wait` calls have started (or gives up after a while and says so
/// in its result): with three in one batch, that only happens when they really overlap.
#[derive(Default)]
struct FakeTools {
    waiting_started: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    log: Mutex<Vec<String>>,
    /// Cancelled from inside `slow` calls, to simulate Ctrl-C in the middle of a tool.
    cancel_on_slow: Mutex<Option<CancellationToken>>,
}

#[async_trait]
impl ToolExecutor for FakeTools {
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    fn is_read_only(&self, name: &str) -> bool {
        name.starts_with("read")
    }

    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ToolResult {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        self.log.lock().unwrap().push(format!("start {}", call.id));
        let mut content = format!("ran {}", call.id);
        if call.name == "read_wait" {
            self.waiting_started.fetch_add(1, Ordering::SeqCst);
            let waited = tokio::time::timeout(Duration::from_secs(5), async {
                while self.waiting_started.load(Ordering::SeqCst) < 3 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await;
            if waited.is_err() {
                content = "ran alone".into();
            }
        }
        if call.name == "read_big" {
            content = format!("{}\n", call.id).repeat(1_000);
        }
        if call.name == "slow" {
            if let Some(c) = self.cancel_on_slow.lock().unwrap().take() {
                c.cancel();
            }
            cancel.cancelled().await;
            content = "cancelled".into();
        }
        self.log.lock().unwrap().push(format!("end {}", call.id));
        self.running.fetch_sub(1, Ordering::SeqCst);
        ToolResult::text(call.id.clone(), content)
    }
}

struct Collect(Arc<Mutex<Vec<Event>>>);
impl Subscriber for Collect {
    fn on_event(&mut self, e: &Envelope) {
        self.0.lock().unwrap().push(e.event.clone());
    }
}

fn agent(model: Arc<ScriptedModel>, tools: Arc<FakeTools>) -> (Agent, Arc<Mutex<Vec<Event>>>) {
    let bus = EventBus::new("r", "s");
    let events = Arc::new(Mutex::new(Vec::new()));
    bus.subscribe(Box::new(Collect(events.clone())));
    let agent = Agent {
        model,
        tools,
        bus,
        settings: AgentSettings {
            system: vec!["system".into()],
            max_steps: 10,
            max_tokens: 100,
            spill_dir: None,
            spill_readable: false,
            tool_calls: tern_model::ToolCallMode::Native,
            auth_hint: None,
        },
        before_compact: None,
    };
    (agent, events)
}

/// The tool results of the user message that follows the `n`-th assistant turn.
fn results_in(request: &ModelRequest) -> Vec<ToolResult> {
    match request.messages.last() {
        Some(Message::User { content }) => content
            .iter()
            .filter_map(|c| match c {
                UserContent::ToolResult(r) => Some(r.clone()),
                UserContent::Text { .. } | UserContent::Image(_) => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

// The tests, by what they prove: one turn's calls and how it ends; the window (compaction,
// refusals, answers cut by max_tokens).
mod turns;
mod window;
