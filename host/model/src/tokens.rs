//! Counting tokens before a request is sent, so the context window is a budget and not a wall.
//!
//! A vocabulary is decompressed and built (tens of milliseconds of CPU) on its first count, not
//! when the tokenizer is chosen: choosing is free, so nothing on the start path pays for it, and
//! [`Tokenizer::load`] lets the engine build it on a spare thread while the servers start. Until
//! it is built, [`Tokenizer::is_ready`] says so and a caller that must not wait (the context
//! budget before the first request) counts with [`Tokenizer::Estimate`] and checks its decision
//! against [`Tokenizer::Bound`], which no byte-level vocabulary's count exceeds.
//!
//! Where a model's tokenizer is public (OpenAI's o200k/cl100k, Llama 3, Qwen 2, Mistral,
//! DeepSeek), tern counts with the real vocabulary; Claude's is not public, so it is estimated
//! from the text's length. Either way the count of a whole request is off by the provider's
//! framing (roles, tool-schema rendering), which is why the context budget calibrates these
//! counts against the usage the provider reports.

use std::sync::atomic::{AtomicBool, Ordering};

use tiktoken::CoreBpe;

use crate::{
    config::Provider,
    types::{AssistantContent, Message, ModelRequest, ToolSpec, UserContent},
};

/// Tokens per image when the real size is unknown (Anthropic: about 1 600 for a 1 092 px
/// square; OpenAI's high-detail tiles land in the same range).
pub const IMAGE_TOKENS: u64 = 1_600;
/// The encodings `tiktoken::get_encoding` builds (the names `model_to_encoding` and the
/// family table above can produce).
const KNOWN_ENCODINGS: &[&str] = &[
    "o200k_base",
    "o200k_harmony",
    "cl100k_base",
    "p50k_base",
    "p50k_edit",
    "r50k_base",
    "gpt2",
    "llama3",
    "qwen2",
    "mistral_v3",
    "deepseek_v3",
    "deepseek_v4",
    "kimi_k2",
    "kimi_k3",
    "glm4",
    "glm5",
    "minimax_m2",
];

/// Which of [`KNOWN_ENCODINGS`] have been built (set once `get_encoding` returned).
static BUILT: [AtomicBool; KNOWN_ENCODINGS.len()] =
    [const { AtomicBool::new(false) }; KNOWN_ENCODINGS.len()];

/// Framing tokens per message (role markers, separators).
const MESSAGE_OVERHEAD: u64 = 4;
/// Characters per token for text no vocabulary is known for. Code and English average about
/// 3.5–4 per token; the lower figure errs towards compacting early.
const CHARS_PER_TOKEN: f64 = 3.5;

/// How tokens are counted for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// The model family's real BPE vocabulary, by its tiktoken name; built on first use.
    Bpe(&'static str),
    /// Characters divided by [`CHARS_PER_TOKEN`].
    Estimate,
    /// One token per byte of UTF-8: an upper bound of every vocabulary here (they are all
    /// byte-level BPE, whose every token stands for at least one byte), with the same framing.
    /// A decision that holds under this bound holds under the real count too.
    Bound,
}

impl Tokenizer {
    /// The best tokenizer for `model` on `provider`: a real one when the family's vocabulary
    /// is known, else the estimate.
    pub fn for_model(provider: Provider, model: &str) -> Self {
        if provider == Provider::Anthropic {
            return Tokenizer::Estimate;
        }
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let family = name.split(':').next().unwrap_or(&name);
        let encoding = tiktoken::model_to_encoding(family).or_else(|| {
            // Local model names (ollama tags, Hugging Face ids) by family.
            [
                ("llama3", "llama3"),
                ("llama-3", "llama3"),
                ("qwen", "qwen2"),
                ("mistral", "mistral_v3"),
                ("codestral", "mistral_v3"),
                ("devstral", "mistral_v3"),
                ("deepseek", "deepseek_v3"),
            ]
            .iter()
            .find(|(prefix, _)| family.starts_with(prefix))
            .map(|(_, enc)| *enc)
        });
        // Only a name is kept: `get_encoding` would build the vocabulary right here.
        encoding
            .filter(|name| KNOWN_ENCODINGS.contains(name))
            .map_or(Tokenizer::Estimate, Tokenizer::Bpe)
    }

    /// Builds the vocabulary now (idempotent; for a background thread).
    pub fn load(&self) {
        let _ = self.vocabulary();
    }

    /// Whether counting needs no vocabulary build any more: the vocabulary is built (by
    /// [`Self::load`] or an earlier count), or the tokenizer has none.
    pub fn is_ready(&self) -> bool {
        match self {
            Tokenizer::Bpe(name) => built(name).is_some_and(|b| b.load(Ordering::Acquire)),
            Tokenizer::Estimate | Tokenizer::Bound => true,
        }
    }

