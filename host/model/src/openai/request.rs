//! Builds the Chat Completions request body.
//!
//! Choices made for compatible servers (ollama, vLLM, llama.cpp):
//! * the system blocks become ONE `system` message (joined by a blank line): many chat templates
//!   accept a single system message, at the start only;
//! * `tool_choice` is omitted when it is `auto` (the default whenever tools are present) and
//!   whenever there are no tools: vLLM rejects an explicit `auto` unless started with
//!   `--enable-auto-tool-choice`;
//! * the output budget is `max_completion_tokens` on api.openai.com (newer models reject
//!   `max_tokens`) and `max_tokens` elsewhere (what compatible servers understand).

use serde_json::{Map, Value, json};

use crate::normalize::{normalize, strip_reasoning};
use crate::types::{AssistantContent, Message, ModelRequest, ToolChoice, UserContent};

/// Which name the output budget goes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens` (api.openai.com).
    MaxCompletionTokens,
    /// `max_tokens` (compatible servers).
    MaxTokens,
}

/// Prefix that marks a failed tool result: the wire format has no `is_error` flag.
pub const ERROR_PREFIX: &str = "Error: ";

/// A tool result's text as OpenAI's APIs take it: a failed call's text starts with
/// [`ERROR_PREFIX`] (neither API has an error flag on a tool result).
pub fn result_text(r: &crate::types::ToolResult) -> String {
    if r.is_error && !r.content.starts_with(ERROR_PREFIX) {
        format!("{ERROR_PREFIX}{}", r.content)
    } else {
        r.content.clone()
    }
}

/// The JSON body for `POST /chat/completions`.
pub fn build_body(
    model: &str,
    default_max_tokens: u32,
    max_tokens_field: MaxTokensField,
    req: &ModelRequest,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));

    let mut messages = Vec::new();
    let system: Vec<&str> = req
        .system
        .iter()
        .map(String::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system.join("\n\n")}));
    }
    for m in normalize(&strip_reasoning(&req.messages)) {
        push_message(&mut messages, &m);
    }
    body.insert("messages".into(), Value::Array(messages));

    let max_tokens = if req.max_tokens == 0 {
        default_max_tokens
    } else {
        req.max_tokens
    };
    let field = match max_tokens_field {
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        MaxTokensField::MaxTokens => "max_tokens",
    };
    body.insert(field.into(), json!(max_tokens));

    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &req.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::Any => Some(json!("required")),
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Specific(name) => {
                Some(json!({"type": "function", "function": {"name": name}}))
            }
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// A piece of what the person said in a user turn.
enum UserPart<'a> {
    Text(String),
    Image(&'a crate::types::Image),
}

/// An image content part as Chat Completions takes it (API reference, "User message" →
/// "Image content part": `{"type": "image_url", "image_url": {"url": …}}`, the URL a base64
/// `data:` URL as in the "Images and vision" guide,
/// https://developers.openai.com/api/docs/guides/images-vision).
fn image_part(i: &crate::types::Image) -> Value {
    json!({"type": "image_url", "image_url": {
        "url": format!("data:{};base64,{}", i.mime_type, i.data)}})
}

/// Appends the wire messages for one neutral message. After [`normalize`], a user turn that
/// follows tool calls starts with exactly one result per call, in call order, so the `tool`
/// messages land right after the assistant message, in the order of its `tool_calls`.
fn push_message(out: &mut Vec<Value>, m: &Message) {
    match m {
        Message::User { content } => {
            // What the person said, in order: text, and the images they attached.
            let mut said: Vec<UserPart> = Vec::new();
            // `tool` messages carry text only; images a tool returned follow in a user message,
            // after every tool message of the turn (the API wants those right after the call).
            let mut images = Vec::new();
            for block in content {
                match block {
                    UserContent::ToolResult(r) => {
                        let content = result_text(r);
                        out.push(
                            json!({"role": "tool", "tool_call_id": r.call_id, "content": content}),
                        );
                        if !r.images.is_empty() {
                            images.push(json!({"type": "text", "text": format!(
                                "The image(s) returned by tool call {}:", r.call_id)}));
                            images.extend(r.images.iter().map(image_part));
                        }
                    }
                    UserContent::Text { text: t } => match said.last_mut() {
                        // Adjacent texts join as before images existed (one string).
                        Some(UserPart::Text(prev)) => {
                            prev.push_str("\n\n");
                            prev.push_str(t);
                        }
                        _ => said.push(UserPart::Text(t.clone())),
                    },
                    UserContent::Image(i) => said.push(UserPart::Image(i)),
                }
            }
            let only_text =
                images.is_empty() && said.iter().all(|p| matches!(p, UserPart::Text(_)));
            if only_text {
                // Plain string content: what every compatible server (and chat template) takes.
                if let Some(UserPart::Text(text)) = said.first() {
                    out.push(json!({"role": "user", "content": text}));
                }
            } else {
                images.extend(said.iter().map(|p| match p {
                    UserPart::Text(t) => json!({"type": "text", "text": t}),
                    UserPart::Image(i) => image_part(i),
                }));
                out.push(json!({"role": "user", "content": images}));
            }
        }
        Message::Assistant { content } => {
            let mut text = Vec::new();
            let mut calls = Vec::new();
            for block in content {
                match block {
                    AssistantContent::Text { text: t } => text.push(t.as_str()),
                    AssistantContent::ToolCall(call) => {
                        let arguments = if call.arguments.is_object() {
                            call.arguments.to_string()
                        } else {
                            "{}".to_owned()
                        };
                        calls.push(json!({"id": call.id, "type": "function",
                            "function": {"name": call.name, "arguments": arguments}}));
                    }
                    AssistantContent::Reasoning(_) => {}
                }
            }
            let content = if text.is_empty() {
                Value::Null
            } else {
                json!(text.join(""))
            };
            let mut msg = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
    }
}
