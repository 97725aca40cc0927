//! Decodes a Responses API stream. Each SSE event carries `event: <type>` and a JSON `data` with
//! the same `type` and a `sequence_number`; there is no `[DONE]` — the stream ends after
//! `response.completed`, `response.incomplete` or `response.failed`.
//!
//! What tern reads (everything else — `response.created`, `content_part.*`, refusal, audio,
//! built-in tools — is ignored, as new event types must be):
//! * `response.output_text.delta` `{item_id, output_index, content_index, delta}` → text;
//! * `response.reasoning_summary_text.delta` `{item_id, output_index, summary_index, delta}` →
//!   thinking shown as it streams (the whole summary still arrives in the reasoning item);
//! * `response.output_item.added` with a `function_call` item `{id: "fc_…", call_id: "call_…",
//!   name, arguments: ""}` → the call starts; `response.function_call_arguments.delta`
//!   `{item_id, delta}` appends, `.done` `{item_id, arguments}` replaces with the whole text;
//! * `response.output_item.done` → a finished item: a `function_call` (its `arguments` are final),
//!   a `reasoning` item (kept, with `encrypted_content`), or a `message` (its text is delivered
//!   here when no deltas came for it — Codex's own test servers send only `done` items);
//! * `response.completed` → usage `{input_tokens, input_tokens_details.cached_tokens,
//!   output_tokens}` (input includes the cached part) and the end of the turn;
//! * `response.incomplete` with `incomplete_details.reason = "max_output_tokens"` → max tokens;
//! * `response.failed` `{response: {error: {code, message}}}` and `error` `{code, message}` →
//!   errors, `context_length_exceeded` typed as an overflow.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::driver::Decoder;
use crate::error::{ErrorKind, ModelError, Overflow, OverflowSource};
use crate::openai::PROVIDER;
use crate::sse::SseEvent;
use crate::tool_args::parse_tool_input;
use crate::types::{ModelEvent, Reasoning, StopReason, Usage};

struct Call {
    call_id: String,
    name: String,
    arguments: String,
    done: bool,
}

pub(crate) struct ResponsesDecoder {
    request_id: Option<String>,
    /// `fc_…` item id → call, in the order the calls were added.
    calls: Vec<(String, Call)>,
    /// Message items whose text arrived as deltas.
    streamed: HashSet<String>,
    /// `output_index` → item id, for servers that omit `item_id` on deltas.
    by_index: HashMap<u64, String>,
    had_calls: bool,
}

impl ResponsesDecoder {
    pub(crate) fn new(request_id: Option<String>) -> Self {
        ResponsesDecoder {
            request_id,
            calls: Vec::new(),
            streamed: HashSet::new(),
            by_index: HashMap::new(),
            had_calls: false,
        }
    }

