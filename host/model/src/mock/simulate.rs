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
        }
    }

    /// The overflow error for `request`, when it does not fit; else its usage.
    pub fn judge(&mut self, request: &RecordedRequest) -> Result<SimUsage, MockResponse> {
        let body = request.json();
        let units = units(&body, self.api);
        let prompt: u64 = units.iter().map(|u| u.tokens).sum();
        let max_tokens = body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
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
                Api::Openai => so_far >= 1024,
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
            Api::Openai => 0,
        };
        // OpenAI serves cache hits in 128-token blocks.
        if self.api == Api::Openai {
            read -= read % 128;
        }
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
            let u = json.pointer_mut("/message/usage")?;
            u["input_tokens"] = json!(usage.input);
            u["cache_read_input_tokens"] = json!(usage.cache_read);
            u["cache_creation_input_tokens"] = json!(usage.cache_creation);
        }
        Api::Openai => {
            let u = json.get_mut("usage").filter(|u| u.is_object())?;
            u["prompt_tokens"] = json!(usage.input + usage.cache_read);
            u["prompt_tokens_details"] = json!({"cached_tokens": usage.cache_read});
        }
    }
    Some(format!("{prefix}data: {json}\n\n"))
}
