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

/// Attached images go before the text of the user message; a model known to take none is sent
/// a note in their place (a session continued on a text-only model), and the `model_request`
/// event carries each image's size, not its data.
#[tokio::test]
async fn attached_images_reach_a_vision_model_and_become_notes_for_a_text_only_one() {
    let png = tern_protocol::Image {
        mime_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    for (name, sees) in [("claude-sonnet-4-5", true), ("deepseek-chat", false)] {
        let model = Arc::new(ScriptedModel {
            name,
            ..Arc::into_inner(ScriptedModel::new(vec![answer("a pixel")])).unwrap()
        });
        let (agent, events) = agent(model.clone(), Arc::new(FakeTools::default()));
        let mut conv = conversation();
        let out = agent
            .run_turn_with_images(
                &mut conv,
                "what is it?",
                vec![png.clone()],
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(out.status, RunStatus::Success);
        // The transcript keeps the image either way (a later model may take it).
        let Message::User { content } = &conv.transcript[0] else {
            panic!()
        };
        assert!(matches!(&content[0], UserContent::Image(i) if *i == png));
        let requests = model.requests.lock().unwrap();
        let Message::User { content } = &requests[0].messages[0] else {
            panic!()
        };
        match (&content[0], sees) {
            (UserContent::Image(i), true) => assert_eq!(*i, png),
            (UserContent::Text { text }, false) => {
                assert!(
                    text.contains("left out: this model takes no images"),
                    "{text}"
                )
            }
            (other, _) => panic!("{name}: {other:?}"),
        }
        assert!(matches!(&content[1], UserContent::Text { text } if text == "what is it?"));
        let logged = events
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                Event::ModelRequest { request, .. } => Some(request.to_string()),
                _ => None,
            })
            .unwrap();
        assert!(!logged.contains("iVBORw0KGgo"), "{logged}");
    }
}

