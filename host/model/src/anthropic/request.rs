//! Builds the Messages API request body.
//!
//! Prompt caching: a `cache_control` breakpoint caches the prefix up to its block
//! (tools → system → messages). We place at most four, the documented maximum:
//! 1. the last tool definition (the tool table rarely changes);
//! 2. the last system block;
//! 3. the last block of the newest user turn (written this turn, read next turn);
//! 4. the last block of the user turn before it — the breakpoint that was "newest" in the previous
//!    request, so this request reads that cache entry exactly even when the turn in between holds
//!    more than the 20 blocks a breakpoint looks back.
//!
//! Nothing else changes between turns, so request N+1 starts with the bytes of request N.

use serde_json::{Map, Value, json};

use crate::normalize::{normalize, strip_reasoning};
use crate::types::{AssistantContent, Message, ModelRequest, ToolChoice, UserContent};

/// Most breakpoints the API accepts ("A maximum of 4 blocks with cache_control may be provided").
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// The JSON body for `POST /v1/messages`.
pub fn build_body(model: &str, default_max_tokens: u32, req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let max_tokens = if req.max_tokens == 0 {
        default_max_tokens
    } else {
        req.max_tokens
    };
    body.insert("max_tokens".into(), json!(max_tokens));

    let system: Vec<Value> = req
        .system
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| json!({"type": "text", "text": s}))
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    let messages: Vec<Value> = normalize(&strip_reasoning(&req.messages))
        .iter()
        .map(message)
        .collect();
    body.insert("messages".into(), Value::Array(messages));

    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        // Only with tools: a tool_choice naming no tool table is an error.
        let choice = match &req.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Any => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Specific(name) => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    body.insert("stream".into(), json!(true));

    let mut body = Value::Object(body);
    if req.cache {
        add_cache_breakpoints(&mut body);
    }
    body
}

fn message(m: &Message) -> Value {
    match m {
        Message::User { content } => {
            let blocks: Vec<Value> = content
                .iter()
                .map(|c| match c {
                    UserContent::Text { text } => json!({"type": "text", "text": text}),
                    UserContent::Image(i) => image_block(i),
                    UserContent::ToolResult(r) => {
                        let mut block = json!({"type": "tool_result", "tool_use_id": r.call_id});
                        // An empty result is sent without `content`, as the docs' example does.
                        // Images travel inside the tool result: the Messages API takes image
                        // blocks there, so the model sees what the tool returned.
                        if !r.images.is_empty() {
                            let mut parts = Vec::new();
                            if !r.content.is_empty() {
                                parts.push(json!({"type": "text", "text": r.content}));
                            }
                            parts.extend(r.images.iter().map(image_block));
                            block["content"] = Value::Array(parts);
                        } else if !r.content.is_empty() {
                            block["content"] = json!(r.content);
                        }
                        if r.is_error {
                            block["is_error"] = json!(true);
                        }
                        block
                    }
                })
                .collect();
            json!({"role": "user", "content": blocks})
        }
        Message::Assistant { content } => {
            let blocks: Vec<Value> = content
                .iter()
                .filter_map(|c| match c {
                    AssistantContent::Text { text } => Some(json!({"type": "text", "text": text})),
                    AssistantContent::ToolCall(call) => {
                        // `input` must be an object; anything else came from a broken call.
                        let input = if call.arguments.is_object() {
                            call.arguments.clone()
                        } else {
                            json!({})
                        };
                        Some(
                            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                        )
                    }
                    // Stripped before normalizing; nothing of it is Anthropic's.
                    AssistantContent::Reasoning(_) => None,
                })
                .collect();
            json!({"role": "assistant", "content": blocks})
        }
    }
}

/// An image block, the shape of the Messages API's vision guide ("Base64-encoded image
/// example": `{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
/// "data": …}}`, https://platform.claude.com/docs/en/build-with-claude/vision). The same block
/// goes in a user turn and inside a `tool_result`'s content.
fn image_block(i: &crate::types::Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": i.mime_type, "data": i.data}})
}

fn add_cache_breakpoints(body: &mut Value) {
    let ephemeral = json!({"type": "ephemeral"});
    if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|t| t.last_mut())
    {
        last["cache_control"] = ephemeral.clone();
    }
    if let Some(last) = body
        .get_mut("system")
        .and_then(Value::as_array_mut)
        .and_then(|s| s.last_mut())
    {
        last["cache_control"] = ephemeral.clone();
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        let user_turns = messages
            .iter_mut()
            .rev()
            .filter(|m| m["role"] == "user")
            .take(2);
        for turn in user_turns {
            if let Some(last) = turn
                .get_mut("content")
                .and_then(Value::as_array_mut)
                .and_then(|c| c.last_mut())
            {
                last["cache_control"] = ephemeral.clone();
            }
        }
    }
}