    fn vocabulary(&self) -> Option<&'static CoreBpe> {
        match self {
            Tokenizer::Bpe(name) => {
                let bpe = tiktoken::get_encoding(name);
                if let Some(flag) = built(name).filter(|_| bpe.is_some()) {
                    flag.store(true, Ordering::Release);
                }
                bpe
            }
            Tokenizer::Estimate | Tokenizer::Bound => None,
        }
    }

    /// Whether counts come from the model's own vocabulary.
    pub fn is_exact(&self) -> bool {
        matches!(self, Tokenizer::Bpe(_))
    }

    /// Tokens in `text`.
    pub fn count(&self, text: &str) -> u64 {
        match (self, self.vocabulary()) {
            (_, Some(bpe)) => bpe.count(text) as u64,
            (Tokenizer::Bound, None) => text.len() as u64,
            (_, None) => (text.chars().count() as f64 / CHARS_PER_TOKEN).ceil() as u64,
        }
    }

    /// Tokens of one message as the model reads it.
    pub fn message(&self, message: &Message) -> u64 {
        let body: u64 = match message {
            Message::User { content } => content
                .iter()
                .map(|c| match c {
                    UserContent::Text { text } => self.count(text),
                    // An image costs what the provider makes of its pixels, not its base64.
                    UserContent::Image(_) => IMAGE_TOKENS,
                    UserContent::ToolResult(r) => {
                        self.count(&r.call_id)
                            + self.count(&r.content)
                            + IMAGE_TOKENS * r.images.len() as u64
                            + MESSAGE_OVERHEAD
                    }
                })
                .sum(),
            Message::Assistant { content } => content
                .iter()
                .map(|c| match c {
                    AssistantContent::Text { text } => self.count(text),
                    AssistantContent::Reasoning(r) => {
                        // Opaque state: the provider bills the reasoning tokens it stands for,
                        // roughly a quarter of the ciphertext's length.
                        r.summary.iter().map(|s| self.count(s)).sum::<u64>()
                            + r.encrypted_content
                                .as_ref()
                                .map_or(0, |e| e.len() as u64 / 4)
                    }
                    AssistantContent::ToolCall(call) => {
                        self.count(&call.id)
                            + self.count(&call.name)
                            + self.count(&call.arguments.to_string())
                            + MESSAGE_OVERHEAD
                    }
                })
                .sum(),
        };
        body + MESSAGE_OVERHEAD
    }

    /// Tokens of one tool definition.
    pub fn tool(&self, tool: &ToolSpec) -> u64 {
        self.count(&tool.name)
            + self.count(&tool.description)
            + self.count(&tool.input_schema.to_string())
            + MESSAGE_OVERHEAD
    }

    /// Tokens of the system prompt.
    pub fn system(&self, system: &[String]) -> u64 {
        system.iter().map(|s| self.count(s)).sum::<u64>() + MESSAGE_OVERHEAD
    }

    /// Tokens of a whole request, uncalibrated.
    pub fn request(&self, request: &ModelRequest) -> u64 {
        self.system(&request.system)
            + request.tools.iter().map(|t| self.tool(t)).sum::<u64>()
            + request
                .messages
                .iter()
                .map(|m| self.message(m))
                .sum::<u64>()
    }
}

/// The readiness flag of encoding `name`.
fn built(name: &str) -> Option<&'static AtomicBool> {
    KNOWN_ENCODINGS
        .iter()
        .position(|known| *known == name)
        .and_then(|i| BUILT.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_vocabularies_where_public_estimates_elsewhere() {
        let gpt = Tokenizer::for_model(Provider::Openai, "gpt-4o-2024-08-06");
        assert!(gpt.is_exact());
        // "hello world" is two tokens in o200k_base.
        assert_eq!(gpt.count("hello world"), 2);
        assert!(Tokenizer::for_model(Provider::Openai, "qwen2.5-coder:7b").is_exact());
        assert!(Tokenizer::for_model(Provider::Openai, "llama3.1:8b").is_exact());
        assert!(!Tokenizer::for_model(Provider::Anthropic, "claude-sonnet-4-5").is_exact());
        assert!(!Tokenizer::for_model(Provider::Openai, "my-finetune").is_exact());
        assert_eq!(Tokenizer::Estimate.count(&"x".repeat(35)), 10);
    }

    #[test]
    fn a_vocabulary_is_ready_once_built_and_the_bound_is_never_below_it() {
        // cl100k is built by no other test in this crate, so it starts unbuilt.
        let t = Tokenizer::for_model(Provider::Openai, "gpt-4-turbo");
        assert_eq!(t, Tokenizer::Bpe("cl100k_base"));
        assert!(!t.is_ready(), "choosing a tokenizer builds nothing");
        t.load();
        assert!(t.is_ready());
        assert!(Tokenizer::Estimate.is_ready() && Tokenizer::Bound.is_ready());
        for text in [
            "hello world",
            "fn main() { println!(\"{}\", 1 + 2); }",
            "日本語のテキストと emoji 🎉🎉",
            "\u{0}\u{7f}",
            &"zz".repeat(500),
        ] {
            assert!(
                Tokenizer::Bound.count(text) >= t.count(text),
                "the bound is below the count of {text:?}"
            );
        }
    }

    #[test]
    fn a_request_counts_system_tools_and_messages() {
        let t = Tokenizer::Estimate;
        let req = ModelRequest {
            system: vec!["s".repeat(70)],
            messages: vec![Message::user_text("u".repeat(35))],
            tools: vec![ToolSpec {
                name: "fs__read".into(),
                description: "d".repeat(35),
                input_schema: serde_json::json!({}),
            }],
            max_tokens: 100,
            tool_choice: Default::default(),
            cache: true,
        };
        let total = t.request(&req);
        assert_eq!(total, (20 + 4) + (3 + 10 + 1 + 4) + (10 + 4));
    }
}
