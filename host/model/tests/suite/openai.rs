//! The OpenAI-compatible path: recorded streams, compatible-server quirks, and the requests sent.

use serde_json::{Value, json};
use tern_model::mock::script::OpenAiTurn;
use tern_model::mock::{MockModelServer, MockResponse};
use tern_model::{ErrorKind, Message, ModelEvent, StopReason, Usage, build_adapter};

use super::common::*;

async fn turn(response: MockResponse) -> Vec<ModelEvent> {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(response.header("x-request-id", "req_oa"));
    events(&run(&*openai(&server), &request(vec![Message::user_text("hi")])).await)
}

fn completed_calls(ev: &[ModelEvent]) -> Vec<(String, String, Value)> {
    ev.iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallComplete {
                id,
                name,
                arguments,
            } => Some((id.clone(), name.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

fn stop(ev: &[ModelEvent]) -> StopReason {
    match ev.last() {
        Some(ModelEvent::Completed { stop_reason, .. }) => stop_reason.clone(),
        other => panic!("not completed: {other:?}"),
    }
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[tokio::test]
async fn recorded_parallel_tool_calls_with_usage_chunk() {
    let ev = turn(MockResponse::sse_by_event(&fixture(
        "openai_chat_stream_parallel_tool_calls_usage.sse",
    )))
    .await;
    let calls = completed_calls(&ev);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_lQnnsesjFMWMQ5IeWPHzR4th");
    assert_eq!(calls[0].1, "GetWeatherArgs");
    assert!(calls[0].2.is_object() && calls[1].2.is_object());
    assert_eq!(calls[1].2["ticker"], "AAPL");
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 149,
        output: 60,
        cache_read: 0,
        cache_creation: 0
    })));
    assert_eq!(stop(&ev), StopReason::ToolUse);
    assert!(
        matches!(ev.last(), Some(ModelEvent::Completed { request_id: Some(id), .. }) if id == "req_oa")
    );
}

#[tokio::test]
async fn recorded_text_stream_and_length_stop() {
    let ev = turn(MockResponse::sse_by_event(&fixture(
        "openai_chat_stream_text_stop_usage.sse",
    )))
    .await;
    assert_eq!(
        text(&ev),
        "I'm unable to provide real-time updates, including current weather information. For the \
         latest weather in San Francisco, I recommend checking a reliable weather website or app \
         such as the Weather Channel, BBC Weather, or a local San Francisco news station."
    );
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 14,
        output: 47,
        cache_read: 0,
        cache_creation: 0
    })));
    assert_eq!(stop(&ev), StopReason::EndTurn);

    let ev = turn(MockResponse::sse(fixture("openai_chat_stream_length.sse"))).await;
    assert_eq!(text(&ev), "{\"");
    assert_eq!(stop(&ev), StopReason::MaxTokens);
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 17,
        output: 1,
        cache_read: 0,
        cache_creation: 0
    })));
}

#[tokio::test]
async fn reasoning_content_and_vllms_reasoning_field_are_thinking_not_text() {
    // DeepSeek / llama.cpp: `delta.reasoning_content`; vLLM ≥ 0.11: `delta.reasoning`.
    let ev = turn(
        OpenAiTurn::new()
            .reasoning_content(&["9.11 vs 9.8:", " compare tenths"])
            .data(&chunk(json!({"reasoning": " (vLLM)"}), Value::Null))
            .data(&chunk(
                json!({"reasoning_content": "official", "reasoning": "alias"}),
                Value::Null,
            ))
            .text(&["9.8 is greater."])
            .finish("stop"),
    )
    .await;
    let thinking: Vec<&str> = ev
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking,
        ["9.11 vs 9.8:", " compare tenths", " (vLLM)", "official"]
    );
    assert_eq!(text(&ev), "9.8 is greater.");
    assert_eq!(stop(&ev), StopReason::EndTurn);
}

