//! What tern knows about models it may talk to: context window, output ceiling and price.
//!
//! The table is a starting point, not an oracle: `[model] context_window` and `[model.price]`
//! override it, and an OpenAI-compatible local server that reports its window (vLLM's
//! `max_model_len`, ollama's `context_length`) is believed over the table. Names match by family
//! prefix after any provider prefix (`anthropic/`, `openai/`) and before a date suffix, so
//! `claude-sonnet-4-5-20250929` and `gpt-4o-2024-08-06` find their family.

pub use tern_protocol::Price;

/// What the table says about one model family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Prompt plus output tokens the model accepts in one request.
    pub context_window: u32,
    /// List price, when the model is sold per token (none for open-weight models run locally).
    pub price: Option<Price>,
}

const fn price(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Price {
    Price {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
    }
}

const fn info(context_window: u32, price: Option<Price>) -> ModelInfo {
    ModelInfo {
        context_window,
        price,
    }
}

/// Families, most specific prefix first (the first match wins).
const TABLE: &[(&str, ModelInfo)] = &[
    // Anthropic (cache write = 1.25 × input for the 5-minute cache, read = 0.1 × input).
    (
        "claude-opus-4-5",
        info(200_000, Some(price(5.0, 25.0, 0.5, 6.25))),
    ),
    (
        "claude-opus-4",
        info(200_000, Some(price(15.0, 75.0, 1.5, 18.75))),
    ),
    (
        "claude-sonnet-4",
        info(200_000, Some(price(3.0, 15.0, 0.3, 3.75))),
    ),
    (
        "claude-haiku-4",
        info(200_000, Some(price(1.0, 5.0, 0.1, 1.25))),
    ),
    (
        "claude-3-7-sonnet",
        info(200_000, Some(price(3.0, 15.0, 0.3, 3.75))),
    ),
    (
        "claude-3-5-sonnet",
        info(200_000, Some(price(3.0, 15.0, 0.3, 3.75))),
    ),
    (
        "claude-3-5-haiku",
        info(200_000, Some(price(0.8, 4.0, 0.08, 1.0))),
    ),
    (
        "claude-3-opus",
        info(200_000, Some(price(15.0, 75.0, 1.5, 18.75))),
    ),
    (
        "claude-3-haiku",
        info(200_000, Some(price(0.25, 1.25, 0.03, 0.3))),
    ),
    ("claude", info(200_000, None)),
    // OpenAI (cached input as the provider bills it; no separate cache write).
    (
        "gpt-5-nano",
        info(400_000, Some(price(0.05, 0.4, 0.005, 0.05))),
    ),
    (
        "gpt-5-mini",
        info(400_000, Some(price(0.25, 2.0, 0.025, 0.25))),
    ),
    ("gpt-5", info(400_000, Some(price(1.25, 10.0, 0.125, 1.25)))),
    (
        "gpt-4.1-nano",
        info(1_047_576, Some(price(0.1, 0.4, 0.025, 0.1))),
    ),
    (
        "gpt-4.1-mini",
        info(1_047_576, Some(price(0.4, 1.6, 0.1, 0.4))),
    ),
    ("gpt-4.1", info(1_047_576, Some(price(2.0, 8.0, 0.5, 2.0)))),
    (
        "gpt-4o-mini",
        info(128_000, Some(price(0.15, 0.6, 0.075, 0.15))),
    ),
    ("gpt-4o", info(128_000, Some(price(2.5, 10.0, 1.25, 2.5)))),
    (
        "gpt-4-turbo",
        info(128_000, Some(price(10.0, 30.0, 10.0, 10.0))),
    ),
    ("o4-mini", info(200_000, Some(price(1.1, 4.4, 0.275, 1.1)))),
    ("o3-mini", info(200_000, Some(price(1.1, 4.4, 0.55, 1.1)))),
    ("o3", info(200_000, Some(price(2.0, 8.0, 0.5, 2.0)))),
    ("o1-mini", info(128_000, Some(price(1.1, 4.4, 0.55, 1.1)))),
    ("o1", info(200_000, Some(price(15.0, 60.0, 7.5, 15.0)))),
    // DeepSeek's API.
    (
        "deepseek-reasoner",
        info(65_536, Some(price(0.55, 2.19, 0.14, 0.55))),
    ),
    (
        "deepseek-chat",
        info(65_536, Some(price(0.27, 1.1, 0.07, 0.27))),
    ),
    // Open-weight families, usually served locally (ollama, vLLM, llama.cpp): the window is
    // the model's native one; the server may be configured smaller, and says so when asked.
    ("deepseek", info(65_536, None)),
    ("qwen3", info(40_960, None)),
    ("qwen2.5", info(32_768, None)),
    ("qwen", info(32_768, None)),
    ("llama3.1", info(131_072, None)),
    ("llama3.2", info(131_072, None)),
    ("llama3.3", info(131_072, None)),
    ("llama-3", info(131_072, None)),
    ("llama4", info(1_048_576, None)),
    ("llama", info(8_192, None)),
    ("mistral-large", info(131_072, None)),
    ("mistral-small", info(32_768, None)),
    ("mistral-nemo", info(131_072, None)),
    ("codestral", info(262_144, None)),
    ("devstral", info(131_072, None)),
    ("mistral", info(32_768, None)),
    ("mixtral", info(32_768, None)),
    ("gemma3", info(131_072, None)),
    ("phi4", info(16_384, None)),
];

/// The table's entry for `model`, if its family is known.
pub fn lookup(model: &str) -> Option<ModelInfo> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    // ollama spells versions with a colon tag (`qwen2.5-coder:7b`): the family is before it.
    let name = name.split(':').next().unwrap_or(&name);
    TABLE
        .iter()
        .find(|(prefix, _)| {
            let Some(rest) = name.strip_prefix(prefix) else {
                return false;
            };
            // A prefix ends where its last token ends: `o1` must not match `o10-…`, nor
            // `gpt-5` match `gpt-50`.
            let last = prefix.chars().last().unwrap_or('-');
            rest.chars().next().is_none_or(|c| {
                !(c.is_ascii_digit() && last.is_ascii_digit()
                    || c.is_ascii_alphabetic() && last.is_ascii_alphabetic())
            })
        })
        .map(|(_, info)| *info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_protocol::Usage;

    #[test]
    fn families_match_dated_prefixed_and_tagged_names() {
        let window = |m: &str| lookup(m).map(|i| i.context_window);
        assert_eq!(window("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(window("anthropic/claude-opus-4-1"), Some(200_000));
        assert_eq!(window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(window("gpt-4o-mini"), Some(128_000));
        assert_eq!(window("gpt-4.1"), Some(1_047_576));
        assert_eq!(window("gpt-5-mini"), Some(400_000));
        assert_eq!(window("o3"), Some(200_000));
        assert_eq!(window("o4-mini-2025-04-16"), Some(200_000));
        assert_eq!(window("qwen2.5-coder:7b"), Some(32_768));
        assert_eq!(window("llama3.1:8b"), Some(131_072));
        assert_eq!(window("mistral-large-latest"), Some(131_072));
        assert_eq!(window("deepseek-chat"), Some(65_536));
        assert_eq!(window("o10-preview"), None, "o1 must not match o10");
        assert_eq!(window("gpt-50"), None, "gpt-5 must not match gpt-50");
        assert_eq!(window("my-finetune"), None);
        // The more specific family wins.
        assert_eq!(
            lookup("gpt-4o-mini").unwrap().price.unwrap().input,
            0.15,
            "gpt-4o-mini is not priced as gpt-4o"
        );
    }

    #[test]
    fn cost_counts_each_kind_of_token_at_its_price() {
        let price = lookup("claude-sonnet-4-5").unwrap().price.unwrap();
        let usage = Usage {
            input: 1_000_000,
            output: 100_000,
            cache_read: 2_000_000,
            cache_creation: 400_000,
        };
        // 3.00 + 1.50 + 0.60 + 1.50
        assert!(
            (price.cost(&usage) - 6.6).abs() < 1e-9,
            "{}",
            price.cost(&usage)
        );
        let bare = Price {
            input: 1.0,
            output: 2.0,
            cache_read: None,
            cache_write: None,
        };
        assert!((bare.cost(&usage) - (1.0 + 0.2 + 2.0 + 0.4)).abs() < 1e-9);
    }
}
