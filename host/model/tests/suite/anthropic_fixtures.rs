//! The providers' own recorded/documented Anthropic streams, replayed byte for byte.

use serde_json::json;
use tern_model::mock::{MockModelServer, MockResponse, split_sse_events};
use tern_model::{ErrorKind, Message, ModelEvent, StopReason, Usage};

use super::common::*;

async fn replay(name: &str, response: MockResponse) -> Vec<ModelEvent> {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(response.header("request-id", "req_fixture"));
    let items = run(
        &*anthropic(&server),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(server.requests().len(), 1, "{name}: exactly one request");
    events(&items)
}

#[tokio::test]
async fn replay_splits_back_into_the_exact_fixture_bytes() {
    // The mock's per-event chunking must not alter a byte: concatenation is the file itself.
    for name in [
        "anthropic_docs_stream_basic_text.sse",
        "anthropic_sdk_fixture_basic_response.sse",
        "anthropic_sdk_fixture_max_tokens_truncated_tool_use.sse",
        "openai_chat_stream_parallel_tool_calls_usage.sse",
    ] {
        let bytes = fixture(name);
        assert_eq!(split_sse_events(&bytes).concat(), bytes, "{name}");
    }
}

#[tokio::test]
async fn docs_basic_text_stream() {
    let body = fixture("anthropic_docs_stream_basic_text.sse");
    let ev = replay("basic", MockResponse::sse_by_event(&body)).await;
    assert_eq!(
        ev,
        vec![
            ModelEvent::TextDelta("Hello".into()),
            ModelEvent::TextDelta("!".into()),
            ModelEvent::Usage(Usage {
                input: 25,
                output: 15,
                cache_read: 0,
                cache_creation: 0
            }),
            ModelEvent::Completed {
                stop_reason: StopReason::EndTurn,
                request_id: Some("req_fixture".into())
            },
        ]
    );
}

#[tokio::test]
async fn sdk_recording_without_trailing_newline_still_completes() {
    let body = fixture("anthropic_sdk_fixture_basic_response.sse");
    assert!(
        !body.ends_with(b"\n"),
        "fixture ends mid-line; the parser must cope"
    );
    let ev = replay("sdk basic", MockResponse::sse(body)).await;
    assert_eq!(text(&ev), "Hello there!");
    assert!(matches!(
        ev.last(),
        Some(ModelEvent::Completed {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
}

#[tokio::test]
async fn docs_text_then_tool_use_even_split_into_single_bytes() {
    let body = fixture("anthropic_docs_stream_text_then_tool_use.sse");
    // One HTTP chunk per byte: every SSE line and JSON string is split everywhere possible.
    let chunks: Vec<Vec<u8>> = body.iter().map(|b| vec![*b]).collect();
    let ev = replay("tool use", MockResponse::sse_chunks(chunks)).await;
    assert_eq!(
        text(&ev),
        "Okay, let's check the weather for San Francisco, CA:"
    );
    let tools: Vec<&ModelEvent> = ev
        .iter()
        .filter(|e| !matches!(e, ModelEvent::TextDelta(_)))
        .collect();
    assert_eq!(
        tools[0],
        &ModelEvent::ToolCallStarted {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "get_weather".into()
        }
    );
    assert_eq!(
        tools[1],
        &ModelEvent::ToolCallComplete {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "get_weather".into(),
            arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
        }
    );
    assert!(matches!(
        ev.last(),
        Some(ModelEvent::Completed {
            stop_reason: StopReason::ToolUse,
            ..
        })
    ));
}

#[tokio::test]
async fn sdk_tool_use_with_new_fields_and_cache_usage() {
    let body = fixture("anthropic_sdk_fixture_tool_use_response.sse");
    let ev = replay("sdk tool use", MockResponse::sse_by_event(&body)).await;
    assert!(ev.contains(&ModelEvent::ToolCallComplete {
        id: "toolu_01NRLabsLyVHZPKxbKvkfSMn".into(),
        name: "get_weather".into(),
        arguments: json!({"location": "Paris"}),
    }));
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 377,
        output: 65,
        cache_read: 0,
        cache_creation: 0
    })));
}

#[tokio::test]
async fn max_tokens_inside_a_tool_call_yields_no_executable_call() {
    let body = fixture("anthropic_sdk_fixture_max_tokens_truncated_tool_use.sse");
    let ev = replay("truncated", MockResponse::sse_by_event(&body)).await;
    assert!(
        !ev.iter()
            .any(|e| matches!(e, ModelEvent::ToolCallComplete { .. })),
        "a truncated call must not be executable: {ev:?}"
    );
    let incomplete = ev
        .iter()
        .find_map(|e| match e {
            ModelEvent::ToolCallIncomplete { id, name, reason } => Some((id, name, reason)),
            _ => None,
        })
        .expect("ToolCallIncomplete");
    assert_eq!(incomplete.0, "toolu_01EKqbqmZrGRXy18eN7m9kvY");
    assert_eq!(incomplete.1, "make_file");
    assert!(incomplete.2.contains("max_tokens"), "{}", incomplete.2);
    assert!(matches!(
        ev.last(),
        Some(ModelEvent::Completed {
            stop_reason: StopReason::MaxTokens,
            ..
        })
    ));
}

#[tokio::test]
async fn thinking_deltas_are_thinking_events_and_not_text() {
    let body = fixture("anthropic_docs_stream_extended_thinking.sse");
    let ev = replay("thinking", MockResponse::sse_by_event(&body)).await;
    assert_eq!(text(&ev), "27 * 453 = 12,231");
    let thinking: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking.len(),
        6,
        "one event per thinking_delta: {thinking:?}"
    );
    assert!(thinking[0].starts_with("Let me solve this step by step"));
    assert_eq!(thinking[5], "\n6. 10,800 + 1,350 + 81 = 12,231");
    // Thinking comes before the answer, as on the wire; the signature is not text.
    let first_text = ev
        .iter()
        .position(|e| matches!(e, ModelEvent::TextDelta(_)));
    let last_thinking = ev
        .iter()
        .rposition(|e| matches!(e, ModelEvent::ThinkingDelta(_)));
    assert!(last_thinking < first_text, "{ev:?}");
    assert!(matches!(
        ev.last(),
        Some(ModelEvent::Completed {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
}

#[tokio::test]
async fn docs_error_event_is_retried_then_surfaces_verbatim() {
    let error = fixture("anthropic_docs_stream_error_event.sse");
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse(error.clone()));
    server.enqueue(MockResponse::sse(fixture(
        "anthropic_sdk_fixture_basic_response.sse",
    )));
    let items = run(
        &*anthropic(&server),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    let ev = events(&items);
    match &ev[0] {
        ModelEvent::Retry {
            attempt: 1,
            reason,
            discard_partial: false,
            ..
        } => {
            assert!(reason.contains("Overloaded"), "{reason}")
        }
        other => panic!("expected a retry first, got {other:?}"),
    }
    assert_eq!(text(&ev), "Hello there!");
    assert_eq!(server.requests().len(), 2);

    // With retries off, the same event ends the turn with the provider's words.
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse(error));
    let items = run(
        &*anthropic_with(&server, |c| c.max_retries = Some(0)),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    let err = last_error(&items);
    assert_eq!(err.kind(), ErrorKind::Overloaded);
    assert_eq!(err.message(), "Overloaded");
    assert_eq!(err.status(), None);
}
