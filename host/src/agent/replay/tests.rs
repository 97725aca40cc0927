//! Reading a recording: its turns, summaries, window and inputs; what it refuses.

use serde_json::json;
use tern_model::{Message, ToolChoice};

use super::*;

fn envelope(seq: u64, event: Event) -> Envelope {
    Envelope {
        run_id: "r1".into(),
        session_id: "s1".into(),
        seq,
        ts: "2026-12-01T00:00:00.000Z".into(),
        event,
    }
}

fn response(step: u32, text: &str, calls: Vec<ToolCall>, stop: &str) -> Event {
    Event::ModelResponse {
        step,
        stop_reason: stop.into(),
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 50,
        cache_creation_tokens: 0,
        latency_ms: 900,
        request_id: Some(format!("req_{step}")),
        text: text.into(),
        tool_calls: calls.len(),
        calls,
        incomplete: Vec::new(),
    }
}

/// `run_started.provider` stays a string on the wire (a recording may come from a newer
/// tern); reading it is where an unknown provider becomes an error, never Anthropic.
#[test]
fn a_recording_of_an_unknown_provider_is_refused_by_name() {
    let started = |provider: &str| {
        envelope(
            1,
            Event::RunStarted {
                goal: "g".into(),
                model: "m".into(),
                provider: provider.into(),
                servers: vec![],
                cwd: "/w".into(),
                parent_run_id: None,
            },
        )
    };
    let events = vec![
        started("gemini"),
        envelope(2, response(1, "hi", vec![], "end_turn")),
    ];
    let err = Recording::from_events(&events).unwrap_err();
    assert!(
        matches!(err, RecordingError::UnknownProvider(ref p) if p == "gemini"),
        "{err:?}"
    );
    assert!(err.to_string().contains("hint: "), "{err}");
    let events = vec![
        started("openai"),
        envelope(2, response(1, "hi", vec![], "end_turn")),
    ];
    let rec = Recording::from_events(&events).unwrap();
    assert_eq!(rec.provider, tern_model::Provider::Openai);
}

fn recording() -> Recording {
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "fs__read_file".into(),
        arguments: json!({"path": "a.txt"}),
    };
    let events = vec![
        envelope(
            1,
            Event::RunStarted {
                goal: "read a".into(),
                model: "claude-sonnet-4-5".into(),
                provider: "anthropic".into(),
                servers: vec!["fs".into()],
                cwd: "/w".into(),
                parent_run_id: None,
            },
        ),
        envelope(2, response(1, "Let me look at it.", vec![call], "tool_use")),
        envelope(3, response(2, "It says hi.", vec![], "end_turn")),
    ];
    Recording::from_events(&events).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        system: vec!["sys".into()],
        messages: vec![Message::user_text("go")],
        tools: vec![],
        max_tokens: 100,
        tool_choice: ToolChoice::Auto,
        cache: true,
    }
}

async fn collect(model: &ReplayModel) -> Result<Vec<ModelEvent>, ModelError> {
    let stream = model.stream(&request(), CancellationToken::new()).await?;
    stream.collect::<Vec<_>>().await.into_iter().collect()
}

#[tokio::test]
async fn turns_come_back_in_order_as_the_adapter_produced_them() {
    let model = ReplayModel::new(&recording(), Pacing::Instant, None);
    assert_eq!(model.name(), "claude-sonnet-4-5");
    let first = collect(&model).await.unwrap();
    let text: String = first
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me look at it.");
    assert!(first.contains(&ModelEvent::ToolCallComplete {
        id: "toolu_1".into(),
        name: "fs__read_file".into(),
        arguments: json!({"path": "a.txt"}),
    }));
    assert!(first.contains(&ModelEvent::Usage(Usage {
        input: 100,
        output: 20,
        cache_read: 50,
        cache_creation: 0
    })));
    assert_eq!(
        first.last(),
        Some(&ModelEvent::Completed {
            stop_reason: StopReason::ToolUse,
            request_id: Some("req_1".into())
        })
    );
    let second = collect(&model).await.unwrap();
    assert_eq!(second[0], ModelEvent::TextDelta("It says hi.".into()));
    // A third turn is not in the recording: the run ends with an error saying so.
    let err = collect(&model).await.unwrap_err();
    assert!(err.to_string().contains("has only 2"), "{err}");
}

#[tokio::test]
async fn the_hook_runs_before_every_turn() {
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    let hook: TurnHook = Arc::new(move || {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    let model = ReplayModel::new(&recording(), Pacing::Instant, Some(hook));
    collect(&model).await.unwrap();
    collect(&model).await.unwrap();
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[test]
fn a_recording_without_call_arguments_is_refused() {
    let mut old = response(1, "", vec![], "tool_use");
    if let Event::ModelResponse { tool_calls, .. } = &mut old {
        *tool_calls = 1;
    }
    let events = vec![
        envelope(
            1,
            Event::RunStarted {
                goal: "g".into(),
                model: "m".into(),
                provider: "anthropic".into(),
                servers: vec![],
                cwd: "/w".into(),
                parent_run_id: None,
            },
        ),
        envelope(2, old),
    ];
    let err = Recording::from_events(&events).unwrap_err();
    assert!(matches!(err, RecordingError::CallsNotRecorded { .. }));
    assert!(matches!(
        Recording::from_events(&events[1..]),
        Err(RecordingError::NoRunStarted)
    ));
}

#[test]
fn text_streams_a_few_words_at_a_time() {
    let p = pieces("one two three four\nfive");
    assert_eq!(p.concat(), "one two three four\nfive");
    assert_eq!(p[0], "one two three ");
    assert!(p.len() >= 3);
}
