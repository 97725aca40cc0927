//! A user turn with attached images, and a tool result with one, as each wire format takes
//! them (shapes cited in the request builders): Anthropic `image` blocks with a base64
//! `source`, Chat Completions `image_url` parts with a data URL object, Responses
//! `input_image` parts with the data URL as a string. Text next to an image keeps its place.

use serde_json::json;
use tern_model::{
    Message, ModelRequest, ToolChoice, ToolResult, UserContent,
    anthropic::request as anthropic,
    openai::{request as chat, responses::request as responses},
    types::{AssistantContent, Image, ToolCall},
};

fn image(data: &str) -> Image {
    Image {
        mime_type: "image/png".into(),
        data: data.into(),
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        system: vec!["sys".into()],
        messages: vec![
            Message::User {
                content: vec![
                    UserContent::Image(image("AAAA")),
                    UserContent::Image(image("BBBB")),
                    UserContent::Text {
                        text: "what differs?".into(),
                    },
                ],
            },
            Message::Assistant {
                content: vec![AssistantContent::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "fs__read_file".into(),
                    arguments: json!({"path": "shot.png"}),
                })],
            },
            Message::User {
                content: vec![UserContent::ToolResult(ToolResult {
                    images: vec![image("CCCC")],
                    ..ToolResult::text("c1", "[image: image/png, 3 bytes]")
                })],
            },
        ],
        tools: vec![],
        max_tokens: 100,
        tool_choice: ToolChoice::Auto,
        cache: false,
    }
}

#[test]
fn anthropic_sends_image_blocks_before_the_text() {
    let body = anthropic::build_body("claude-sonnet-4-5", 100, &request());
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "BBBB"}},
            {"type": "text", "text": "what differs?"},
        ])
    );
    assert_eq!(
        body["messages"][2]["content"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "CCCC"}})
    );
}

#[test]
fn chat_completions_sends_image_url_parts_and_plain_text_stays_a_string() {
    let body = chat::build_body("gpt-4o", 100, chat::MaxTokensField::MaxTokens, &request());
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}},
            {"type": "text", "text": "what differs?"},
        ]})
    );
    // The tool's image follows its `tool` message in a user message.
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(
        messages[4]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,CCCC"}})
    );
    // Without images, a user turn is still one string (what every compatible server takes).
    let plain = ModelRequest {
        messages: vec![Message::user_text("hi")],
        ..request()
    };
    let body = chat::build_body("m", 100, chat::MaxTokensField::MaxTokens, &plain);
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "hi"})
    );
}

#[test]
fn responses_sends_input_image_parts_in_place() {
    let body = responses::build_body("gpt-5", 100, &request());
    assert_eq!(
        body["input"][0],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            {"type": "input_image", "image_url": "data:image/png;base64,BBBB"},
            {"type": "input_text", "text": "what differs?"},
        ]})
    );
    // Text between images keeps its place.
    let mixed = ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserContent::Text { text: "a".into() },
                UserContent::Image(image("AAAA")),
                UserContent::Text { text: "b".into() },
            ],
        }],
        ..request()
    };
    let body = responses::build_body("gpt-5", 100, &mixed);
    let types: Vec<&str> = body["input"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["input_text", "input_image", "input_text"]);
}
