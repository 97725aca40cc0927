//! Builders for scripted turns in each provider's real SSE format, one chunk per SSE event.

use serde_json::{Value, json};

use super::MockResponse;

fn anthropic_event(data: &Value) -> Vec<u8> {
    let name = data["type"].as_str().unwrap_or_default();
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// An Anthropic Messages stream, built block by block.
#[derive(Debug, Clone)]
pub struct AnthropicTurn {
    events: Vec<Vec<u8>>,
    index: u64,
    usage: Value,
}

impl Default for AnthropicTurn {
    fn default() -> Self {
        Self::new()
    }
}

impl AnthropicTurn {
    /// Starts a turn (`message_start`, then a `ping` as the real API sends).
    pub fn new() -> Self {
        Self::with_usage(10, 0, 0)
    }

    /// Starts a turn whose `message_start` reports these input token counts.
    pub fn with_usage(input: u64, cache_read: u64, cache_creation: u64) -> Self {
        let usage = json!({"input_tokens": input, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_creation, "output_tokens": 1});
        let start = json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message",
            "role": "assistant", "model": "mock", "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": usage}});
        AnthropicTurn {
            events: vec![
                anthropic_event(&start),
                anthropic_event(&json!({"type": "ping"})),
            ],
            index: 0,
            usage,
        }
    }

    /// A text block streamed in these pieces.
    pub fn text(mut self, pieces: &[&str]) -> Self {
        let index = self.index;
        self.events.push(anthropic_event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in pieces {
            self.events.push(anthropic_event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        self.events.push(anthropic_event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        self.index += 1;
        self
    }

    /// An extended-thinking block streamed in these pieces, closed by a `signature_delta` (the
    /// shape of the streaming docs' "Streaming request with extended thinking").
    pub fn thinking(mut self, pieces: &[&str]) -> Self {
        let index = self.index;
        self.events.push(anthropic_event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": ""}}),
        ));
        for piece in pieces {
            self.events.push(anthropic_event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece}}),
            ));
        }
        self.events.push(anthropic_event(
            &json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIMmock"}}),
        ));
        self.events.push(anthropic_event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        self.index += 1;
        self
    }

    /// A tool_use block whose input JSON arrives in these fragments.
    pub fn tool_use(self, id: &str, name: &str, fragments: &[&str]) -> Self {
        self.tool_use_inner(id, name, fragments, true)
    }

    /// A tool_use block that never gets its `content_block_stop` (cut by max_tokens).
    pub fn tool_use_unfinished(self, id: &str, name: &str, fragments: &[&str]) -> Self {
        self.tool_use_inner(id, name, fragments, false)
    }

    fn tool_use_inner(mut self, id: &str, name: &str, fragments: &[&str], stop: bool) -> Self {
        let index = self.index;
        self.events.push(anthropic_event(
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        for fragment in std::iter::once(&"").chain(fragments) {
            self.events.push(anthropic_event(
                &json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        if stop {
            self.events.push(anthropic_event(
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        self.index += 1;
        self
    }

    /// Ends the turn: `message_delta` with `stop_reason` and usage, then `message_stop`.
    pub fn finish(self, stop_reason: &str) -> MockResponse {
        MockResponse::sse_chunks(self.finish_events(stop_reason))
    }

    /// The events of [`finish`](Self::finish), for tests that want to splice them.
    pub fn finish_events(mut self, stop_reason: &str) -> Vec<Vec<u8>> {
        let mut usage = self.usage.clone();
        usage["output_tokens"] = json!(42);
        self.events
            .push(anthropic_event(&json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": usage})));
        self.events
            .push(anthropic_event(&json!({"type": "message_stop"})));
        self.events
    }

    /// Ends the stream with an `error` event (e.g. `overloaded_error`) instead of finishing.
    pub fn error(mut self, error_type: &str, message: &str) -> MockResponse {
        self.events.push(anthropic_event(&json!({"type": "error",
            "error": {"type": error_type, "message": message}})));
        MockResponse::sse_chunks(self.events)
    }

    /// The events so far, without an ending (use with [`MockResponse::drop_after`] or alone).
    pub fn events(self) -> Vec<Vec<u8>> {
        self.events
    }
}

/// An OpenAI Chat Completions stream, built chunk by chunk.
#[derive(Debug, Clone)]
pub struct OpenAiTurn {
    events: Vec<Vec<u8>>,
}

impl Default for OpenAiTurn {
    fn default() -> Self {
        Self::new()
    }
}

fn chunk(choices: Value) -> Value {
    json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
        "model": "mock", "choices": choices})
}

impl OpenAiTurn {
    /// Starts a turn with the usual role-only first delta.
    pub fn new() -> Self {
        let first = chunk(
            json!([{"index": 0, "delta": {"role": "assistant", "content": ""},
            "finish_reason": null}]),
        );
        OpenAiTurn { events: vec![] }.data(&first)
    }

    /// Any `data:` payload, verbatim (for quirks: missing `index`, errors, ...).
    pub fn data(mut self, data: &Value) -> Self {
        self.events.push(format!("data: {data}\n\n").into_bytes());
        self
    }

    /// Text streamed in these pieces.
    pub fn text(mut self, pieces: &[&str]) -> Self {
        for piece in pieces {
            self = self.data(&chunk(
                json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
            ));
        }
        self
    }

    /// Thinking streamed as `delta.reasoning_content` in these pieces, the field DeepSeek's API
    /// and llama.cpp's server send (`{"delta": {"reasoning_content": "…"}}`).
    pub fn reasoning_content(mut self, pieces: &[&str]) -> Self {
        for piece in pieces {
            self = self.data(&chunk(
                json!([{"index": 0, "delta": {"reasoning_content": piece}, "finish_reason": null}]),
            ));
        }
        self
    }

    /// A tool call at `index`, its arguments in these fragments (id and name on the first one).
    pub fn tool_call(mut self, index: u64, id: &str, name: &str, fragments: &[&str]) -> Self {
        self = self.data(&chunk(
            json!([{"index": 0, "delta": {"tool_calls": [{"index": index,
            "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]},
            "finish_reason": null}]),
        ));
        for fragment in fragments {
            self = self.data(&chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": index,
                "function": {"arguments": fragment}}]}, "finish_reason": null}]),
            ));
        }
        self
    }

    /// `finish_reason`, the `include_usage` chunk with `choices: []`, and `[DONE]`.
    pub fn finish(self, finish_reason: &str) -> MockResponse {
        MockResponse::sse_chunks(self.finish_events(finish_reason))
    }

    /// The events of [`finish`](Self::finish).
    pub fn finish_events(self, finish_reason: &str) -> Vec<Vec<u8>> {
        let mut turn = self
            .data(&chunk(
                json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}]),
            ))
            .data(
                &json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1,
                "model": "mock", "choices": [], "usage": {"prompt_tokens": 100,
                "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 64}}}),
            );
        turn.events.push(b"data: [DONE]\n\n".to_vec());
        turn.events
    }

    /// The events so far, without an ending.
    pub fn events(self) -> Vec<Vec<u8>> {
        self.events
    }
}
