//! What a real provider does besides streaming a scripted answer: count the request's tokens,
//! refuse one that is longer than the context window (with the provider's real error), report
//! usage, and serve cached prefixes — so the context budget is tested against behaviour, not
//! against numbers a test made up.
//!
//! Tokens are counted as the JSON text of the request's parts divided by four: deterministic,
//! and independent of tern's own counting (which has to calibrate against it).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

use super::{MockResponse, Part, RecordedRequest};

/// Which API the simulated provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages: explicit `cache_control` breakpoints.
    Anthropic,
    /// OpenAI Chat Completions: automatic prefix caching from 1 024 tokens.
    Openai,
    /// OpenAI Responses (`input` items, `instructions`): caching as Chat Completions.
    Responses,
}

/// A provider with a context window.
#[derive(Debug, Clone)]
pub struct Simulation {
    api: Api,
    /// Prompt plus `max_tokens` must fit in this.
    window: u64,
    /// Prefix hashes seen at cache points of earlier requests.
    cached: HashSet<u64>,
    /// Largest prompt seen, for tests.
    pub peak_prompt: u64,
    /// Requests refused for their length.
    pub overflows: u64,
    /// Prompt tokens of every request served, and how many of them were cache reads.
    pub total_prompt: u64,
    pub total_cache_read: u64,
}

/// The simulated usage of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimUsage {
    pub input: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

impl Simulation {
    pub fn new(api: Api, window: u64) -> Self {
        Self {
            api,
            window,
            cached: HashSet::new(),
            peak_prompt: 0,
            overflows: 0,
            total_prompt: 0,
            total_cache_read: 0,
        }
    }

    /// The overflow error for `request`, when it does not fit, or the error for a history whose
    /// tool calls and results do not pair up; else its usage.
    pub fn judge(&mut self, request: &RecordedRequest) -> Result<SimUsage, MockResponse> {
        let body = request.json();
        validate_pairing(&body, self.api)?;
        let units = units(&body, self.api);
        let prompt: u64 = units.iter().map(|u| u.tokens).sum();
        let max_tokens = body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
            .or_else(|| body.get("max_output_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if prompt + max_tokens > self.window {
            self.overflows += 1;
            return Err(self.overflow(prompt, max_tokens));
        }
        self.peak_prompt = self.peak_prompt.max(prompt);
        let mut hash = DefaultHasher::new();
        let mut so_far = 0;
        let mut read = 0;
        let mut last_point = 0;
        let mut points = Vec::new();
        for unit in &units {
            unit.text.hash(&mut hash);
            so_far += unit.tokens;
            let point = match self.api {
                Api::Anthropic => unit.cache_point,
                // Automatic caching: every unit boundary past 1 024 tokens is a prefix it keeps.
                Api::Openai | Api::Responses => so_far >= 1024,
            };
            if point {
                let h = hash.finish();
                if self.cached.contains(&h) {
                    read = so_far;
                }
                last_point = so_far;
                points.push(h);
            }
        }
        self.cached.extend(points);
        let creation = match self.api {
            Api::Anthropic => last_point.saturating_sub(read),
            Api::Openai | Api::Responses => 0,
        };
        // OpenAI serves cache hits in 128-token blocks.
        if self.api != Api::Anthropic {
            read -= read % 128;
        }
        self.total_prompt += prompt;
        self.total_cache_read += read;
        Ok(SimUsage {
            input: prompt - read - creation,
            cache_read: read,
            cache_creation: creation,
        })
    }

    fn overflow(&self, prompt: u64, max_tokens: u64) -> MockResponse {
        match self.api {
            // The live API's words (as users have pasted them), and its status.
            Api::Anthropic => MockResponse::json(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": format!("prompt is too long: {prompt} tokens > {} maximum",
                        self.window.saturating_sub(max_tokens))},
                    "request_id": "req_mock_overflow"}),
            ),
            Api::Openai => MockResponse::json(
                400,
                &json!({"error": {"message": format!(
                    "This model's maximum context length is {} tokens. However, your messages \
                     resulted in {} tokens. Please reduce the length of the messages.",
                    self.window, prompt + max_tokens),
                    "type": "invalid_request_error", "param": "messages",
                    "code": "context_length_exceeded"}}),
            ),
            // The Responses API names no numbers.
            Api::Responses => super::responses::overflow_error(),
        }
    }

    /// `response` with its usage replaced by `usage` (the scripted turns carry placeholders).
    pub fn with_usage(&self, mut response: MockResponse, usage: SimUsage) -> MockResponse {
        for part in &mut response.parts {
            let Part::Bytes(bytes) = part else { continue };
            let text = String::from_utf8_lossy(bytes).into_owned();
            let Some(rewritten) = rewrite_usage(&text, self.api, usage) else {
                continue;
            };
            *bytes = rewritten.into_bytes();
        }
        response
    }
}