#[tokio::test]
async fn quirk_no_index_at_all() {
    // Old ollama: no `index` anywhere; a new id starts a new call, fragments continue the latest.
    let t = OpenAiTurn::new()
        .data(&chunk(json!({"tool_calls": [{"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}]}), Value::Null))
        .data(&chunk(json!({"tool_calls": [{"function": {"arguments": "\"x\"}"}}]}), Value::Null))
        .data(&chunk(json!({"tool_calls": [{"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Oslo\"}"}}]}), Value::Null));
    let ev = turn(t.finish("tool_calls")).await;
    assert_eq!(
        completed_calls(&ev),
        [
            ("a".into(), "read_file".into(), json!({"path": "x"})),
            (
                "b".into(),
                "get_weather".into(),
                json!({"location": "Oslo"})
            )
        ]
    );
}

#[tokio::test]
async fn quirk_every_call_at_index_0_whole_arguments_and_finish_reason_stop() {
    let t = OpenAiTurn::new()
        .text(&["Checking."])
        .data(&chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}}]}), Value::Null))
        .data(&chunk(json!({"tool_calls": [{"index": 0, "id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Rome"}}}]}), Value::Null));
    // finish_reason "stop" although tools were called (gpt-4o, Gemini's layer): calls decide.
    let ev = turn(t.finish("stop")).await;
    assert_eq!(
        completed_calls(&ev),
        [
            (
                "call_1".into(),
                "get_weather".into(),
                json!({"location": "Paris"})
            ),
            (
                "call_2".into(),
                "get_weather".into(),
                json!({"location": "Rome"})
            )
        ]
    );
    assert_eq!(stop(&ev), StopReason::ToolUse);
    assert_eq!(text(&ev), "Checking.");
}

#[tokio::test]
async fn quirk_length_inside_a_tool_call_is_incomplete() {
    let t = OpenAiTurn::new()
        .tool_call(0, "call_ok", "read_file", &["{\"path\":\"a\"}"])
        .tool_call(1, "call_cut", "read_file", &["{\"pa", "th\": \"b"]);
    let ev = turn(t.finish("length")).await;
    assert_eq!(
        completed_calls(&ev),
        [("call_ok".into(), "read_file".into(), json!({"path": "a"}))]
    );
    assert!(ev.iter().any(
        |e| matches!(e, ModelEvent::ToolCallIncomplete { id, reason, .. }
        if id == "call_cut" && reason.contains("max_tokens"))
    ));
    assert_eq!(stop(&ev), StopReason::MaxTokens);
}

#[tokio::test]
async fn quirk_error_chunk_mid_stream_is_retried_then_surfaced() {
    let err = json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}});
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse_chunks(
        OpenAiTurn::new().text(&["par"]).data(&err).events(),
    ));
    server.enqueue(OpenAiTurn::new().text(&["full"]).finish("stop"));
    let ev = events(&run(&*openai(&server), &request(vec![Message::user_text("hi")])).await);
    assert!(ev.iter().any(|e| matches!(
        e,
        ModelEvent::Retry {
            discard_partial: true,
            ..
        }
    )));
    assert_eq!(text(&ev), "full");

    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse_chunks(
        OpenAiTurn::new().data(&err).events(),
    ));
    let items = run(
        &*openai_with(&server, |c| c.max_retries = Some(0)),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    let e = last_error(&items);
    assert_eq!(e.kind(), ErrorKind::Server);
    assert_eq!(
        e.message(),
        "The server had an error while processing your request."
    );
}

#[tokio::test]
async fn quirk_missing_done_is_fine_after_finish_but_not_before() {
    let mut events_ = OpenAiTurn::new().text(&["ok"]).finish_events("stop");
    events_.pop(); // no [DONE]
    let ev = turn(MockResponse::sse_chunks(events_)).await;
    assert_eq!(stop(&ev), StopReason::EndTurn);

    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::sse_chunks(
        OpenAiTurn::new().text(&["o"]).events(),
    ));
    let items = run(
        &*openai_with(&server, |c| c.max_retries = Some(0)),
        &request(vec![Message::user_text("hi")]),
    )
    .await;
    assert_eq!(last_error(&items).kind(), ErrorKind::Transport);
}

