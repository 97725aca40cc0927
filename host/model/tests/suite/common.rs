//! Helpers shared by the suite: adapters pointed at a mock server, event collection, fixtures and
//! a validator for the request rules the Anthropic API enforces with 400s.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tern_model::mock::MockModelServer;
use tern_model::{
    AssistantContent, Message, ModelAdapter, ModelConfig, ModelError, ModelEvent, ModelRequest,
    Provider, ToolCall, ToolChoice, ToolResult, ToolSpec, UserContent, build_adapter,
};
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "sk-test-SECRET-value-123";

pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/provider-wire/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

pub fn env_with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

/// Fast retries so the suite does not sleep for real backoff.
pub fn fast_config(provider: Provider, base_url: String) -> ModelConfig {
    ModelConfig {
        provider: Some(provider),
        name: Some("mock-model".into()),
        base_url: Some(base_url),
        max_tokens: Some(1024),
        retry_base_delay_ms: Some(1),
        retry_max_delay_ms: Some(5),
        ..ModelConfig::default()
    }
}

pub fn anthropic(server: &MockModelServer) -> Box<dyn ModelAdapter> {
    anthropic_with(server, |_| {})
}

pub fn anthropic_with(
    server: &MockModelServer,
    tweak: impl FnOnce(&mut ModelConfig),
) -> Box<dyn ModelAdapter> {
    let mut cfg = fast_config(Provider::Anthropic, server.url());
    tweak(&mut cfg);
    build_adapter(&cfg, &env_with(&[("ANTHROPIC_API_KEY", SECRET)])).unwrap()
}

pub fn openai(server: &MockModelServer) -> Box<dyn ModelAdapter> {
    openai_with(server, |_| {})
}

pub fn openai_with(
    server: &MockModelServer,
    tweak: impl FnOnce(&mut ModelConfig),
) -> Box<dyn ModelAdapter> {
    let mut cfg = fast_config(Provider::Openai, format!("{}/v1", server.url()));
    tweak(&mut cfg);
    build_adapter(&cfg, &env_with(&[("OPENAI_API_KEY", SECRET)])).unwrap()
}

pub fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a given location".into(),
        input_schema: json!({"type": "object", "properties": {"location": {"type": "string"}},
            "required": ["location"]}),
    }
}

pub fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

pub fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: vec!["You are tern.".into(), "Project rules: be brief.".into()],
        messages,
        tools: vec![weather_tool(), read_tool()],
        max_tokens: 512,
        tool_choice: ToolChoice::Auto,
        cache: true,
    }
}

pub fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    })
}

pub fn result(id: &str, content: &str, is_error: bool) -> UserContent {
    UserContent::ToolResult(ToolResult {
        is_error,
        ..ToolResult::text(id, content)
    })
}

pub type Item = Result<ModelEvent, ModelError>;

/// Runs one turn to the end (10 s guard so a hang fails instead of blocking CI).
pub async fn run(adapter: &dyn ModelAdapter, req: &ModelRequest) -> Vec<Item> {
    let stream = adapter.stream(req, CancellationToken::new()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("turn did not finish within 10 s")
}

pub fn events(items: &[Item]) -> Vec<ModelEvent> {
    items
        .iter()
        .map(|i| {
            i.clone()
                .unwrap_or_else(|e| panic!("unexpected error: {e}"))
        })
        .collect()
}

pub fn last_error(items: &[Item]) -> ModelError {
    match items.last() {
        Some(Err(e)) => e.clone(),
        other => panic!("expected the stream to end in an error, got {other:?}"),
    }
}

/// Text of the turn as a consumer that honours `discard_partial` would keep it.
pub fn text(events: &[ModelEvent]) -> String {
    let mut out = String::new();
    for e in events {
        match e {
            ModelEvent::TextDelta(t) => out.push_str(t),
            ModelEvent::Retry {
                discard_partial: true,
                ..
            } => out.clear(),
            _ => {}
        }
    }
    out
}

/// Checks a Messages API body against the rules the API enforces (WIRE-NOTES §1).
pub fn assert_valid_anthropic(body: &Value) {
    let messages = body["messages"].as_array().expect("messages array");
    let mut cache_blocks = 0;
    let count_cache = |v: &Value| usize::from(v.get("cache_control").is_some());
    for t in body["tools"].as_array().into_iter().flatten() {
        cache_blocks += count_cache(t);
    }
    for s in body["system"].as_array().into_iter().flatten() {
        assert!(
            !s["text"].as_str().unwrap().trim().is_empty(),
            "empty system block"
        );
        cache_blocks += count_cache(s);
    }
    assert_eq!(messages[0]["role"], "user", "first message must be user");
    let mut prev_role = "";
    let mut pending_tool_uses: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap();
        assert_ne!(role, prev_role, "messages.{i}: roles must alternate");
        prev_role = role;
        let content = m["content"].as_array().expect("content as blocks");
        assert!(!content.is_empty(), "messages.{i}: empty content");
        for b in content {
            cache_blocks += count_cache(b);
            if b["type"] == "text" {
                assert!(
                    !b["text"].as_str().unwrap().trim().is_empty(),
                    "messages.{i}: empty text block"
                );
            }
        }
        if role == "user" {
            let results: Vec<String> = content
                .iter()
                .take_while(|b| b["type"] == "tool_result")
                .map(|b| b["tool_use_id"].as_str().unwrap().to_owned())
                .collect();
            let all_results = content
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .count();
            assert_eq!(
                results.len(),
                all_results,
                "messages.{i}: text before a tool_result"
            );
            let want: HashSet<&String> = pending_tool_uses.iter().collect();
            let got: HashSet<&String> = results.iter().collect();
            assert_eq!(
                got, want,
                "messages.{i}: tool_result ids must match the previous tool_use ids"
            );
            assert_eq!(
                results.len(),
                pending_tool_uses.len(),
                "messages.{i}: one result per call"
            );
            pending_tool_uses.clear();
        } else {
            assert!(
                pending_tool_uses.is_empty(),
                "messages.{i}: tool_use without tool_result"
            );
            pending_tool_uses = content
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    assert!(b["input"].is_object(), "tool_use input must be an object");
                    b["id"].as_str().unwrap().to_owned()
                })
                .collect();
        }
    }
    assert!(
        cache_blocks <= 4,
        "A maximum of 4 blocks with cache_control may be provided. Found {cache_blocks}."
    );
    assert!(
        body["tool_choice"].is_null() || body["tool_choice"].is_object(),
        "tool_choice must be an object"
    );
}

/// Removes every `cache_control` key, to compare prefixes across turns.
pub fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

pub fn assistant(content: Vec<AssistantContent>) -> Message {
    Message::Assistant { content }
}

pub fn user(content: Vec<UserContent>) -> Message {
    Message::User { content }
}

pub fn user_text(t: &str) -> UserContent {
    UserContent::Text { text: t.into() }
}
