//! HTTP errors, retries and broken streams on the Anthropic path.

use std::time::{Duration, Instant};

use serde_json::json;
use tern_model::mock::script::AnthropicTurn;
use tern_model::mock::{MockModelServer, MockResponse};
use tern_model::{ErrorKind, Message, ModelEvent};

use super::common::*;

fn hi() -> tern_model::ModelRequest {
    request(vec![Message::user_text("hi")])
}

#[tokio::test]
async fn observed_400s_surface_verbatim_with_request_id_and_are_not_retried() {
    let observed = fixture_json("anthropic_observed_400_errors.json");
    for case in [
        "tool_use_without_result",
        "orphan_tool_result",
        "empty_text_block",
    ] {
        let body = &observed[case]["body"];
        let server = MockModelServer::start().await.unwrap();
        server.enqueue(MockResponse::json(400, body).header("request-id", "req_from_header"));
        let items = run(&*anthropic(&server), &hi()).await;
        assert_eq!(items.len(), 1, "{case}: no retry events, just the error");
        let err = last_error(&items);
        assert_eq!(err.kind(), ErrorKind::BadRequest);
        assert_eq!(err.status(), Some(400));
        assert_eq!(
            err.message(),
            body["error"]["message"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(err.request_id(), Some("req_from_header"));
        assert!(
            err.to_string()
                .contains(body["error"]["message"].as_str().unwrap())
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{case}: 400 must not be retried"
        );
    }
}

#[tokio::test]
async fn auth_and_not_found_are_final_and_fall_back_to_the_body_request_id() {
    let docs = fixture_json("anthropic_docs_error_body.json");
    for (status, kind) in [
        (401, ErrorKind::Auth),
        (403, ErrorKind::Auth),
        (404, ErrorKind::NotFound),
    ] {
        let server = MockModelServer::start().await.unwrap();
        server.enqueue(MockResponse::json(status, &docs));
        let err = last_error(&run(&*anthropic(&server), &hi()).await);
        assert_eq!(err.kind(), kind);
        assert_eq!(err.message(), "The requested resource could not be found.");
        assert_eq!(err.request_id(), Some("req_011CSHoEeqs5C35K2UUqR7Fy"));
        assert_eq!(server.requests().len(), 1);
    }
}

#[tokio::test]
async fn rate_limit_honours_retry_after_seconds() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        MockResponse::json(429, &json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}))
            .header("retry-after", "1"),
    );
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let started = Instant::now();
    let ev = events(&run(&*anthropic(&server), &hi()).await);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited {:?}",
        started.elapsed()
    );
    match &ev[0] {
        ModelEvent::Retry {
            attempt: 1,
            delay,
            reason,
            discard_partial: false,
        } => {
            assert_eq!(
                *delay,
                Duration::from_secs(1),
                "retry-after replaces the 1 ms test backoff"
            );
            assert!(
                reason.contains("slow down") && reason.contains("429"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(text(&ev), "ok");
}

#[tokio::test]
async fn retry_after_ms_takes_precedence() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        MockResponse::json(429, &json!({}))
            .header("retry-after", "30")
            .header("retry-after-ms", "20"),
    );
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let ev = events(&run(&*anthropic(&server), &hi()).await);
    assert!(
        matches!(&ev[0], ModelEvent::Retry { delay, .. } if *delay == Duration::from_millis(20))
    );
}

#[tokio::test]
async fn overloaded_529_and_5xx_are_retried_with_events() {
    let server = MockModelServer::start().await.unwrap();
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    server.enqueue(MockResponse::json(529, &overloaded));
    server.enqueue(MockResponse::json(
        503,
        &json!({"type": "error", "error": {"type": "api_error", "message": "down"}}),
    ));
    server.enqueue(MockResponse::json(408, &json!({})));
    server.enqueue(AnthropicTurn::new().text(&["fine"]).finish("end_turn"));
    let ev = events(&run(&*anthropic(&server), &hi()).await);
    let retries: Vec<u32> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Retry { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(retries, [1, 2, 3]);
    assert_eq!(text(&ev), "fine");
    assert_eq!(server.requests().len(), 4);
    // Every attempt sends the very same bytes.
    let bodies: Vec<Vec<u8>> = server.requests().into_iter().map(|r| r.body).collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
}

#[tokio::test]
async fn retries_stop_after_max_retries() {
    let server = MockModelServer::start().await.unwrap();
    for _ in 0..3 {
        server.enqueue(MockResponse::json(
            500,
            &json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
        ));
    }
    let items = run(
        &*anthropic_with(&server, |c| c.max_retries = Some(2)),
        &hi(),
    )
    .await;
    let err = last_error(&items);
    assert_eq!(err.kind(), ErrorKind::Server);
    assert_eq!(err.message(), "boom");
    assert_eq!(items.len(), 3, "two Retry events, then the error");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn spend_limit_429_and_x_should_retry_false_are_not_retried() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::json(
        429,
        &json!({"type": "error", "error": {"type": "rate_limit_error",
        "message": "spend limit", "details": {"error_code": "enforced_spend_limit_reached"}}}),
    ));
    let err = last_error(&run(&*anthropic(&server), &hi()).await);
    assert_eq!(
        (err.kind(), err.message().as_str()),
        (ErrorKind::RateLimited, "spend limit")
    );
    assert_eq!(server.requests().len(), 1);

    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::json(500, &json!({})).header("x-should-retry", "false"));
    run(&*anthropic(&server), &hi()).await;
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn dropped_connection_after_output_discards_the_partial_turn_and_retries() {
    let server = MockModelServer::start().await.unwrap();
    // message_start, ping, block start, "partial " delta — then the connection dies.
    let cut = AnthropicTurn::new()
        .text(&["partial ", "never sent"])
        .finish("end_turn");
    server.enqueue(cut.drop_after(4));
    server.enqueue(
        AnthropicTurn::new()
            .text(&["whole answer"])
            .finish("end_turn"),
    );
    let ev = events(&run(&*anthropic(&server), &hi()).await);
    assert_eq!(ev[0], ModelEvent::TextDelta("partial ".into()));
    assert!(
        matches!(&ev[1], ModelEvent::Retry { discard_partial: true, reason, .. } if reason.contains("transport")),
        "{:?}",
        ev[1]
    );
    assert_eq!(text(&ev), "whole answer");
}

#[tokio::test]
async fn mid_stream_overloaded_after_a_tool_call_started_is_retried_whole() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        AnthropicTurn::new()
            .text(&["Let me look."])
            .tool_use_unfinished("toolu_A", "read_file", &["{\"pa"])
            .error("overloaded_error", "Overloaded"),
    );
    server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_B", "read_file", &["{\"path\":\"a\"}"])
            .finish("tool_use"),
    );
    let ev = events(&run(&*anthropic(&server), &hi()).await);
    let retry_at = ev
        .iter()
        .position(|e| matches!(e, ModelEvent::Retry { .. }))
        .unwrap();
    assert!(matches!(
        ev[retry_at],
        ModelEvent::Retry {
            discard_partial: true,
            ..
        }
    ));
    assert!(
        ev[..retry_at]
            .iter()
            .all(|e| !matches!(e, ModelEvent::ToolCallComplete { .. }))
    );
    let complete: Vec<&ModelEvent> = ev
        .iter()
        .filter(|e| matches!(e, ModelEvent::ToolCallComplete { .. }))
        .collect();
    assert_eq!(
        complete,
        [&ModelEvent::ToolCallComplete {
            id: "toolu_B".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a"})
        }]
    );
}

#[tokio::test]
async fn a_stream_that_ends_without_message_stop_is_a_broken_stream() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse_chunks(
        AnthropicTurn::new().text(&["half"]).events(),
    ));
    let items = run(
        &*anthropic_with(&server, |c| c.max_retries = Some(0)),
        &hi(),
    )
    .await;
    let err = last_error(&items);
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(err.message().contains("message_stop"));
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    // Bind then drop a listener: the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = fast_config(
        tern_model::Provider::Anthropic,
        format!("http://127.0.0.1:{port}"),
    );
    cfg.max_retries = Some(1);
    let adapter =
        tern_model::build_adapter(&cfg, &env_with(&[("ANTHROPIC_API_KEY", SECRET)])).unwrap();
    let items = run(&*adapter, &hi()).await;
    assert!(matches!(items[0], Ok(ModelEvent::Retry { attempt: 1, .. })));
    assert_eq!(last_error(&items).kind(), ErrorKind::Transport);
    assert!(!format!("{items:?}").contains(SECRET));
}
