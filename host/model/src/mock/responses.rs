//! A scripted OpenAI Responses API stream (`POST /v1/responses`, `stream: true`), event for event
//! as api.openai.com sends it, for tern's tests and for driving other Responses clients (Codex
//! CLI) against a local server.
//!
//! The shapes follow OpenAI's API reference ("Streaming events") and a live recording of
//! api.openai.com (charmbracelet/fantasy `providertests/testdata/TestOpenAIResponsesWithSummaryThinking/
//! openai-o4-mini/thinking-streaming.yaml`): every event is `event: <type>` + `data: {"type":
//! <type>, …, "sequence_number": n}`; a turn is `response.created`, `response.in_progress`, then
//! per output item `response.output_item.added` … `response.output_item.done` (a message item
//! with `content_part.added`, `output_text.delta`s, `output_text.done`, `content_part.done`; a
//! function call with `function_call_arguments.delta`s and `.done`; a reasoning item with its
//! `encrypted_content`), and finally `response.completed` with the whole `output` and `usage`
//! (or `response.incomplete` / `response.failed`). There is no `[DONE]`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use tern_model::mock::{MockModelServer, responses::ResponsesTurn};
//! let server = MockModelServer::start().await?;
//! // A Responses client uses base_url = server.url() + "/v1"; it POSTs /v1/responses.
//! server.enqueue(
//!     ResponsesTurn::new()
//!         .reasoning("rs_1", "gAAAA-opaque")
//!         .function_call("fc_1", "call_1", "shell", &["{\"command\":", "\"ls\"}"])
//!         .completed(),
//! );
//! server.enqueue(ResponsesTurn::new().message("msg_2", &["Done."]).completed());
//! # Ok(()) }
//! ```

use serde_json::{Value, json};

use super::MockResponse;

/// Builds one Responses API turn.
#[derive(Debug, Clone)]
pub struct ResponsesTurn {
    events: Vec<Vec<u8>>,
    seq: u64,
    output: Vec<Value>,
    id: String,
    usage: Value,
}

impl Default for ResponsesTurn {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponsesTurn {
    /// `response.created` and `response.in_progress`; usage 100 input (64 cached), 20 output.
    pub fn new() -> Self {
        Self::with_usage(100, 64, 20)
    }

    /// A turn whose `response.completed` reports these counts (`input` includes `cached`).
    pub fn with_usage(input: u64, cached: u64, output: u64) -> Self {
        let mut turn = ResponsesTurn {
            events: Vec::new(),
            seq: 0,
            output: Vec::new(),
            id: "resp_mock".to_owned(),
            usage: json!({"input_tokens": input,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + output}),
        };
        let response = turn.response("in_progress", Value::Null);
        turn.push(json!({"type": "response.created", "response": response}));
        let response = turn.response("in_progress", Value::Null);
        turn.push(json!({"type": "response.in_progress", "response": response}));
        turn
    }

    fn response(&self, status: &str, usage: Value) -> Value {
        json!({"id": self.id, "object": "response", "created_at": 1, "status": status,
            "error": null, "incomplete_details": null, "model": "mock", "output": self.output,
            "parallel_tool_calls": true, "store": false, "usage": usage})
    }

    /// Any event, verbatim but for its `sequence_number` (set when missing).
    pub fn event(mut self, data: Value) -> Self {
        self.push(data);
        self
    }

    fn push(&mut self, mut data: Value) {
        if data.get("sequence_number").is_none() {
            data["sequence_number"] = json!(self.seq);
        }
        self.seq += 1;
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        self.events
            .push(format!("event: {name}\ndata: {data}\n\n").into_bytes());
    }

    fn index(&self) -> usize {
        self.output.len()
    }

