//! Builds the Responses API request body from tern's neutral request.
//!
//! ```json
//! {"model": "…", "instructions": "…system…", "input": [items…], "tools": [{"type": "function",
//!  "name", "description", "parameters", "strict": false}], "tool_choice": "auto",
//!  "parallel_tool_calls": true, "max_output_tokens": N, "store": false,
//!  "include": ["reasoning.encrypted_content"], "stream": true}
//! ```
//! Input items, in transcript order (after [`normalize`], so every call has exactly one output):
//! * user text → `{"type": "message", "role": "user", "content": [{"type": "input_text", …}]}`,
//!   with any image the person attached as an `input_image` part where it stood;
//! * assistant text → `{"type": "message", "role": "assistant", "content": [{"type":
//!   "output_text", …}]}`;
//! * reasoning → `{"type": "reasoning", "summary": [{"type": "summary_text", …}],
//!   "encrypted_content": …}` (no `id`: with `store: false` there is no stored item to name);
//! * a tool call → `{"type": "function_call", "call_id", "name", "arguments": "<JSON text>"}`;
//! * its result → `{"type": "function_call_output", "call_id", "output": "…"}`; the API has no
//!   error flag, so a failed result starts with `Error: ` as on Chat Completions. Images a tool
//!   returned follow in one user message (`input_image` with a data URL) after the outputs.

use serde_json::{Map, Value, json};

use crate::normalize::normalize;
use crate::openai::request::result_text;
use crate::types::{AssistantContent, Message, ModelRequest, ToolChoice, UserContent};

/// What tern asks to have included in every response: the encrypted reasoning it sends back.
pub const INCLUDE: &str = "reasoning.encrypted_content";

/// The JSON body for `POST /responses`.
pub fn build_body(model: &str, default_max_tokens: u32, req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let system: Vec<&str> = req
        .system
        .iter()
        .map(String::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    if !system.is_empty() {
        body.insert("instructions".into(), json!(system.join("\n\n")));
    }
    let mut input = Vec::new();
    for m in normalize(&req.messages) {
        push_items(&mut input, &m);
    }
    body.insert("input".into(), Value::Array(input));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                // `strict: false`: MCP schemas are not written for strict mode (which requires
                // every property listed as required and `additionalProperties: false`).
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.input_schema, "strict": false})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Any => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Specific(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
        body.insert("parallel_tool_calls".into(), json!(true));
    }
    let max_tokens = if req.max_tokens == 0 {
        default_max_tokens
    } else {
        req.max_tokens
    };
    body.insert("max_output_tokens".into(), json!(max_tokens));
    body.insert("store".into(), json!(false));
    body.insert("include".into(), json!([INCLUDE]));
    body.insert("stream".into(), json!(true));
    Value::Object(body)
}

/// An image input part (Responses API reference, input content `input_image`:
/// `{"type": "input_image", "image_url": "data:…;base64,…"}` — the URL a plain string, not an
/// object as on Chat Completions; `detail` left out, which the API defaults to `auto`. Shape
/// also in openai-python `types/responses/response_input_image_content.py` and the "Images
/// and vision" guide, https://developers.openai.com/api/docs/guides/images-vision).
fn input_image(i: &crate::types::Image) -> Value {
    json!({"type": "input_image", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)})
}

/// Texts gathered so far become one `input_text` part (adjacent texts join as before).
fn flush_text(parts: &mut Vec<Value>, text: &mut Vec<&str>) {
    if !text.is_empty() {
        parts.push(json!({"type": "input_text", "text": text.join("\n\n")}));
        text.clear();
    }
}

fn push_items(out: &mut Vec<Value>, m: &Message) {
    match m {
        Message::User { content } => {
            let mut text = Vec::new();
            let mut images = Vec::new();
            for block in content {
                match block {
                    UserContent::ToolResult(r) => {
                        let output = result_text(r);
                        out.push(json!({"type": "function_call_output", "call_id": r.call_id,
                            "output": output}));
                        if !r.images.is_empty() {
                            images.push(json!({"type": "input_text", "text": format!(
                                "The image(s) returned by tool call {}:", r.call_id)}));
                            images.extend(r.images.iter().map(input_image));
                        }
                    }
                    UserContent::Text { text: t } => text.push(t.as_str()),
                    UserContent::Image(i) => {
                        flush_text(&mut images, &mut text);
                        images.push(input_image(i));
                    }
                }
            }
            flush_text(&mut images, &mut text);
            if !images.is_empty() {
                out.push(json!({"type": "message", "role": "user", "content": images}));
            }
        }
        Message::Assistant { content } => {
            // Text is gathered into one message item placed where its first block was; calls
            // and reasoning keep their own order (reasoning must precede the calls it led to).
            let mut text_at: Option<usize> = None;
            let mut text = String::new();
            for block in content {
                match block {
                    AssistantContent::Text { text: t } => {
                        if text_at.is_none() {
                            text_at = Some(out.len());
                            out.push(Value::Null);
                        }
                        text.push_str(t);
                    }
                    AssistantContent::Reasoning(r) => {
                        let summary: Vec<Value> = r
                            .summary
                            .iter()
                            .map(|s| json!({"type": "summary_text", "text": s}))
                            .collect();
                        let mut item = json!({"type": "reasoning", "summary": summary});
                        if let Some(enc) = &r.encrypted_content {
                            item["encrypted_content"] = json!(enc);
                        }
                        out.push(item);
                    }
                    AssistantContent::ToolCall(call) => {
                        let arguments = if call.arguments.is_object() {
                            call.arguments.to_string()
                        } else {
                            "{}".to_owned()
                        };
                        out.push(json!({"type": "function_call", "call_id": call.id,
                            "name": call.name, "arguments": arguments}));
                    }
                }
            }
            if let Some(at) = text_at {
                out[at] = json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]});
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Reasoning, ToolCall, ToolResult, ToolSpec};

    #[test]
    fn a_tool_turn_round_trips_reasoning_call_and_output_in_order() {
        let req = ModelRequest {
            system: vec!["Be terse.".into(), "  ".into()],
            messages: vec![
                Message::user_text("weather?"),
                Message::Assistant {
                    content: vec![
                        AssistantContent::Reasoning(Reasoning {
                            id: "rs_1".into(),
                            summary: vec![],
                            encrypted_content: Some("gAAA".into()),
                        }),
                        AssistantContent::Text {
                            text: "Checking.".into(),
                        },
                        AssistantContent::ToolCall(ToolCall {
                            id: "call_1".into(),
                            name: "weather".into(),
                            arguments: json!({"location": "Florence"}),
                        }),
                    ],
                },
                Message::User {
                    content: vec![UserContent::ToolResult(ToolResult {
                        is_error: true,
                        ..ToolResult::text("call_1", "no network")
                    })],
                },
            ],
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: "Weather".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 0,
            tool_choice: ToolChoice::Auto,
            cache: true,
        };
        let body = build_body("o4-mini", 100, &req);
        assert_eq!(body["instructions"], "Be terse.");
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["max_output_tokens"], 100);
        let input = body["input"].as_array().unwrap();
        let types: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "message",
                "reasoning",
                "message",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(input[1]["encrypted_content"], "gAAA");
        assert!(input[1].get("id").is_none());
        assert_eq!(input[2]["content"][0]["type"], "output_text");
        assert_eq!(input[3]["arguments"], "{\"location\":\"Florence\"}");
        assert_eq!(input[4]["output"], "Error: no network");
        assert_eq!(body["tools"][0]["parameters"], json!({"type": "object"}));
    }
}
