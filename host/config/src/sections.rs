//! `[model]`: which provider and model, and how requests are sent.

use serde::{Deserialize, Serialize};

/// A model provider's wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI(-compatible) Chat Completions, including local servers.
    Openai,
}

impl Provider {
    /// The name used in config and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
        }
    }
}

/// `[model]`, the one shape of the model settings from config.toml to the adapter: the model crate
/// resolves it (filling gaps from the environment) into what an adapter is built from. Every key
/// is optional; layers merge key by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `provider`: `anthropic` or `openai`; inferred from the environment when absent.
    pub provider: Option<Provider>,
    /// `name`: the model id sent to the provider.
    pub name: Option<String>,
    /// `base_url`: for proxies and local OpenAI-compatible servers.
    pub base_url: Option<String>,
    /// `api_key_env`: the variable holding the API key (the key itself never goes in config).
    pub api_key_env: Option<String>,
    /// `max_tokens`: the output budget per request.
    pub max_tokens: Option<u32>,
    /// `context_window`: the model's context size in tokens; overrides the built-in table and
    /// what a local server reports.
    pub context_window: Option<u32>,
    /// `max_retries`: retries of a failed request (default 4).
    pub max_retries: Option<u32>,
    /// `retry_base_delay_ms`: first backoff delay (default 500); doubles per retry.
    pub retry_base_delay_ms: Option<u64>,
    /// `retry_max_delay_ms`: backoff ceiling (default 8000). `retry-after` may ask for up to 60 s.
    pub retry_max_delay_ms: Option<u64>,
    /// `idle_timeout_secs`: a stream silent this long is treated as broken and retried (default 300).
    pub idle_timeout_secs: Option<u64>,
    /// `[model.price]`: US dollars per million tokens (`input`, `output`, `cache_read`,
    /// `cache_write`), over the built-in table — for new models, discounts, local servers.
    pub price: Option<tern_protocol::Price>,
}

impl ModelConfig {
    /// Lays the keys `later` sets over `self`.
    pub fn merge(&mut self, later: ModelConfig) {
        macro_rules! over {
            ($($field:ident),*) => {$(
                if later.$field.is_some() {
                    self.$field = later.$field;
                }
            )*};
        }
        over!(
            provider,
            name,
            base_url,
            api_key_env,
            max_tokens,
            context_window,
            max_retries,
            retry_base_delay_ms,
            retry_max_delay_ms,
            idle_timeout_secs,
            price
        );
    }
}
