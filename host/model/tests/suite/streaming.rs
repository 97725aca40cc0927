//! Streaming-first delivery and cancellation.

use std::time::Duration;

use futures::StreamExt;
use tern_model::mock::script::{AnthropicTurn, OpenAiTurn};
use tern_model::mock::{Gate, MockModelServer, MockResponse};
use tern_model::{ErrorKind, Message, ModelEvent};
use tokio_util::sync::CancellationToken;

use super::common::*;

/// The server sends message_start, ping, block start and one delta, then waits for the test.
/// If the adapter buffered anything, the delta would never arrive and the timeout would fire.
#[tokio::test]
async fn first_delta_arrives_while_the_server_is_still_holding_the_rest() {
    for provider in ["anthropic", "openai"] {
        let server = MockModelServer::start().await.unwrap();
        let gate = Gate::new();
        let (response, held_after) = match provider {
            "anthropic" => (
                AnthropicTurn::new()
                    .text(&["first", " second"])
                    .finish("end_turn"),
                4,
            ),
            _ => (
                OpenAiTurn::new().text(&["first", " second"]).finish("stop"),
                2,
            ),
        };
        server.enqueue(response.pause_after(held_after, &gate));
        let adapter = if provider == "anthropic" {
            anthropic(&server)
        } else {
            openai(&server)
        };
        let mut stream = adapter
            .stream(
                &request(vec![Message::user_text("hi")]),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
        let first = first
            .unwrap_or_else(|_| panic!("{provider}: first delta held back until the stream ended"));
        assert_eq!(
            first.unwrap().unwrap(),
            ModelEvent::TextDelta("first".into()),
            "{provider}"
        );
        gate.open();
        let rest: Vec<_> = stream.collect().await;
        assert_eq!(text(&events(&rest)), " second");
    }
}

#[tokio::test]
async fn cancel_stops_a_held_stream_promptly_and_closes_the_connection() {
    let server = MockModelServer::start().await.unwrap();
    let gate = Gate::new(); // never opened
    server.enqueue(
        AnthropicTurn::new()
            .text(&["a", "b"])
            .finish("end_turn")
            .pause_after(4, &gate),
    );
    let adapter = anthropic(&server);
    let cancel = CancellationToken::new();
    let mut stream = adapter
        .stream(&request(vec![Message::user_text("hi")]), cancel.clone())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ModelEvent::TextDelta("a".into())
    );
    cancel.cancel();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(2), stream.collect())
        .await
        .expect("cancel was not prompt");
    assert_eq!(rest.len(), 1);
    assert_eq!(last_error(&rest).kind(), ErrorKind::Cancelled);
    assert!(
        server.wait_for_disconnect(Duration::from_secs(2)).await,
        "HTTP connection left open"
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = MockModelServer::start().await.unwrap();
    let gate = Gate::new();
    server.enqueue(
        OpenAiTurn::new()
            .text(&["a", "b"])
            .finish("stop")
            .pause_after(2, &gate),
    );
    let adapter = openai(&server);
    let mut stream = adapter
        .stream(
            &request(vec![Message::user_text("hi")]),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ModelEvent::TextDelta("a".into())
    );
    drop(stream);
    assert!(
        server.wait_for_disconnect(Duration::from_secs(2)).await,
        "HTTP connection left open"
    );
}

#[tokio::test]
async fn cancel_during_retry_backoff_ends_the_turn() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::json(429, &serde_json::json!({})).header("retry-after", "30"));
    let adapter = anthropic(&server);
    let cancel = CancellationToken::new();
    let mut stream = adapter
        .stream(&request(vec![Message::user_text("hi")]), cancel.clone())
        .await
        .unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(ModelEvent::Retry { .. }))
    ));
    cancel.cancel();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(2), stream.collect())
        .await
        .expect("cancel was not prompt");
    assert_eq!(last_error(&rest).kind(), ErrorKind::Cancelled);
}

#[tokio::test]
async fn slow_chunks_still_arrive_in_order() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        AnthropicTurn::new()
            .text(&["a", "b", "c"])
            .finish("end_turn")
            .delay_between(Duration::from_millis(5)),
    );
    let ev = events(
        &run(
            &*anthropic(&server),
            &request(vec![Message::user_text("hi")]),
        )
        .await,
    );
    assert_eq!(text(&ev), "abc");
}
