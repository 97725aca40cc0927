//! `[model]`: which provider and model, and how requests are sent.

use serde::{Deserialize, Serialize};

/// A model provider's wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI(-compatible) Chat Completions or Responses, including local servers.
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

    /// The provider named `name` (`anthropic`, `openai`), as written in config, events and
    /// recordings; `None` for anything else, so an unknown name is a decision for the caller
    /// and never silently one of the two.
    pub fn parse(name: &str) -> Option<Provider> {
        match name {
            "anthropic" => Some(Provider::Anthropic),
            "openai" => Some(Provider::Openai),
            _ => None,
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `wire_api`: which of OpenAI's two APIs an `openai` provider speaks (the key and values are
/// Codex's, so a `model_providers` entry can be copied over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApi {
    /// `POST {base}/chat/completions`: every OpenAI-compatible server speaks it.
    Chat,
    /// `POST {base}/responses`: OpenAI's newer API (reasoning items carried across turns).
    Responses,
}

/// `tool_calls`: how the model makes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallMode {
    /// The API's own tool calls (a turn whose whole text is a JSON call naming an offered tool is
    /// still taken as a call: small local models write them as text).
    Native,
    /// The model is told to write calls as a JSON object in its text; tern parses them.
    Text,
}

/// `server`: the kind of OpenAI-compatible server behind `base_url`, when its URL does not say
/// (it decides which settings endpoint is asked for the context window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelServer {
    /// api.openai.com or a proxy for it: nothing to ask.
    Openai,
    /// ollama (`POST /api/show`).
    Ollama,
    /// llama.cpp's `llama-server` (`GET /props`).
    Llamacpp,
    /// vLLM (`GET /v1/models`, `max_model_len`).
    Vllm,
    /// LM Studio (`GET /v1/models`).
    Lmstudio,
    /// Hugging Face text-generation-inference (`GET /info`).
    Tgi,
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
    /// `wire_api`: `chat` or `responses` for an `openai` provider (default `chat`, except the
    /// models api.openai.com serves only through Responses).
    pub wire_api: Option<WireApi>,
    /// `server`: `ollama`, `llamacpp`, `vllm`, `lmstudio`, `tgi` or `openai`; guessed from the
    /// base URL's port when absent (11434 ollama, 8080 llama.cpp, 8000 vLLM, 1234 LM Studio).
    pub server: Option<ModelServer>,
    /// `max_tokens`: the output budget per request.
    pub max_tokens: Option<u32>,
    /// `context_window`: the model's context size in tokens; overrides the built-in table and
    /// what a local server reports.
    pub context_window: Option<u32>,
    /// `temperature`: sampling temperature (0–2); the provider's default when absent.
    pub temperature: Option<f64>,
    /// `top_p`: nucleus sampling (0–1]; the provider's default when absent.
    pub top_p: Option<f64>,
    /// `seed`: a fixed sampling seed, for reproducible runs on servers that honour it.
    pub seed: Option<u64>,
    /// `tool_calls`: `native` (default) or `text` for models without native tool calling.
    pub tool_calls: Option<ToolCallMode>,
    /// `vision`: whether the model takes images (`false` refuses an attached image before
    /// anything is sent); tern's catalog decides when absent, and sends them when it does not
    /// know the model.
    pub vision: Option<bool>,
    /// `max_retries`: retries of a failed request (default 4).
    pub max_retries: Option<u32>,
    /// `retry_base_delay_ms`: first backoff delay (default 500); doubles per retry.
    pub retry_base_delay_ms: Option<u64>,
    /// `retry_max_delay_ms`: backoff ceiling (default 8000). `retry-after` may ask for up to 60 s.
    pub retry_max_delay_ms: Option<u64>,
    /// `stream_idle_timeout_sec` (also read as the older `idle_timeout_secs`): a stream that sends
    /// nothing for this long is treated as broken and retried (default 300).
    #[serde(alias = "idle_timeout_secs")]
    pub stream_idle_timeout_sec: Option<u64>,
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
            wire_api,
            server,
            max_tokens,
            context_window,
            temperature,
            top_p,
            seed,
            tool_calls,
            vision,
            max_retries,
            retry_base_delay_ms,
            retry_max_delay_ms,
            stream_idle_timeout_sec,
            price
        );
    }
}
