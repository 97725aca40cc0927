//! Whether a model takes images, and how large: decided before a request is built, so an image
//! a model cannot take is refused with a hint instead of costing a round trip and a 400.
//!
//! The answer comes from, in order: `[model] vision = true|false` (the person knows their
//! model), then the families below that are known to take images or known to be text-only,
//! else "unknown" — the image is sent and the server judges (a local model behind an
//! OpenAI-compatible server may well take it).
//!
//! Per-image size limits, each from the provider's own documentation:
//! * Anthropic Messages: "5 MB per image" for the API (vision guide, "Image size limits",
//!   https://platform.claude.com/docs/en/build-with-claude/vision). The API measures the
//!   base64 text (Claude Code's `constants/apiLimits.ts` sets `API_IMAGE_MAX_BASE64_SIZE` to
//!   5 MiB and notes that it is the base64 length, not raw bytes), so a file may have at most
//!   3.75 MiB.
//! * OpenAI (Chat Completions and Responses): "Up to 20MB per image", "up to 50 MB image bytes
//!   per request" ("Images and vision" guide, image input requirements,
//!   https://developers.openai.com/api/docs/guides/images-vision). Compatible local servers
//!   document no limit of their own; OpenAI's is used for them too.

use tern_config::{Provider, WireApi};

/// Whether the model takes images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takes {
    /// It does (configured, or a family known to).
    Yes,
    /// It does not; `why` says who said so, for the refusal.
    No {
        /// `[model] vision = false`, or the family the model belongs to.
        why: String,
    },
    /// Nothing says: images are sent and the provider decides.
    Unknown,
}

/// What a model does with images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSupport {
    /// Whether it takes them at all.
    pub takes: Takes,
    /// Largest image file, in bytes (before base64).
    pub max_image_bytes: usize,
    /// Where [`Self::max_image_bytes`] comes from, for the message that refuses a larger one.
    pub limit_source: &'static str,
}

/// Anthropic's per-image limit on the base64 text (5 MiB), in characters.
pub const ANTHROPIC_MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// OpenAI's per-image limit (20 MB), in bytes.
pub const OPENAI_MAX_IMAGE_BYTES: usize = 20 * 1000 * 1000;

/// The image support of `model` on `provider`; `configured` is `[model] vision`.
pub fn image_support(
    provider: Provider,
    wire_api: WireApi,
    model: &str,
    configured: Option<bool>,
) -> ImageSupport {
    let takes = match configured {
        Some(true) => Takes::Yes,
        Some(false) => Takes::No {
            why: "`[model] vision = false` in the config".into(),
        },
        None => known(model),
    };
    let (max_image_bytes, limit_source) = match (provider, wire_api) {
        (Provider::Anthropic, _) => (
            ANTHROPIC_MAX_IMAGE_BASE64 / 4 * 3,
            "Anthropic's API takes at most 5 MB of base64 per image",
        ),
        (Provider::Openai, WireApi::Chat | WireApi::Responses) => (
            OPENAI_MAX_IMAGE_BYTES,
            "OpenAI's API takes at most 20 MB per image",
        ),
    };
    ImageSupport {
        takes,
        max_image_bytes,
        limit_source,
    }
}

/// Families, most specific prefix first (the first match wins): `true` takes images, `false`
/// is known to be text-only (a model here refuses images before anything is sent).
const FAMILIES: &[(&str, bool)] = &[
    ("claude-2", false),
    ("claude-instant", false),
    ("claude", true),
    ("o1-mini", false),
    ("o1-preview", false),
    ("o1", true),
    ("o3-mini", false),
    ("o3", true),
    ("o4", true),
    ("gpt-3.5", false),
    ("gpt-4o", true),
    ("gpt-4.1", true),
    ("gpt-4.5", true),
    ("gpt-4-turbo", true),
    ("gpt-4", false),
    ("gpt-5", true),
    ("chatgpt-4o", true),
    ("gemini", true),
    ("gemma3", true),
    ("llama4", true),
    ("mistral-small3.1", true),
    ("mistral-small3.2", true),
    ("mistral-medium", true),
    ("minicpm-v", true),
    ("moondream", true),
    ("deepseek", false),
    ("qwq", false),
    ("qwen", false),
    ("llama3", false),
    ("llama-3", false),
    ("llama2", false),
    ("codellama", false),
    ("codestral", false),
    ("devstral", false),
    ("mixtral", false),
    ("mistral-nemo", false),
    ("mistral-large", false),
    ("phi3", false),
    ("phi4", false),
    ("starcoder", false),
];

/// What the catalog knows about `model`'s eyes. Names with `vision`, `-vl`, `llava` or
/// `pixtral` in them are vision variants of text families (`llama3.2-vision`, `qwen2.5-vl`,
/// `qwen2.5vl`) and are checked first.
fn known(model: &str) -> Takes {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    // ollama spells sizes with a colon tag (`qwen2.5vl:7b`): the family is before it.
    let name = name.split(':').next().unwrap_or(&name).to_string();
    let vision_variant = ["vision", "-vl", "vl-", "llava", "pixtral", "omni"]
        .iter()
        .any(|m| name.contains(m))
        || name.ends_with("vl");
    if vision_variant {
        return Takes::Yes;
    }
    match FAMILIES.iter().find(|(p, _)| name.starts_with(p)) {
        Some((_, true)) => Takes::Yes,
        Some((family, false)) => Takes::No {
            why: format!("`{model}` is a text-only model (tern's catalog: the {family} family)"),
        },
        None => Takes::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn takes(model: &str) -> Takes {
        image_support(Provider::Openai, WireApi::Chat, model, None).takes
    }

    #[test]
    fn families_decide_and_config_wins() {
        for m in [
            "claude-sonnet-4-5",
            "claude-3-5-haiku-20241022",
            "gpt-4o-mini",
            "gpt-5",
            "o1",
            "o4-mini",
            "llama3.2-vision:11b",
            "qwen2.5vl:7b",
            "Qwen/Qwen2.5-VL-7B-Instruct",
            "gemma3:27b",
            "llava:13b",
        ] {
            assert_eq!(takes(m), Takes::Yes, "{m}");
        }
        for m in [
            "deepseek-chat",
            "o3-mini",
            "o1-mini",
            "gpt-4-0613",
            "gpt-3.5-turbo",
            "qwen2.5-coder:7b",
            "llama3.1:8b",
            "devstral",
        ] {
            assert!(matches!(takes(m), Takes::No { .. }), "{m}");
        }
        assert_eq!(takes("local-model"), Takes::Unknown);
        // `[model] vision` wins both ways.
        let s = image_support(
            Provider::Anthropic,
            WireApi::Chat,
            "claude-sonnet-4-5",
            Some(false),
        );
        assert!(matches!(s.takes, Takes::No { why } if why.contains("vision = false")));
        let s = image_support(Provider::Openai, WireApi::Chat, "deepseek-chat", Some(true));
        assert_eq!(s.takes, Takes::Yes);
    }

    #[test]
    fn limits_follow_the_provider() {
        let a = image_support(
            Provider::Anthropic,
            WireApi::Chat,
            "claude-sonnet-4-5",
            None,
        );
        // 3.75 MiB of file is exactly 5 MiB of base64.
        assert_eq!(a.max_image_bytes, 3_932_160);
        assert_eq!(
            tern_protocol::image::encoded_len(a.max_image_bytes),
            ANTHROPIC_MAX_IMAGE_BASE64
        );
        let o = image_support(Provider::Openai, WireApi::Responses, "gpt-5", None);
        assert_eq!(o.max_image_bytes, 20_000_000);
    }
}