#[tokio::test]
async fn results_come_back_in_the_models_order_one_per_call_and_writes_run_alone() {
    let model = ScriptedModel::new(vec![
        calls(&[("a", "read"), ("b", "write"), ("c", "write"), ("d", "read")]),
        answer("done"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, events) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.answer.as_deref(), Some("done"));
    assert_eq!(out.steps, 2);
    let requests = model.requests.lock().unwrap();
    let ids: Vec<String> = results_in(&requests[1])
        .iter()
        .map(|r| format!("{}:{}", r.call_id, r.content))
        .collect();
    assert_eq!(ids, ["a:ran a", "b:ran b", "c:ran c", "d:ran d"]);
    // Writes never overlap anything: the log is strictly start/end pairs in order.
    let log = tools.log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"
        ]
    );
    let finished: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn consecutive_read_only_calls_overlap_in_time() {
    let model = ScriptedModel::new(vec![
        calls(&[
            ("r1", "read_wait"),
            ("r2", "read_wait"),
            ("r3", "read_wait"),
        ]),
        answer("ok"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    let requests = model.requests.lock().unwrap();
    for r in results_in(&requests[1]) {
        assert_eq!(
            r.content,
            format!("ran {}", r.call_id),
            "ran one after another"
        );
    }
    assert_eq!(tools.max_running.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_same_call_three_times_in_a_row_is_answered_not_run() {
    let same = || calls(&[("x", "write")]);
    let model = ScriptedModel::new(vec![same(), same(), same(), answer("ok")]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    let requests = model.requests.lock().unwrap();
    let third = &results_in(&requests[3])[0];
    assert_eq!(third.error, Some(ErrorKind::RepeatedCall));
    assert!(
        third.content.contains("3 times in a row"),
        "{}",
        third.content
    );
    assert_eq!(tools.log.lock().unwrap().len(), 4, "only two calls ran");
}

#[tokio::test]
async fn a_truncated_call_is_explained_to_the_model_and_never_run() {
    let model = ScriptedModel::new(vec![
        vec![
            ModelEvent::ToolCallIncomplete {
                id: "t".into(),
                name: "write".into(),
                reason: "cut off by max_tokens".into(),
            },
            ModelEvent::Completed {
                stop_reason: StopReason::MaxTokens,
                request_id: None,
            },
        ],
        answer("sorry"),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, _) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert!(tools.log.lock().unwrap().is_empty());
    let requests = model.requests.lock().unwrap();
    let Some(Message::User { content }) = requests[1].messages.last() else {
        panic!("no user turn")
    };
    let text = format!("{content:?}");
    assert!(
        text.contains("was not run: cut off by max_tokens"),
        "{text}"
    );
}

#[tokio::test]
async fn cancelling_mid_tool_ends_the_turn_cancelled_with_a_result_for_every_call() {
    let model = ScriptedModel::new(vec![calls(&[("s", "slow"), ("w", "write")])]);
    let tools = Arc::new(FakeTools::default());
    let cancel = CancellationToken::new();
    *tools.cancel_on_slow.lock().unwrap() = Some(cancel.clone());
    let (agent, events) = agent(model.clone(), tools.clone());
    let mut conv = conversation();
    let out = agent.run_turn(&mut conv, "go", &cancel).await;
    assert_eq!(out.status, RunStatus::Cancelled);
    let Some(Message::User { content }) = conv.transcript.last() else {
        panic!("the results of the cancelled turn were not recorded")
    };
    let results: Vec<&ToolResult> = content
        .iter()
        .filter_map(|c| match c {
            UserContent::ToolResult(r) => Some(r),
            UserContent::Text { .. } | UserContent::Image(_) => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[1].error,
        Some(ErrorKind::Cancelled),
        "the write never ran"
    );
    assert_eq!(tools.log.lock().unwrap().len(), 2, "only the slow call ran");
    let finished = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::ToolCallFinished { .. }))
        .count();
    assert_eq!(finished, 2);
    // The next request tells the model this turn was interrupted.
    assert!(
        matches!(content.last(), Some(UserContent::Text { text }) if text == super::INTERRUPTED)
    );
}

#[test]
fn an_interrupted_answer_or_input_is_marked_once_where_the_next_request_reads_it() {
    let mut t = vec![Message::user_text("first")];
    super::mark_interrupted(&mut t);
    assert_eq!(t.len(), 1);
    let Message::User { content } = &t[0] else {
        panic!("not a user message")
    };
    assert!(matches!(&content[1], UserContent::Text { text } if text == super::INTERRUPTED));
    t.push(Message::assistant_text("half an ans"));
    super::mark_interrupted(&mut t);
    assert_eq!(t.len(), 3);
    let mut empty = Vec::new();
    super::mark_interrupted(&mut empty);
    assert!(empty.is_empty());
}

#[tokio::test]
async fn max_steps_stops_the_loop_with_its_status() {
    let model = ScriptedModel::new(vec![
        calls(&[("1", "write")]),
        calls(&[("2", "write")]),
        calls(&[("3", "write")]),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (mut agent, _) = agent(model.clone(), tools);
    agent.settings.max_steps = 2;
    let mut conv = conversation();
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::MaxSteps);
    assert_eq!(model.requests.lock().unwrap().len(), 2);
}

/// Tokens of a request as the scripted "provider" counts them.
fn size(req: &ModelRequest) -> u64 {
    tern_model::tokens::Tokenizer::Estimate.request(req)
}

#[tokio::test]
async fn a_long_session_is_compacted_and_never_outgrows_its_window() {
    // Each step reads ~1 400 tokens of output; the window holds about four of them.
    let mut turns: Vec<Vec<ModelEvent>> = (0..30)
        .map(|i| calls(&[(&format!("r{i}"), "read_big")]))
        .collect();
    turns.push(answer("all read"));
    let model = ScriptedModel::new(turns);
    let tools = Arc::new(FakeTools::default());
    let (mut agent, events) = agent(model.clone(), tools);
    agent.settings.max_steps = 40;
    let mut conv = windowed(Some(6_000));
    let out = agent
        .run_turn(&mut conv, "read everything", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success, "{:?}", out.error);
    assert_eq!(out.answer.as_deref(), Some("all read"));
    let requests = model.requests.lock().unwrap();
    assert_eq!(
        requests.len(),
        31,
        "every scripted turn served exactly once"
    );
    for (i, r) in requests.iter().enumerate() {
        assert!(size(r) + 100 <= 6_000, "request {i} is {} tokens", size(r));
        // The goal is in every request, and the history is valid for the providers.
        assert!(
            format!("{:?}", r.messages).contains("read everything"),
            "request {i}"
        );
        assert_eq!(
            tern_model::normalize::normalize(&r.messages),
            r.messages,
            "request {i}"
        );
    }
    let compactions = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::Compaction { .. }))
        .count();
    assert!(compactions >= 3, "{compactions}");
    assert!(conv.compacted, "the engine is told to save a snapshot");
}

#[tokio::test]
async fn a_refused_request_is_compacted_and_sent_again_once() {
    let too_long = ModelError::Api {
        provider: "anthropic",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: Some("invalid_request_error".into()),
        message: "prompt is too long: 9000 tokens > 5000 maximum".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    let model = ScriptedModel::script(vec![
        Step::Turn(calls(&[("a", "read_big")])),
        Step::Turn(calls(&[("b", "read_big")])),
        Step::Turn(calls(&[("c", "read_big")])),
        Step::Fail(too_long),
        Step::Turn(answer("done")),
    ]);
    let tools = Arc::new(FakeTools::default());
    let (agent, events) = agent(model.clone(), tools.clone());
    // No window known: only the refusal tells.
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success, "{:?}", out.error);
    assert_eq!(out.answer.as_deref(), Some("done"));
    assert_eq!(out.steps, 4, "the retry is the same step");
    assert_eq!(
        tools.log.lock().unwrap().len(),
        6,
        "each call ran exactly once"
    );
    let requests = model.requests.lock().unwrap();
    let (refused, retried) = (&requests[3], &requests[4]);
    assert!(
        size(retried) < size(refused) / 2,
        "{} vs {}",
        size(retried),
        size(refused)
    );
    assert!(size(retried) <= 5_000);
    assert_eq!(
        conv.budget.limits().window,
        Some(5_000),
        "the limit was learned"
    );
    let reasons: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::Compaction { reason, .. } => Some(reason.to_string()),
            _ => None,
        })
        .collect();
    assert!(reasons.iter().all(|r| r == "overflow") && !reasons.is_empty());
}

#[tokio::test]
async fn a_second_refusal_is_an_error_not_a_loop() {
    let refusal = || ModelError::Api {
        provider: "openai",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: None,
        message: "This model's maximum context length is 10 tokens.".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    // Something to shorten (three big results), so the first refusal earns one retry.
    let model = ScriptedModel::script(vec![
        Step::Turn(calls(&[("a", "read_big")])),
        Step::Turn(calls(&[("b", "read_big")])),
        Step::Fail(refusal()),
        Step::Fail(refusal()),
    ]);
    let (agent, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Error);
    assert!(out.error.unwrap().contains("maximum context length"));
    assert_eq!(model.requests.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn a_refused_request_nothing_can_shorten_is_not_sent_again() {
    let refusal = ModelError::Api {
        provider: "openai",
        kind: tern_model::ErrorKind::ContextOverflow,
        status: Some(400),
        error_type: None,
        message: "This model's maximum context length is 10 tokens.".into(),
        request_id: None,
        retry_after: None,
        should_retry: None,
        overflow: None,
    };
    let model = ScriptedModel::script(vec![Step::Fail(refusal), Step::Turn(answer("never"))]);
    let (agent, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = agent
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Error);
    let error = out.error.unwrap();
    assert!(error.contains("nothing in it can be shortened"), "{error}");
    assert!(error.contains("hint:"), "{error}");
    assert_eq!(model.requests.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_answer_cut_by_max_tokens_is_continued_a_bounded_number_of_times() {
    let cut = |text: &str| {
        vec![
            ModelEvent::TextDelta(text.into()),
            ModelEvent::Completed {
                stop_reason: StopReason::MaxTokens,
                request_id: None,
            },
        ]
    };
    let model = ScriptedModel::script(vec![Step::Turn(cut("one ")), Step::Turn(answer("two"))]);
    let (looper, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = looper
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Success);
    assert_eq!(out.answer.as_deref(), Some("one two"));

    let model = ScriptedModel::script(vec![
        Step::Turn(cut("a")),
        Step::Turn(cut("b")),
        Step::Turn(cut("c")),
        Step::Turn(answer("never")),
    ]);
    let (looper, _) = agent(model.clone(), Arc::new(FakeTools::default()));
    let mut conv = windowed(None);
    let out = looper
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await;
    assert_eq!(out.status, RunStatus::Truncated);
    assert_eq!(out.answer.as_deref(), Some("abc"));
    assert_eq!(
        model.requests.lock().unwrap().len(),
        1 + MAX_CONTINUATIONS as usize
    );
}