#[tokio::test]
async fn observed_400_surfaces_verbatim_with_x_request_id() {
    let observed = fixture_json("openai_observed_400_errors.json");
    let body = &observed["tool_calls_without_tool_messages"]["body"];
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(MockResponse::json(400, body).header("x-request-id", "req_abc"));
    let err = last_error(&run(&*openai(&server), &request(vec![Message::user_text("hi")])).await);
    assert_eq!(err.kind(), ErrorKind::BadRequest);
    assert_eq!(err.message(), body["error"]["message"].as_str().unwrap());
    assert_eq!(err.request_id(), Some("req_abc"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn scripted_conversation_requests_and_tool_message_order() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        OpenAiTurn::new()
            .text(&["Both."])
            .tool_call(
                0,
                "call_w",
                "get_weather",
                &["{\"location\":", "\"Paris\"}"],
            )
            .tool_call(1, "call_r", "read_file", &["{\"path\":\"notes.txt\"}"])
            .finish("tool_calls"),
    );
    server.enqueue(OpenAiTurn::new().text(&["Done."]).finish("stop"));
    let adapter = openai(&server);
    let mut messages = vec![Message::user_text("Weather in Paris and notes.txt?")];
    let ev = events(&run(&*adapter, &request(messages.clone())).await);
    assert!(ev.contains(&ModelEvent::Usage(Usage {
        input: 36,
        output: 20,
        cache_read: 64,
        cache_creation: 0
    })));
    let mut content = vec![tern_model::AssistantContent::Text { text: text(&ev) }];
    for (id, name, args) in completed_calls(&ev) {
        content.push(call(&id, &name, args));
    }
    messages.push(assistant(content));
    // Results in reverse order, with a note: tool messages must follow the assistant's call order.
    messages.push(user(vec![
        user_text("note"),
        result("call_r", "no such file", true),
        result("call_w", "15C", false),
    ]));
    run(&*adapter, &request(messages)).await;

    let requests = server.requests();
    for r in &requests {
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {SECRET}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
        let b = r.json();
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": "You are tern.\n\nProject rules: be brief."})
        );
        assert_eq!(b["tools"][0]["type"], "function");
        assert_eq!(
            b["tools"][0]["function"]["parameters"],
            weather_tool().input_schema
        );
        assert!(
            b.get("tool_choice").is_none(),
            "auto is left implicit for vLLM's sake"
        );
        assert_eq!(b["max_tokens"], 512);
    }
    let b = requests[1].json();
    let roles: Vec<&str> = b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "tool", "user"]
    );
    let assistant_msg = &b["messages"][2];
    assert_eq!(
        assistant_msg["tool_calls"][0]["function"]["arguments"],
        "{\"location\":\"Paris\"}"
    );
    assert_eq!(b["messages"][3]["tool_call_id"], "call_w");
    assert_eq!(b["messages"][4]["tool_call_id"], "call_r");
    assert_eq!(b["messages"][4]["content"], "Error: no such file");
    let bodies: Vec<Value> = requests.iter().map(|r| r.json()).collect();
    insta::assert_json_snapshot!("openai_conversation_requests", bodies);
}

#[tokio::test]
async fn local_server_without_key_sends_no_authorization() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(OpenAiTurn::new().text(&["hi"]).finish("stop"));
    let env = env_with(&[("OPENAI_BASE_URL", &format!("{}/v1", server.url()))]);
    let adapter = build_adapter(&Default::default(), &env).unwrap();
    assert_eq!(adapter.provider(), tern_model::Provider::Openai);
    let mut req = request(vec![Message::user_text("hi")]);
    req.tool_choice = tern_model::ToolChoice::Any;
    assert_eq!(text(&events(&run(&*adapter, &req).await)), "hi");
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.json()["tool_choice"], "required");
}