    fn item_id(&self, data: &Value) -> Option<String> {
        data.get("item_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                let index = data.get("output_index").and_then(Value::as_u64)?;
                self.by_index.get(&index).cloned()
            })
    }

    fn call_mut(&mut self, item_id: &str) -> Option<&mut Call> {
        self.calls
            .iter_mut()
            .find(|(id, _)| id == item_id)
            .map(|(_, c)| c)
    }

    fn start_call(&mut self, item: &Value, output_index: Option<u64>, out: &mut Vec<ModelEvent>) {
        let item_id = str_field(item, "id");
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| item_id.clone(), str::to_owned);
        let item_id = if item_id.is_empty() {
            call_id.clone()
        } else {
            item_id
        };
        if let Some(index) = output_index {
            self.by_index.insert(index, item_id.clone());
        }
        if self.call_mut(&item_id).is_some() {
            return;
        }
        let name = str_field(item, "name");
        self.had_calls = true;
        out.push(ModelEvent::ToolCallStarted {
            id: call_id.clone(),
            name: name.clone(),
        });
        self.calls.push((
            item_id,
            Call {
                call_id,
                name,
                arguments: str_field(item, "arguments"),
                done: false,
            },
        ));
    }

    fn item_done(&mut self, data: &Value, out: &mut Vec<ModelEvent>) {
        let Some(item) = data.get("item") else {
            return;
        };
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let output_index = data.get("output_index").and_then(Value::as_u64);
                self.start_call(item, output_index, out);
                let item_id = {
                    let id = str_field(item, "id");
                    if id.is_empty() {
                        str_field(item, "call_id")
                    } else {
                        id
                    }
                };
                if let Some(call) = self.call_mut(&item_id)
                    && !call.done
                {
                    if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                        call.arguments = arguments.to_owned();
                    }
                    call.done = true;
                    out.push(parse_tool_input(
                        call.call_id.clone(),
                        call.name.clone(),
                        &call.arguments,
                    ));
                }
            }
            Some("reasoning") => {
                let summary = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|parts| {
                        parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(ModelEvent::Reasoning(Reasoning {
                    id: str_field(item, "id"),
                    summary,
                    encrypted_content: item
                        .get("encrypted_content")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                }));
            }
            Some("message") => {
                let id = str_field(item, "id");
                if self.streamed.contains(&id) {
                    return;
                }
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect();
                if !text.is_empty() {
                    out.push(ModelEvent::TextDelta(text));
                }
            }
            _ => {}
        }
    }

    /// The calls never closed by `output_item.done`: cut by the output limit or the stream.
    fn unfinished(&mut self, out: &mut Vec<ModelEvent>, cut_by_limit: bool) {
        for (_, call) in self.calls.iter_mut().filter(|(_, c)| !c.done) {
            call.done = true;
            let reason = if cut_by_limit {
                "the response hit max_output_tokens while this tool call was being written; its \
                 arguments are incomplete and it was not executed"
                    .to_owned()
            } else {
                "the response ended before this tool call was finished; it was not executed"
                    .to_owned()
            };
            out.push(ModelEvent::ToolCallIncomplete {
                id: call.call_id.clone(),
                name: call.name.clone(),
                reason,
            });
        }
    }

    fn finish(&mut self, response: &Value, out: &mut Vec<ModelEvent>, incomplete: bool) {
        let reason = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        let cut = incomplete && reason == Some("max_output_tokens");
        self.unfinished(out, cut);
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            let field = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let cached = field("/input_tokens_details/cached_tokens");
            out.push(ModelEvent::Usage(Usage {
                input: field("/input_tokens").saturating_sub(cached),
                output: field("/output_tokens"),
                cache_read: cached,
                cache_creation: 0,
            }));
        }
        let stop_reason = match (incomplete, reason, self.had_calls) {
            (true, Some("max_output_tokens"), _) => StopReason::MaxTokens,
            (true, Some(other), _) => StopReason::Other(other.to_owned()),
            (true, None, _) => StopReason::Other("incomplete".to_owned()),
            (false, _, true) => StopReason::ToolUse,
            (false, _, false) => StopReason::EndTurn,
        };
        out.push(ModelEvent::Completed {
            stop_reason,
            request_id: self.request_id.clone(),
        });
    }

    fn error(&self, error: &Value) -> ModelError {
        stream_error(error, self.request_id.clone())
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// An error reported inside the stream: `response.failed`'s `response.error` or an `error`
/// event, both `{code, message}` (the `error` event also has `param`).
pub(crate) fn stream_error(error: &Value, request_id: Option<String>) -> ModelError {
    let code = error.get("code").and_then(Value::as_str).map(str::to_owned);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    let error_type = error.get("type").and_then(Value::as_str).map(str::to_owned);
    let overflow = (code.as_deref() == Some("context_length_exceeded")).then(|| Overflow {
        source: OverflowSource::Openai,
        ..Overflow::from_message(&message)
    });
    let kind = if overflow.is_some() {
        ErrorKind::ContextOverflow
    } else {
        match code.as_deref().or(error_type.as_deref()) {
            Some("rate_limit_exceeded" | "rate_limit_error") => ErrorKind::RateLimited,
            Some("insufficient_quota" | "invalid_request_error" | "invalid_prompt") => {
                ErrorKind::BadRequest
            }
            Some("authentication_error" | "permission_error" | "invalid_api_key") => {
                ErrorKind::Auth
            }
            Some("model_not_found") => ErrorKind::NotFound,
            // server_error, vector_store_timeout and anything new: the server failed.
            _ => ErrorKind::Server,
        }
    };
    ModelError::Api {
        provider: PROVIDER,
        kind,
        status: None,
        error_type: code.or(error_type),
        message,
        request_id,
        retry_after: None,
        should_retry: None,
        overflow: overflow.map(Box::new),
    }
}

impl Decoder for ResponsesDecoder {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        let data: Value =
            serde_json::from_str(event.data.trim()).map_err(|e| ModelError::MalformedStream {
                provider: PROVIDER,
                message: format!("event is not JSON ({e}): {}", event.data),
                request_id: self.request_id.clone(),
            })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str())
            .to_owned();
        match kind.as_str() {
            "response.output_text.delta" => {
                if let Some(id) = self.item_id(&data) {
                    self.streamed.insert(id);
                }
                if let Some(delta) = data
                    .get("delta")
                    .and_then(Value::as_str)
                    .filter(|d| !d.is_empty())
                {
                    out.push(ModelEvent::TextDelta(delta.to_owned()));
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(delta) = data
                    .get("delta")
                    .and_then(Value::as_str)
                    .filter(|d| !d.is_empty())
                {
                    out.push(ModelEvent::ThinkingDelta(delta.to_owned()));
                }
            }
            "response.output_item.added" => {
                if let Some(item) = data.get("item") {
                    let output_index = data.get("output_index").and_then(Value::as_u64);
                    match item.get("type").and_then(Value::as_str) {
                        Some("function_call") => self.start_call(item, output_index, out),
                        _ => {
                            if let (Some(index), Some(id)) =
                                (output_index, item.get("id").and_then(Value::as_str))
                            {
                                self.by_index.insert(index, id.to_owned());
                            }
                        }
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(id) = self.item_id(&data)
                    && let Some(delta) = data.get("delta").and_then(Value::as_str)
                    && let Some(call) = self.call_mut(&id)
                {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(id) = self.item_id(&data)
                    && let Some(arguments) = data.get("arguments").and_then(Value::as_str)
                    && let Some(call) = self.call_mut(&id)
                {
                    call.arguments = arguments.to_owned();
                }
            }
            "response.output_item.done" => self.item_done(&data, out),
            "response.completed" => {
                let response = data.get("response").cloned().unwrap_or(Value::Null);
                self.finish(&response, out, false);
                return Ok(true);
            }
            "response.incomplete" => {
                let response = data.get("response").cloned().unwrap_or(Value::Null);
                self.finish(&response, out, true);
                return Ok(true);
            }
            "response.failed" => {
                let error = data
                    .pointer("/response/error")
                    .cloned()
                    .unwrap_or_else(|| data.clone());
                return Err(self.error(&error));
            }
            "error" => {
                // `{"type": "error", "code", "message", "param", "sequence_number"}`; some
                // servers nest it as `{"error": {…}}`.
                let error = data.get("error").cloned().unwrap_or(data);
                return Err(self.error(&error));
            }
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        Err(ModelError::Transport {
            provider: PROVIDER,
            message: "the stream ended before response.completed".to_owned(),
            request_id: self.request_id.clone(),
        })
    }
}
