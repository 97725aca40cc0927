//! Decodes the Messages API event stream (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`; anything else is ignored, as the streaming docs require).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{PROVIDER, error_kind};
use crate::driver::Decoder;
use crate::error::ModelError;
use crate::sse::SseEvent;
use crate::tool_args::parse_tool_input;
use crate::types::{ModelEvent, StopReason, Usage};

/// A content block between its `content_block_start` and `content_block_stop`.
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
    },
    /// Extended thinking: its `thinking_delta`s are shown, its signature is not kept (tern does
    /// not enable thinking in its requests, so there is no turn to send it back in).
    Thinking,
    /// Server tools and whatever comes next: not ours to interpret.
    Other,
}

pub(crate) struct AnthropicDecoder {
    request_id: Option<String>,
    open: BTreeMap<u64, Block>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
}

impl AnthropicDecoder {
    pub(crate) fn new(request_id: Option<String>) -> Self {
        AnthropicDecoder {
            request_id,
            open: BTreeMap::new(),
            usage: None,
            stop_reason: None,
        }
    }

    fn malformed(&self, message: String) -> ModelError {
        ModelError::MalformedStream {
            provider: PROVIDER,
            message,
            request_id: self.request_id.clone(),
        }
    }

    /// `message_delta.usage` is cumulative and may repeat any field: the latest value wins.
    fn merge_usage(&mut self, u: &Value) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        let field = |name: &str| u.get(name).and_then(Value::as_u64);
        if let Some(v) = field("input_tokens") {
            usage.input = v;
        }
        if let Some(v) = field("output_tokens") {
            usage.output = v;
        }
        if let Some(v) = field("cache_read_input_tokens") {
            usage.cache_read = v;
        }
        if let Some(v) = field("cache_creation_input_tokens") {
            usage.cache_creation = v;
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        let cut_by_max_tokens = self.stop_reason.as_deref() == Some("max_tokens");
        for (_, block) in std::mem::take(&mut self.open) {
            if let Block::Tool { id, name, .. } = block {
                let reason = if cut_by_max_tokens {
                    "the response hit max_tokens while this tool call was being written; \
                     its arguments are incomplete and it was not executed"
                } else {
                    "the stream ended before this tool call was finished (no content_block_stop); \
                     it was not executed"
                };
                out.push(ModelEvent::ToolCallIncomplete {
                    id,
                    name,
                    reason: reason.to_owned(),
                });
            }
        }
        if let Some(usage) = self.usage {
            out.push(ModelEvent::Usage(usage));
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("stop_sequence") => StopReason::StopSequence,
            Some(other) => StopReason::Other(other.to_owned()),
            None => StopReason::Other("unknown".to_owned()),
        };
        out.push(ModelEvent::Completed {
            stop_reason,
            request_id: self.request_id.clone(),
        });
    }
}

fn str_field<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

impl Decoder for AnthropicDecoder {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            self.malformed(format!(
                "event {:?} data is not JSON ({e}): {}",
                event.event, event.data
            ))
        })?;
        // `data.type` repeats the SSE event name; prefer it, it is what the SDKs dispatch on.
        let kind = str_field(&data, "type").unwrap_or(&event.event);
        match kind {
            "message_start" => {
                if let Some(u) = data.pointer("/message/usage") {
                    self.merge_usage(u);
                }
            }
            "content_block_start" => {
                let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                let block = data.get("content_block").unwrap_or(&Value::Null);
                let block = match str_field(block, "type") {
                    Some("text") => {
                        if let Some(text) = str_field(block, "text").filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::TextDelta(text.to_owned()));
                        }
                        Block::Text
                    }
                    Some("tool_use") => {
                        let id = str_field(block, "id").unwrap_or_default().to_owned();
                        let name = str_field(block, "name").unwrap_or_default().to_owned();
                        out.push(ModelEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Block::Tool {
                            id,
                            name,
                            json: String::new(),
                        }
                    }
                    Some("thinking") => {
                        if let Some(text) = str_field(block, "thinking").filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::ThinkingDelta(text.to_owned()));
                        }
                        Block::Thinking
                    }
                    _ => Block::Other,
                };
                self.open.insert(index, block);
            }
            "content_block_delta" => {
                let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = data.get("delta").unwrap_or(&Value::Null);
                match (str_field(delta, "type"), self.open.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        if let Some(text) = str_field(delta, "text").filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::TextDelta(text.to_owned()));
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(str_field(delta, "partial_json").unwrap_or_default());
                    }
                    // `{"type": "thinking_delta", "thinking": "…"}` (streaming docs, "Streaming
                    // request with extended thinking").
                    (Some("thinking_delta"), _) => {
                        if let Some(text) = str_field(delta, "thinking").filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::ThinkingDelta(text.to_owned()));
                        }
                    }
                    // signature_delta, citations, future delta types.
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(Block::Tool { id, name, json }) = self.open.remove(&index) {
                    out.push(parse_tool_input(id, name, &json));
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(u) = data.get("usage") {
                    self.merge_usage(u);
                }
            }
            "message_stop" => {
                self.finish(out);
                return Ok(true);
            }
            "error" => {
                let error_type = data.pointer("/error/type").and_then(Value::as_str);
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(|| event.data.clone(), str::to_owned);
                return Err(ModelError::Api {
                    provider: PROVIDER,
                    // Unknown error types count as server errors: the stream broke on their side.
                    kind: error_kind(error_type, None),
                    status: None,
                    error_type: error_type.map(str::to_owned),
                    message,
                    request_id: self.request_id.clone(),
                    retry_after: None,
                    should_retry: None,
                    overflow: None,
                });
            }
            // `ping` and any event type added later.
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        // Without message_stop we cannot know the turn is whole: treat as a broken connection.
        Err(ModelError::Transport {
            provider: PROVIDER,
            message: "the stream ended before message_stop".to_owned(),
            request_id: self.request_id.clone(),
        })
    }
}
