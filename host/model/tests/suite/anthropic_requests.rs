//! What the Anthropic adapter sends: a scripted multi-turn conversation, checked rule by rule and
//! snapshotted.

use serde_json::{Value, json};
use tern_model::mock::MockModelServer;
use tern_model::mock::script::AnthropicTurn;
use tern_model::{AssistantContent, Message, ModelEvent, ModelRequest, ToolChoice, ToolSpec};

use super::common::*;

/// What the loop would append after a turn: the assistant message rebuilt from the events.
fn assistant_from(events: &[ModelEvent]) -> Message {
    let mut content = vec![AssistantContent::Text {
        text: String::new(),
    }]; // models do send empty text
    for e in events {
        match e {
            ModelEvent::TextDelta(t) => {
                if let Some(AssistantContent::Text { text }) = content.last_mut() {
                    text.push_str(t);
                }
            }
            ModelEvent::ToolCallComplete {
                id,
                name,
                arguments,
            } => {
                content.push(call(id, name, arguments.clone()));
                content.push(AssistantContent::Text {
                    text: String::new(),
                });
            }
            _ => {}
        }
    }
    assistant(content)
}

fn cache_control_paths(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if t.get("cache_control").is_some() {
            out.push(format!("tools.{i}"));
        }
    }
    for (i, s) in body["system"].as_array().into_iter().flatten().enumerate() {
        if s.get("cache_control").is_some() {
            out.push(format!("system.{i}"));
        }
    }
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (j, b) in m["content"].as_array().unwrap().iter().enumerate() {
            if b.get("cache_control").is_some() {
                out.push(format!("messages.{i}.content.{j}"));
            }
        }
    }
    out
}

