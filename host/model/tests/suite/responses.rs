//! The Responses API path (`wire_api = "responses"`): a recorded live stream, the mock's scripted
//! streams, the request tern sends back (reasoning, calls, outputs), and its error shapes.

use serde_json::{Value, json};
use tern_model::mock::responses::{ResponsesTurn, overflow_error};
use tern_model::mock::{MockModelServer, MockResponse};
use tern_model::{
    AssistantContent, ErrorKind, Message, ModelAdapter, ModelEvent, Reasoning, StopReason, Usage,
    WireApi,
};

use super::common::*;

fn responses(server: &MockModelServer) -> Box<dyn ModelAdapter> {
    openai_with(server, |c| c.wire_api = Some(WireApi::Responses))
}

async fn turn(response: MockResponse) -> (Vec<Item>, Value) {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(response.header("x-request-id", "req_resp"));
    let items = run(
        &*responses(&server),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    let sent = server.model_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/responses");
    (items, sent[0].json())
}

fn stop(ev: &[ModelEvent]) -> StopReason {
    match ev.last() {
        Some(ModelEvent::Completed { stop_reason, .. }) => stop_reason.clone(),
        other => panic!("not completed: {other:?}"),
    }
}

#[tokio::test]
async fn the_recorded_live_stream_yields_reasoning_then_the_call_and_usage() {
    let (items, body) = turn(MockResponse::sse_by_event(&fixture(
        "openai_responses_stream_reasoning_function_call.sse",
    )))
    .await;
    let ev = events(&items);
    let reasoning: Vec<&Reasoning> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Reasoning(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.len(), 1);
    assert_eq!(
        reasoning[0].id,
        "rs_013cd160f2c0e6d4016ac36068a78087d0aa09abe531709de8"
    );
    assert!(
        reasoning[0]
            .encrypted_content
            .as_deref()
            .is_some_and(|e| e.starts_with("gAAAAABqw2Bpk"))
    );
    assert!(ev.contains(&ModelEvent::ToolCallComplete {
        id: "call_43ZsAtxwfLdZeABXcOk4Db92".into(),
        name: "weather".into(),
        arguments: json!({"location": "Florence, Italy"}),
    }));
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 60,
        output: 94,
        cache_read: 0,
        cache_creation: 0
    })));
    assert_eq!(stop(&ev), StopReason::ToolUse);
    // What was asked for: stateless, encrypted reasoning back, the tools as function tools.
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["instructions"],
        "You are tern.\n\nProject rules: be brief."
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(body["max_output_tokens"], 512);
    assert_eq!(body["input"][0]["content"][0]["type"], "input_text");
}

#[tokio::test]
async fn text_streams_as_deltas_and_cached_tokens_are_split_out() {
    let (items, _) = turn(
        ResponsesTurn::with_usage(1000, 768, 5)
            .message("msg_1", &["Hel", "lo"])
            .completed(),
    )
    .await;
    let ev = events(&items);
    let deltas: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    // Streamed once: the `output_item.done` repeat of the text is not delivered twice.
    assert_eq!(deltas, ["Hel", "lo"]);
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 232,
        output: 5,
        cache_read: 768,
        cache_creation: 0
    })));
    assert_eq!(stop(&ev), StopReason::EndTurn);
}

#[tokio::test]
async fn a_reasoning_summary_streams_as_thinking_and_is_kept_in_the_item() {
    let (items, _) = turn(
        ResponsesTurn::new()
            .reasoning_summary("rs_1", "gAAAA-opaque", &["**Plan**", " read the file"])
            .message("msg_1", &["Done."])
            .completed(),
    )
    .await;
    let ev = events(&items);
    let thinking: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, ["**Plan**", " read the file"]);
    // The summary is not text, and the finished item still carries it for the next request.
    assert_eq!(text(&ev), "Done.");
    let kept = ev.iter().find_map(|e| match e {
        ModelEvent::Reasoning(r) => Some(r.clone()),
        _ => None,
    });
    let kept = kept.expect("the reasoning item");
    assert_eq!(kept.summary, ["**Plan** read the file"]);
    assert_eq!(kept.encrypted_content.as_deref(), Some("gAAAA-opaque"));
}

#[tokio::test]
async fn a_message_sent_only_as_a_done_item_still_reaches_the_text() {
    // Codex's own test servers send `output_item.done` items and `response.completed` only.
    let (items, _) = turn(
        ResponsesTurn::new()
            .event(
                json!({"type": "response.output_item.done", "output_index": 0,
                "item": {"type": "message", "role": "assistant", "id": "msg_x",
                    "content": [{"type": "output_text", "text": "Whole."}]}}),
            )
            .completed(),
    )
    .await;
    assert_eq!(text(&events(&items)), "Whole.");
}