struct Unit {
    text: String,
    tokens: u64,
    cache_point: bool,
}

fn unit(value: &Value, prefix: &str) -> Unit {
    let mut clean = value.clone();
    let cache_point = clean
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some();
    let text = format!("{prefix}{clean}");
    Unit {
        tokens: (text.len() as u64).div_ceil(4),
        text,
        cache_point,
    }
}

/// The request as the provider reads it, in order: tools, system, then each content block.
fn units(body: &Value, api: Api) -> Vec<Unit> {
    let mut out = Vec::new();
    let empty = Vec::new();
    let array = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .clone()
    };
    for tool in array("tools") {
        out.push(unit(&tool, "tool:"));
    }
    if api == Api::Anthropic {
        for block in array("system") {
            out.push(unit(&block, "system:"));
        }
    }
    if api == Api::Responses {
        if let Some(instructions) = body.get("instructions") {
            out.push(unit(instructions, "system:"));
        }
        for item in array("input") {
            out.push(unit(&item, "item:"));
        }
        return out;
    }
    for message in array("messages") {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match message.get("content") {
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    out.push(unit(block, role));
                }
            }
            _ => out.push(unit(&message, role)),
        }
    }
    out
}

fn rewrite_usage(event: &str, api: Api, usage: SimUsage) -> Option<String> {
    let (prefix, data) = event.split_once("data: ")?;
    let data = data.trim_end();
    let mut json: Value = serde_json::from_str(data).ok()?;
    match api {
        Api::Anthropic => {
            // `message_start` carries the usage; `message_delta` repeats it (cumulative).
            let u = match json.pointer("/message/usage") {
                Some(_) => json.pointer_mut("/message/usage")?,
                None => json.get_mut("usage").filter(|u| u.is_object())?,
            };
            u["input_tokens"] = json!(usage.input);
            u["cache_read_input_tokens"] = json!(usage.cache_read);
            u["cache_creation_input_tokens"] = json!(usage.cache_creation);
        }
        Api::Openai => {
            let u = json.get_mut("usage").filter(|u| u.is_object())?;
            u["prompt_tokens"] = json!(usage.input + usage.cache_read);
            u["prompt_tokens_details"] = json!({"cached_tokens": usage.cache_read});
        }
        Api::Responses => {
            let u = json
                .pointer_mut("/response/usage")
                .filter(|u| u.is_object())?;
            u["input_tokens"] = json!(usage.input + usage.cache_read);
            u["input_tokens_details"] = json!({"cached_tokens": usage.cache_read});
        }
    }
    Some(format!("{prefix}data: {json}\n\n"))
}

