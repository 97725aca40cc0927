//! Provider-neutral conversation and event types: the only model vocabulary the agent loop sees.
//!
//! The shapes make the rules the providers enforce hard to break: tool results can only live in a
//! user message and tool calls only in an assistant message, so "a tool_result in the wrong turn"
//! cannot be written down at all. The adapters take care of the rest (ordering, pairing, empty
//! text) when they serialise a request.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
pub use tern_protocol::{Image, ToolCall, ToolResult, Usage};

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user (or the loop, on the user's behalf) said: text and the results of the tool
    /// calls the previous assistant turn made.
    User {
        /// Blocks in order; the adapters move tool results ahead of text as the providers require.
        content: Vec<UserContent>,
    },
    /// What the model said: text and tool calls.
    Assistant {
        /// Blocks in the order the model produced them.
        content: Vec<AssistantContent>,
    },
}

impl Message {
    /// A user turn holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::User {
            content: vec![UserContent::Text { text: text.into() }],
        }
    }

    /// An assistant turn holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message::Assistant {
            content: vec![AssistantContent::Text { text: text.into() }],
        }
    }
}

/// A block of a user turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserContent {
    /// Plain text. Empty (or whitespace-only) text is dropped when sent: providers reject it.
    Text {
        /// The text.
        text: String,
    },
    /// The outcome of one tool call from the preceding assistant turn.
    ToolResult(ToolResult),
    /// An image the person attached to their message (`--image`, `@pic.png`, a pasted path, an
    /// editor's image block). Sent as the provider's image block where the model takes images
    /// (the adapters); counted as a fixed number of tokens, never as its base64 text.
    Image(Image),
}

/// A block of an assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantContent {
    /// Plain text. Empty text the model returned is dropped when echoed back.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call the model made.
    ToolCall(ToolCall),
    /// Reasoning the model did, in the provider's own opaque form; sent back unchanged where the
    /// API takes it, dropped where it does not.
    Reasoning(Reasoning),
}

/// A reasoning item (OpenAI Responses `{"type": "reasoning", "encrypted_content": …}`). With
/// `store: false` the provider keeps nothing between requests, so the chain of thought of a turn
/// that called tools survives only if the client sends this item back before the calls it led to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The provider's item id (`rs_…`), for logs; not sent back (a stateless request cannot
    /// refer to a stored item).
    pub id: String,
    /// The readable summary, when the provider gave one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// The opaque state to send back (`include: ["reasoning.encrypted_content"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name, `^[a-zA-Z0-9_-]{1,128}$` for Anthropic.
    pub name: String,
    /// What the tool does; the model reads this to decide when to call it.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Specific(String),
}

/// One request to the model: everything a provider needs to produce the next assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// System prompt blocks, in order. Keep stable parts first: the prompt cache matches prefixes.
    pub system: Vec<String>,
    /// The conversation so far; the last message is normally a user turn.
    pub messages: Vec<Message>,
    /// The tool table. Changing it invalidates the whole prompt cache.
    pub tools: Vec<ToolSpec>,
    /// Output budget for this turn.
    pub max_tokens: u32,
    /// Tool use policy.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Ask the provider to cache the prompt prefix (Anthropic breakpoints; OpenAI caches on its
    /// own). Defaults to on: agent turns resend a growing prefix.
    #[serde(default = "default_cache")]
    pub cache: bool,
}

fn default_cache() -> bool {
    true
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants the tool calls of this turn run.
    ToolUse,
    /// The output budget ran out; any tool call cut by it came as [`ModelEvent::ToolCallIncomplete`].
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// Anything else the provider said (`pause_turn`, `refusal`, `content_filter`, ...), verbatim.
    Other(String),
}

/// What an adapter's stream yields, in order.
///
/// A successful turn ends with [`ModelEvent::Completed`]; a failed one with an `Err(ModelError)`
/// item. Nothing follows either. Run tool calls only after `Completed`: a turn can still be
/// retried (see [`ModelEvent::Retry`]) or fail before it.
///
/// [`ModelError`]: crate::ModelError
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ModelEvent {
    /// Text to append to the assistant turn, delivered as soon as its SSE event is parsed.
    TextDelta(String),
    /// A piece of the model's visible thinking (Anthropic `thinking_delta`, a Responses reasoning
    /// summary delta, a Chat Completions `reasoning_content` delta). Shown to the user, never
    /// part of the assistant turn: the providers either do not take it back or take it only in
    /// their own signed form ([`ModelEvent::Reasoning`]).
    ThinkingDelta(String),
    /// The model began a tool call; arguments follow in `ToolCallComplete`.
    ToolCallStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A tool call whose arguments arrived whole and parsed to a JSON object: executable.
    ToolCallComplete {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments (a JSON object; `{}` when the model sent none).
        arguments: Value,
    },
    /// A tool call that must not be executed: cut by `max_tokens`, never closed, or its arguments
    /// are not a JSON object. The loop should tell the model why instead of running it.
    ToolCallIncomplete {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Human-readable cause, suitable for an `is_error` tool result.
        reason: String,
    },
    /// A finished reasoning item: keep it in the assistant turn, before the turn's tool calls.
    Reasoning(Reasoning),
    /// Token usage of the turn; sent once, just before `Completed`, when the provider reported it.
    Usage(Usage),
    /// The request is being retried after `delay`.
    Retry {
        /// 1 for the first retry.
        attempt: u32,
        /// Why (the error that caused it).
        reason: String,
        /// How long the adapter waits before the next attempt.
        #[serde(with = "duration_ms")]
        delay: Duration,
        /// True when events of this turn were already delivered: throw away everything received
        /// since the turn began (text, tool calls); the retry starts the turn from scratch.
        discard_partial: bool,
    },
    /// The turn finished; always the last event of a successful stream.
    Completed {
        /// Why the model stopped.
        stop_reason: StopReason,
        /// The provider's request id (`request-id` / `x-request-id`), for support tickets.
        request_id: Option<String>,
    },
}

/// Durations serialise as whole milliseconds so event logs stay readable.
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