#[tokio::test]
async fn parallel_calls_complete_each_with_its_own_call_id() {
    let (items, _) = turn(
        ResponsesTurn::new()
            .function_call("fc_a", "call_a", "read_file", &["{\"path\":", "\"a.txt\"}"])
            .function_call("fc_b", "call_b", "read_file", &["{\"path\":\"b.txt\"}"])
            .completed(),
    )
    .await;
    let ev = events(&items);
    let calls: Vec<(String, Value)> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallComplete { id, arguments, .. } => {
                Some((id.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a".to_owned(), json!({"path": "a.txt"})),
            ("call_b".to_owned(), json!({"path": "b.txt"}))
        ]
    );
}

#[tokio::test]
async fn a_call_cut_by_max_output_tokens_is_incomplete_and_the_stop_says_so() {
    let (items, _) = turn(
        ResponsesTurn::new()
            .function_call_unfinished("fc_a", "call_a", "read_file", &["{\"pa"])
            .incomplete("max_output_tokens"),
    )
    .await;
    let ev = events(&items);
    assert!(ev.iter().any(|e| matches!(e,
        ModelEvent::ToolCallIncomplete { id, reason, .. }
            if id == "call_a" && reason.contains("max_output_tokens"))));
    assert_eq!(stop(&ev), StopReason::MaxTokens);
}

#[tokio::test]
async fn overflow_is_typed_whether_refused_up_front_or_in_the_stream() {
    let (items, _) = turn(overflow_error()).await;
    let e = last_error(&items);
    assert_eq!(e.kind(), ErrorKind::ContextOverflow, "{e}");
    assert_eq!(e.status(), Some(400));
    assert!(e.overflow().is_some());
    let (items, _) = turn(ResponsesTurn::new().failed(
        "context_length_exceeded",
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
    ))
    .await;
    let e = last_error(&items);
    assert_eq!(e.kind(), ErrorKind::ContextOverflow, "{e}");
    assert!(e.message().contains("exceeds the context window"));
}

#[tokio::test]
async fn a_server_error_in_the_stream_is_retried_and_an_error_event_surfaces() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(ResponsesTurn::new().failed("server_error", "The server had an error"));
    server.enqueue(ResponsesTurn::new().message("m", &["ok"]).completed());
    let ev = events(
        &run(
            &*responses(&server),
            &request(vec![Message::user_text("hi")]),
        )
        .await,
    );
    assert!(ev.iter().any(|e| matches!(e, ModelEvent::Retry { .. })));
    assert_eq!(text(&ev), "ok");

    let flagged = ResponsesTurn::new().event(json!({"type": "error", "code": "invalid_prompt",
        "message": "Invalid prompt: flagged", "param": null}));
    let (items, _) = turn(MockResponse::sse_chunks(flagged.events())).await;
    let e = last_error(&items);
    assert_eq!(e.kind(), ErrorKind::BadRequest, "{e}");
    assert!(e.message().contains("flagged"));
}

#[tokio::test]
async fn a_stream_that_stops_before_completed_is_a_transport_error() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse_chunks(
        ResponsesTurn::new().message("m", &["part"]).events(),
    ));
    let adapter = openai_with(&server, |c| {
        c.wire_api = Some(WireApi::Responses);
        c.max_retries = Some(0);
    });
    let items = run(&*adapter, &request(vec![Message::user_text("hi")])).await;
    let e = last_error(&items);
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert!(e.message().contains("before response.completed"), "{e}");
}

#[tokio::test]
async fn the_next_request_carries_reasoning_the_call_and_its_output() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(ResponsesTurn::new().message("m", &["fine"]).completed());
    let history = vec![
        Message::user_text("weather in Florence?"),
        assistant(vec![
            AssistantContent::Reasoning(Reasoning {
                id: "rs_1".into(),
                summary: vec!["Checking the tool.".into()],
                encrypted_content: Some("gAAAA-secret".into()),
            }),
            call("call_1", "get_weather", json!({"location": "Florence"})),
        ]),
        user(vec![result("call_1", "40 C", false)]),
    ];
    run(&*responses(&server), &request(history)).await;
    let body = server.model_requests()[0].json();
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text",
            "text": "Checking the tool."}], "encrypted_content": "gAAAA-secret"})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": "{\"location\":\"Florence\"}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "40 C"})
    );
}

#[tokio::test]
async fn chat_and_anthropic_requests_leave_reasoning_out() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        tern_model::mock::script::OpenAiTurn::new()
            .text(&["x"])
            .finish("stop"),
    );
    server.enqueue(
        tern_model::mock::script::AnthropicTurn::new()
            .text(&["x"])
            .finish("end_turn"),
    );
    let history = vec![
        Message::user_text("q"),
        assistant(vec![AssistantContent::Reasoning(Reasoning {
            id: "rs_1".into(),
            summary: vec![],
            encrypted_content: Some("gAAAA".into()),
        })]),
        Message::user_text("again"),
    ];
    run(&*openai(&server), &request(history.clone())).await;
    run(&*anthropic(&server), &request(history)).await;
    for sent in server.model_requests() {
        let text = String::from_utf8_lossy(&sent.body).into_owned();
        assert!(!text.contains("gAAAA"), "{text}");
    }
    assert_valid_anthropic(&server.model_requests()[1].json());
}