    /// An assistant `message` item whose text streams in these pieces.
    pub fn message(mut self, id: &str, pieces: &[&str]) -> Self {
        let index = self.index();
        let text: String = pieces.concat();
        self.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": id, "type": "message", "status": "in_progress", "content": [],
                "role": "assistant"}}),
        );
        self.push(json!({"type": "response.content_part.added", "item_id": id,
            "output_index": index, "content_index": 0,
            "part": {"type": "output_text", "annotations": [], "text": ""}}));
        for piece in pieces {
            self.push(json!({"type": "response.output_text.delta", "item_id": id,
                "output_index": index, "content_index": 0, "delta": piece}));
        }
        self.push(json!({"type": "response.output_text.done", "item_id": id,
            "output_index": index, "content_index": 0, "text": text}));
        let part = json!({"type": "output_text", "annotations": [], "text": text});
        self.push(json!({"type": "response.content_part.done", "item_id": id,
            "output_index": index, "content_index": 0, "part": part}));
        let item = json!({"id": id, "type": "message", "status": "completed",
            "content": [part], "role": "assistant"});
        self.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
        self.output.push(item);
        self
    }

    /// A `function_call` item (`id` is the item's `fc_…`, `call_id` what results answer) whose
    /// arguments stream in these fragments.
    pub fn function_call(self, id: &str, call_id: &str, name: &str, fragments: &[&str]) -> Self {
        self.call_item(id, call_id, None, name, fragments)
    }

    /// A `function_call` of a tool offered inside a `{"type": "namespace"}` tool (Codex CLI
    /// offers each MCP server's tools as namespace `mcp__<server>`): the item names the tool and
    /// carries its `namespace`.
    pub fn namespaced_function_call(
        self,
        id: &str,
        call_id: &str,
        namespace: &str,
        name: &str,
        fragments: &[&str],
    ) -> Self {
        self.call_item(id, call_id, Some(namespace), name, fragments)
    }

    fn call_item(
        mut self,
        id: &str,
        call_id: &str,
        namespace: Option<&str>,
        name: &str,
        fragments: &[&str],
    ) -> Self {
        let index = self.index();
        let arguments: String = fragments.concat();
        let mut added = json!({"id": id, "type": "function_call", "status": "in_progress",
            "arguments": "", "call_id": call_id, "name": name});
        if let Some(namespace) = namespace {
            added["namespace"] = json!(namespace);
        }
        self.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": added}),
        );
        for fragment in fragments {
            self.push(
                json!({"type": "response.function_call_arguments.delta", "item_id": id,
                "output_index": index, "delta": fragment}),
            );
        }
        self.push(
            json!({"type": "response.function_call_arguments.done", "item_id": id,
            "output_index": index, "arguments": arguments}),
        );
        let mut item = json!({"id": id, "type": "function_call", "status": "completed",
            "arguments": arguments, "call_id": call_id, "name": name});
        if let Some(namespace) = namespace {
            item["namespace"] = json!(namespace);
        }
        self.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
        self.output.push(item);
        self
    }

    /// A function call that is started and never finished (the turn is then cut by
    /// [`ResponsesTurn::incomplete`]).
    pub fn function_call_unfinished(
        mut self,
        id: &str,
        call_id: &str,
        name: &str,
        fragments: &[&str],
    ) -> Self {
        let index = self.index();
        self.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": id, "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": call_id, "name": name}}),
        );
        for fragment in fragments {
            self.push(
                json!({"type": "response.function_call_arguments.delta", "item_id": id,
                "output_index": index, "delta": fragment}),
            );
        }
        self.output.push(
            json!({"id": id, "type": "function_call", "status": "incomplete",
            "arguments": fragments.concat(), "call_id": call_id, "name": name}),
        );
        self
    }

    /// A `reasoning` item carrying `encrypted_content` (what `include:
    /// ["reasoning.encrypted_content"]` asks for) and no summary.
    pub fn reasoning(mut self, id: &str, encrypted_content: &str) -> Self {
        let index = self.index();
        let item = json!({"id": id, "type": "reasoning", "content": [],
            "encrypted_content": encrypted_content, "summary": []});
        self.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": item}),
        );
        self.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
        self.output.push(item);
        self
    }

    /// A `reasoning` item whose summary streams in these pieces: `reasoning_summary_part.added`,
    /// `reasoning_summary_text.delta`s, `.done`, `reasoning_summary_part.done` (the event shapes of
    /// OpenAI's API reference, "Streaming events"), then the item with its `encrypted_content`.
    pub fn reasoning_summary(mut self, id: &str, encrypted_content: &str, pieces: &[&str]) -> Self {
        let index = self.index();
        let text = pieces.concat();
        let empty = json!({"id": id, "type": "reasoning", "content": [],
            "encrypted_content": encrypted_content, "summary": []});
        self.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": empty}),
        );
        self.push(
            json!({"type": "response.reasoning_summary_part.added", "item_id": id,
            "output_index": index, "summary_index": 0,
            "part": {"type": "summary_text", "text": ""}}),
        );
        for piece in pieces {
            self.push(
                json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                "output_index": index, "summary_index": 0, "delta": piece}),
            );
        }
        self.push(
            json!({"type": "response.reasoning_summary_text.done", "item_id": id,
            "output_index": index, "summary_index": 0, "text": text}),
        );
        self.push(
            json!({"type": "response.reasoning_summary_part.done", "item_id": id,
            "output_index": index, "summary_index": 0,
            "part": {"type": "summary_text", "text": text}}),
        );
        let item = json!({"id": id, "type": "reasoning", "content": [],
            "encrypted_content": encrypted_content,
            "summary": [{"type": "summary_text", "text": text}]});
        self.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": item}),
        );
        self.output.push(item);
        self
    }

    /// Ends with `response.completed`, carrying the whole output and the usage.
    pub fn completed(self) -> MockResponse {
        MockResponse::sse_chunks(self.completed_events())
    }

    /// The events of [`completed`](Self::completed), for tests that splice them.
    pub fn completed_events(mut self) -> Vec<Vec<u8>> {
        let response = self.response("completed", self.usage.clone());
        self.push(json!({"type": "response.completed", "response": response}));
        self.events
    }

    /// Ends with `response.incomplete` for `reason` (`max_output_tokens`, `content_filter`).
    pub fn incomplete(mut self, reason: &str) -> MockResponse {
        let mut response = self.response("incomplete", self.usage.clone());
        response["incomplete_details"] = json!({"reason": reason});
        self.push(json!({"type": "response.incomplete", "response": response}));
        MockResponse::sse_chunks(self.events)
    }

    /// Ends with `response.failed` carrying `error: {code, message}` (e.g.
    /// `context_length_exceeded`, `server_error`, `rate_limit_exceeded`).
    pub fn failed(mut self, code: &str, message: &str) -> MockResponse {
        let mut response = self.response("failed", Value::Null);
        response["error"] = json!({"code": code, "message": message});
        self.push(json!({"type": "response.failed", "response": response}));
        MockResponse::sse_chunks(self.events)
    }

    /// The events so far, without an ending (with [`MockResponse::drop_after`] or alone).
    pub fn events(self) -> Vec<Vec<u8>> {
        self.events
    }
}

/// The HTTP 400 api.openai.com answers a `/v1/responses` request longer than the window with.
pub fn overflow_error() -> MockResponse {
    MockResponse::json(
        400,
        &json!({"error": {"message": "Your input exceeds the context window of this model. \
            Please adjust your input and try again.", "type": "invalid_request_error",
            "param": "input", "code": "context_length_exceeded"}}),
    )
}