#[tokio::test]
async fn scripted_conversation_requests_follow_every_rule() {
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        AnthropicTurn::with_usage(500, 0, 1800)
            .text(&["I'll check ", "both."])
            .tool_use("toolu_1", "get_weather", &["{\"location\":", " \"Paris\"}"])
            .tool_use("toolu_2", "read_file", &["{\"path\": \"notes.txt\"}"])
            .finish("tool_use"),
    );
    server.enqueue(
        AnthropicTurn::with_usage(40, 1800, 300)
            .text(&["Paris is 15 degrees; notes.txt is missing."])
            .finish("end_turn"),
    );
    server.enqueue(
        AnthropicTurn::with_usage(12, 2100, 60)
            .text(&["You're welcome."])
            .finish("end_turn"),
    );
    let adapter = anthropic(&server);

    let mut messages = vec![Message::user_text(
        "What's the weather in Paris, and what's in notes.txt?",
    )];
    let turn1 = events(&run(&*adapter, &request(messages.clone())).await);
    assert!(turn1.contains(&ModelEvent::Usage(tern_model::Usage {
        input: 500,
        output: 42,
        cache_read: 0,
        cache_creation: 1800
    })));
    messages.push(assistant_from(&turn1));
    // The loop hands results back out of order, with its note first: the adapter must fix both.
    messages.push(user(vec![
        user_text("(tool results follow)"),
        result("toolu_2", "ENOENT: notes.txt", true),
        result("toolu_1", "15 degrees", false),
    ]));
    let turn2 = events(&run(&*adapter, &request(messages.clone())).await);
    assert!(turn2.contains(&ModelEvent::Usage(tern_model::Usage {
        input: 40,
        output: 42,
        cache_read: 1800,
        cache_creation: 300
    })));
    messages.push(assistant_from(&turn2));
    messages.push(Message::user_text("Thanks"));
    events(&run(&*adapter, &request(messages)).await);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(SECRET));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("authorization"), None);
        let body = r.json();
        assert_valid_anthropic(&body);
        assert_eq!(body["stream"], true);
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }
    let bodies: Vec<Value> = requests.iter().map(|r| r.json()).collect();

    // Results: one user message, first, in the order of the calls, is_error kept, text after.
    let results = &bodies[1]["messages"][2]["content"];
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["content"], "15 degrees");
    assert!(results[0].get("is_error").is_none());
    assert_eq!(results[1]["tool_use_id"], "toolu_2");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        results[2],
        json!({"type": "text", "text": "(tool results follow)", "cache_control": {"type": "ephemeral"}})
    );
    // The empty text blocks the model "sent" are gone.
    assert_eq!(
        bodies[1]["messages"][1]["content"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Breakpoints: last tool, last system block, newest and previous user turns; never more than 4.
    assert_eq!(
        cache_control_paths(&bodies[0]),
        ["tools.1", "system.1", "messages.0.content.0"]
    );
    assert_eq!(
        cache_control_paths(&bodies[1]),
        [
            "tools.1",
            "system.1",
            "messages.0.content.0",
            "messages.2.content.2"
        ]
    );
    assert_eq!(
        cache_control_paths(&bodies[2]),
        [
            "tools.1",
            "system.1",
            "messages.2.content.2",
            "messages.4.content.0"
        ]
    );

    // Stable prefix: tools and system byte-identical; every earlier message unchanged.
    for pair in bodies.windows(2) {
        assert_eq!(pair[0]["tools"], pair[1]["tools"]);
        assert_eq!(pair[0]["system"], pair[1]["system"]);
        let old = without_cache_control(&pair[0]["messages"]);
        let new = without_cache_control(&pair[1]["messages"]);
        let old = old.as_array().unwrap();
        assert_eq!(old[..], new.as_array().unwrap()[..old.len()]);
    }
    // ... and the breakpoint written by turn 2 is still there, at the same block, in turn 3.
    assert_eq!(bodies[1]["messages"][2], bodies[2]["messages"][2]);

    insta::assert_json_snapshot!("anthropic_conversation_requests", bodies);
}

#[tokio::test]
async fn body_matches_the_documented_request_shape() {
    let docs = fixture_json("anthropic_docs_request_stream_tool_use.json");
    let tool = &docs["tools"][0];
    let req = ModelRequest {
        system: vec![],
        messages: vec![Message::user_text(
            "What is the weather like in San Francisco?",
        )],
        tools: vec![ToolSpec {
            name: tool["name"].as_str().unwrap().into(),
            description: tool["description"].as_str().unwrap().into(),
            input_schema: tool["input_schema"].clone(),
        }],
        max_tokens: 1024,
        tool_choice: ToolChoice::Any,
        cache: false,
    };
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let adapter = anthropic_with(&server, |c| {
        c.name = Some("claude-opus-4-1-20250805".into())
    });
    run(&*adapter, &req).await;
    let sent = server.requests()[0].json();
    let mut want = docs.clone();
    // We always send content as blocks; the docs use the string shorthand.
    want["messages"][0]["content"] =
        json!([{"type": "text", "text": "What is the weather like in San Francisco?"}]);
    assert_eq!(sent, want);
}

#[tokio::test]
async fn broken_histories_are_repaired_before_sending() {
    let tr = fixture_json("anthropic_docs_tool_result_examples.json");
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let messages = vec![
        Message::user_text("go"),
        assistant(vec![
            AssistantContent::Text { text: "  ".into() },
            call("toolu_01", "read_file", json!({"path": "a"})),
            call("toolu_02", "read_file", json!({"path": "b"})),
        ]),
        // The docs' INVALID example (text before the result) plus an orphan, and no result for toolu_02.
        user(vec![
            user_text("Here are the results:"),
            result("toolu_01", "", false),
            result("toolu_99", "stray", false),
        ]),
        Message::user_text(""),
    ];
    run(&*anthropic(&server), &request(messages)).await;
    let body = server.requests()[0].json();
    assert_valid_anthropic(&body);
    let content = without_cache_control(&body["messages"][2]["content"]);
    // The docs' VALID form: results first, an empty result without `content`, text after.
    assert_eq!(content[0], tr["VALID_text_after_tool_result"]["content"][0]);
    assert_eq!(content[1]["tool_use_id"], "toolu_02");
    assert_eq!(content[1]["is_error"], true);
    assert!(
        content[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("Not executed")
    );
    assert_eq!(
        content[2],
        json!({"type": "text", "text": "Here are the results:"})
    );
    assert_eq!(content.as_array().unwrap().len(), 3);
}
