//! Decodes a Chat Completions stream, tolerating what compatible servers do differently
//! (WIRE-NOTES §2, "Compatible servers"):
//! * tool call fragments without `index` (old ollama), or every call at index 0 told apart only
//!   by a new `id` (ollama, litellm): a fragment with an unseen `id` starts a new call; one
//!   without `id` continues the call last seen at its `index`, or the latest call;
//! * whole arguments in one fragment, arguments sent as a JSON object instead of a string;
//! * `finish_reason: "stop"` although tool calls came: "tools were called" is decided from the
//!   accumulated calls, not from `finish_reason`;
//! * thinking as `delta.reasoning_content` or `delta.reasoning` (see [`reasoning_delta`]);
//! * the final `choices: []` usage chunk, `data: [DONE]` (or a server that closes without it,
//!   once a `finish_reason` was seen), and `data: {"error": …}` mid-stream.

use std::collections::HashMap;

use serde_json::Value;

use super::{PROVIDER, error_kind};
use crate::driver::Decoder;
use crate::error::ModelError;
use crate::sse::SseEvent;
use crate::tool_args::parse_tool_input;
use crate::types::{ModelEvent, StopReason, Usage};

struct Call {
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

pub(crate) struct OpenAiDecoder {
    request_id: Option<String>,
    calls: Vec<Call>,
    /// `index` → position in `calls` of the call most recently seen at that index.
    by_index: HashMap<u64, usize>,
    finish_reason: Option<String>,
    calls_finished: bool,
    /// Any tool call arrived this turn (decides the stop reason, whatever `finish_reason` says).
    had_calls: bool,
    usage: Option<Usage>,
}

impl OpenAiDecoder {
    pub(crate) fn new(request_id: Option<String>) -> Self {
        OpenAiDecoder {
            request_id,
            calls: Vec::new(),
            by_index: HashMap::new(),
            finish_reason: None,
            calls_finished: false,
            had_calls: false,
            usage: None,
        }
    }

    fn tool_call_fragment(&mut self, tc: &Value, out: &mut Vec<ModelEvent>) {
        let index = tc.get("index").and_then(Value::as_u64);
        let id = tc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = tc.get("function").unwrap_or(&Value::Null);
        let pos = if let Some(id) = id {
            match self.calls.iter().position(|c| c.id == id) {
                Some(pos) => pos,
                None => self.new_call(id.to_owned()),
            }
        } else if let Some(pos) = index.and_then(|i| self.by_index.get(&i).copied()) {
            pos
        } else if !self.calls.is_empty() {
            self.calls.len() - 1
        } else {
            // Some servers omit ids entirely; the model still needs one to pair the result.
            self.new_call(format!("call_{}", self.calls.len()))
        };
        if let Some(index) = index {
            self.by_index.insert(index, pos);
        }
        let call = &mut self.calls[pos];
        if let Some(name) = function.get("name").and_then(Value::as_str)
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        match function.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    fn new_call(&mut self, id: String) -> usize {
        self.had_calls = true;
        self.calls.push(Call {
            id,
            name: String::new(),
            arguments: String::new(),
            started: false,
        });
        self.calls.len() - 1
    }

    /// Emits every call's outcome once the model has stopped producing them.
    fn finish_calls(&mut self, out: &mut Vec<ModelEvent>) {
        if self.calls_finished {
            return;
        }
        self.calls_finished = true;
        let cut = self.finish_reason.as_deref() == Some("length");
        for call in self.calls.drain(..) {
            if !call.started {
                out.push(ModelEvent::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
            }
            let event = parse_tool_input(call.id, call.name, &call.arguments);
            let event = match event {
                ModelEvent::ToolCallIncomplete { id, name, .. } if cut => {
                    ModelEvent::ToolCallIncomplete {
                        id,
                        name,
                        reason: "the response hit max_tokens while this tool call was being \
                                 written; its arguments are incomplete and it was not executed"
                            .to_owned(),
                    }
                }
                other => other,
            };
            out.push(event);
        }
    }

    fn complete(&mut self, out: &mut Vec<ModelEvent>) {
        let had_calls = self.had_calls;
        self.finish_calls(out);
        if let Some(usage) = self.usage {
            out.push(ModelEvent::Usage(usage));
        }
        let stop_reason = match (self.finish_reason.as_deref(), had_calls) {
            (Some("length"), _) => StopReason::MaxTokens,
            (_, true) | (Some("tool_calls" | "function_call"), false) => StopReason::ToolUse,
            (Some("stop"), false) => StopReason::EndTurn,
            (Some(other), false) => StopReason::Other(other.to_owned()),
            (None, false) => StopReason::Other("unknown".to_owned()),
        };
        out.push(ModelEvent::Completed {
            stop_reason,
            request_id: self.request_id.clone(),
        });
    }
}

/// The thinking a compatible server streams beside `content`: `delta.reasoning_content`
/// (DeepSeek's API, llama.cpp's server with `--reasoning-format deepseek`, vLLM before 0.11) or
/// `delta.reasoning` (vLLM ≥ 0.11, docs.vllm.ai "Reasoning Outputs": "reasoning used to be called
/// reasoning_content"). The official field wins when a server sends both.
fn reasoning_delta(delta: &Value) -> Option<&str> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| delta.get(*key).and_then(Value::as_str))
        .filter(|t| !t.is_empty())
}

impl Decoder for OpenAiDecoder {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.complete(out);
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| ModelError::MalformedStream {
            provider: PROVIDER,
            message: format!("chunk is not JSON ({e}): {data}"),
            request_id: self.request_id.clone(),
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error, self.request_id.clone()));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // n > 1 is never requested; a server sending other choices is ignored for them.
        let choice = choices.and_then(|c| {
            c.iter()
                .find(|ch| ch.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        });
        if let Some(choice) = choice {
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(thinking) = reasoning_delta(delta) {
                out.push(ModelEvent::ThinkingDelta(thinking.to_owned()));
            }
            if let Some(text) = delta
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                out.push(ModelEvent::TextDelta(text.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for tc in calls {
                    self.tool_call_fragment(tc, out);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
                // The calls are final now; deliver them without waiting for the usage chunk.
                self.finish_calls(out);
            }
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let field = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = field("/prompt_tokens_details/cached_tokens");
            self.usage = Some(Usage {
                input: field("/prompt_tokens").saturating_sub(cached),
                output: field("/completion_tokens"),
                cache_read: cached,
                cache_creation: 0,
            });
        }
        Ok(false)
    }

    fn on_eof(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.finish_reason.is_some() {
            // Finished but closed without `[DONE]`: some servers do; the turn is whole.
            self.complete(out);
            return Ok(());
        }
        Err(ModelError::Transport {
            provider: PROVIDER,
            message: "the stream ended before a finish_reason or [DONE]".to_owned(),
            request_id: self.request_id.clone(),
        })
    }
}

/// `{"error": {"message", "type", "code"}}`, or just `{"error": "text"}` (ollama).
fn stream_error(error: &Value, request_id: Option<String>) -> ModelError {
    let (message, error_type) = match error {
        Value::String(s) => (s.clone(), None),
        other => (
            other
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| other.to_string(), str::to_owned),
            other.get("type").and_then(Value::as_str).map(str::to_owned),
        ),
    };
    ModelError::Api {
        provider: PROVIDER,
        kind: error_kind(error_type.as_deref(), None),
        status: None,
        error_type,
        message,
        request_id,
        retry_after: None,
        should_retry: None,
        overflow: None,
    }
}