/// The provider's 400 for a history whose tool calls and results do not pair up, in the live
/// APIs' words (see provider-wire `*_observed_400_errors.json`).
fn validate_pairing(body: &Value, api: Api) -> Result<(), MockResponse> {
    let empty = Vec::new();
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let bad = |message: String| match api {
        Api::Anthropic => MockResponse::json(
            400,
            &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
        ),
        Api::Openai => MockResponse::json(
            400,
            &json!({"error": {"message": message, "type": "invalid_request_error",
                "param": "messages", "code": null}}),
        ),
        Api::Responses => MockResponse::json(
            400,
            &json!({"error": {"message": message, "type": "invalid_request_error",
                "param": "input", "code": null}}),
        ),
    };
    match api {
        Api::Responses => {
            // Every function_call needs its function_call_output somewhere in `input` (the API's
            // words for the missing one), and every output a call before it.
            let items = body
                .get("input")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            let mut calls: Vec<&str> = Vec::new();
            for item in items {
                let call_id = item["call_id"].as_str().unwrap_or("");
                match item["type"].as_str() {
                    Some("function_call") => calls.push(call_id),
                    Some("function_call_output") if !calls.contains(&call_id) => {
                        return Err(bad(format!(
                            "No tool call found for function call output with call_id {call_id}."
                        )));
                    }
                    _ => {}
                }
            }
            for call in calls {
                let answered = items.iter().any(|i| {
                    i["type"] == "function_call_output" && i["call_id"].as_str() == Some(call)
                });
                if !answered {
                    return Err(bad(format!(
                        "No tool output found for function call {call}."
                    )));
                }
            }
        }
        Api::Anthropic => {
            let mut expected: Vec<String> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                let blocks = m.get("content").and_then(Value::as_array).unwrap_or(&empty);
                let of_type = |t: &str, key: &str| -> Vec<String> {
                    blocks
                        .iter()
                        .filter(|b| b["type"] == t)
                        .filter_map(|b| b[key].as_str().map(str::to_owned))
                        .collect()
                };
                if m["role"] == "user" {
                    let results = of_type("tool_result", "tool_use_id");
                    if let Some((j, orphan)) = results
                        .iter()
                        .enumerate()
                        .find(|(_, id)| !expected.contains(id))
                    {
                        return Err(bad(format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {orphan}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        )));
                    }
                    let missing: Vec<&String> =
                        expected.iter().filter(|id| !results.contains(id)).collect();
                    if !missing.is_empty() {
                        let ids: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                        return Err(bad(format!(
                            "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                            i.saturating_sub(1),
                            ids.join(", ")
                        )));
                    }
                    expected.clear();
                } else {
                    expected = of_type("tool_use", "id");
                }
            }
        }
        Api::Openai => {
            let mut expected: Vec<String> = Vec::new();
            for m in messages {
                match m["role"].as_str() {
                    Some("tool") => {
                        let id = m["tool_call_id"].as_str().unwrap_or("");
                        if !expected.iter().any(|e| e == id) {
                            return Err(bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into()));
                        }
                        expected.retain(|e| e != id);
                    }
                    _ => {
                        if !expected.is_empty() {
                            return Err(bad(format!(
                                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                                expected.join(", ")
                            )));
                        }
                        expected = m["tool_calls"]
                            .as_array()
                            .unwrap_or(&empty)
                            .iter()
                            .filter_map(|c| c["id"].as_str().map(str::to_owned))
                            .collect();
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::script::{AnthropicTurn, OpenAiTurn};

    fn request(body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: vec![],
            body: body.to_string().into_bytes(),
        }
    }

    fn usage_in(response: &MockResponse) -> String {
        response
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn usage_is_counted_cached_and_written_into_the_stream() {
        let mut sim = Simulation::new(Api::Anthropic, 100_000);
        let body = json!({"max_tokens": 10, "system": [{"type": "text", "text": "s".repeat(4000),
            "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
        let first = sim.judge(&request(body.clone())).unwrap();
        assert_eq!(first.cache_read, 0);
        assert!(first.cache_creation > 1000);
        let second = sim.judge(&request(body)).unwrap();
        assert_eq!(second.cache_read, first.cache_creation);
        let response = sim.with_usage(AnthropicTurn::new().text(&["x"]).finish("end_turn"), second);
        let text = usage_in(&response);
        assert!(
            text.contains(&format!(
                "\"cache_read_input_tokens\":{}",
                second.cache_read
            )),
            "{text}"
        );
        let oa = Simulation::new(Api::Openai, 100_000);
        let response = oa.with_usage(
            OpenAiTurn::new().text(&["x"]).finish("stop"),
            SimUsage {
                input: 7,
                cache_read: 1024,
                cache_creation: 0,
            },
        );
        assert!(usage_in(&response).contains("\"prompt_tokens\":1031"));
    }

    #[test]
    fn broken_pairing_gets_the_providers_error() {
        let mut sim = Simulation::new(Api::Anthropic, 100_000);
        let body = json!({"max_tokens": 10, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
            {"role": "user", "content": [{"type": "text", "text": "no result"}]}]});
        let refusal = sim.judge(&request(body)).unwrap_err();
        assert!(usage_in(&refusal).contains("`tool_use` ids were found without `tool_result`"));
    }
}
