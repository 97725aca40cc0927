//! `[model]` configuration, provider selection and API keys.
//!
//! Precedence, most specific first:
//! * provider: `provider` in config (or `--provider`, which the CLI writes into it) → Anthropic when
//!   `ANTHROPIC_API_KEY` is set → OpenAI when `OPENAI_API_KEY` is set → OpenAI without a key when
//!   `OPENAI_BASE_URL` is set (a local server) → error naming all three.
//! * base URL: `base_url` in config → `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` → the provider's
//!   public endpoint. Config wins because a project that points at a local server on purpose must
//!   not be redirected by a variable left in someone's shell.
//! * key: the variable named by `api_key_env`, else `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`.

use std::time::Duration;

pub use tern_config::{ModelConfig, ModelServer, Provider, ToolCallMode, WireApi};

use crate::retry::RetryPolicy;

/// Environment variable holding the Anthropic key.
pub const ANTHROPIC_API_KEY: &str = "ANTHROPIC_API_KEY";
/// Environment variable overriding the Anthropic endpoint.
pub const ANTHROPIC_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// Environment variable holding the OpenAI key.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// Environment variable overriding the OpenAI-compatible endpoint (ollama, vLLM, llama.cpp, ...).
pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";

/// Anthropic's public endpoint (the adapter appends `/v1/messages`).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// OpenAI's public endpoint (the adapter appends `/chat/completions`).
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model used when Anthropic is selected and no `name` is configured.
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// Model used when OpenAI is selected and no `name` is configured.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o";

/// Why a configuration cannot produce an adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Nothing says which provider to use.
    #[error(
        "no model provider configured: set {ANTHROPIC_API_KEY} (Anthropic) or {OPENAI_API_KEY} \
         (OpenAI), or point {OPENAI_BASE_URL} at a local OpenAI-compatible server such as ollama \
         (http://localhost:11434/v1), vLLM (http://localhost:8000/v1) or llama.cpp's llama-server \
         (http://localhost:8080/v1); or set `provider` under [model] in the config"
    )]
    NoProvider,
    /// The selected provider needs a key and its variable is unset or empty.
    #[error("{provider} needs an API key: set {var} (or name another variable in `api_key_env`)")]
    MissingKey {
        /// Provider name.
        provider: &'static str,
        /// The variable that was read.
        var: String,
    },
    /// The base URL does not parse.
    #[error("invalid model base_url {url:?}: {reason}")]
    BadBaseUrl {
        /// The URL as given.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A value is out of range.
    #[error("invalid [model] setting `{field}`: {reason}")]
    Invalid {
        /// The config key.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The HTTP client could not be built (TLS setup).
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

/// An API key. `Debug` prints `ApiKey(<redacted>)` and there is no `Display`, so a key cannot end
/// up in a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The secret, for building the auth header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// A configuration with every gap filled and checked: what an adapter is built from.
#[derive(Debug, Clone)]
pub struct ResolvedModelConfig {
    /// Provider.
    pub provider: Provider,
    /// Model name.
    pub model: String,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// Key; `None` only for an OpenAI-compatible server that needs none.
    pub api_key: Option<ApiKey>,
    /// The variable the key was read from (`api_key_env`, else the provider's own); `None` when
    /// the caller gave the adapter (a replay), for [`Self::auth_hint`].
    pub api_key_var: Option<String>,
    /// Output budget used when a request asks for 0.
    pub max_tokens: u32,
    /// Context window, if configured.
    pub context_window: Option<u32>,
    /// Retry behaviour.
    pub retry: RetryPolicy,
    /// See [`ModelConfig::stream_idle_timeout_sec`].
    pub idle_timeout: Duration,
    /// Chat Completions or Responses (OpenAI only; Anthropic ignores it).
    pub wire_api: WireApi,
    /// The kind of server behind `base_url`, when known (decides the window probe).
    pub server: Option<ModelServer>,
    /// Sampling settings sent with every request.
    pub sampling: Sampling,
    /// How the model makes tool calls.
    pub tool_calls: ToolCallMode,
    /// `[model] vision`, when set (see [`crate::vision`]).
    pub vision: Option<bool>,
}

impl ResolvedModelConfig {
    /// The `hint:` line for a refused key (401/403): which variable the key came from and which
    /// endpoint it went to — the two things to check, since a key for one endpoint (a proxy, a
    /// local server, the provider itself) is refused by another. `None` for a given adapter.
    pub fn auth_hint(&self) -> Option<String> {
        let var = self.api_key_var.as_deref()?;
        let url_var = match self.provider {
            Provider::Anthropic => ANTHROPIC_BASE_URL,
            Provider::Openai => OPENAI_BASE_URL,
        };
        Some(match self.api_key {
            Some(_) => format!(
                "hint: the key came from {var} and was sent to {}; check that it is valid \
                 there (`[model] api_key_env` names another variable, `[model] base_url` or \
                 {url_var} another endpoint)",
                self.base_url
            ),
            None => format!(
                "hint: no key was sent to {} ({var} is not set); set {var}, or name the \
                 variable holding it in `[model] api_key_env`",
                self.base_url
            ),
        })
    }

    /// What this model does with images.
    pub fn image_support(&self) -> crate::vision::ImageSupport {
        crate::vision::image_support(self.provider, self.wire_api, &self.model, self.vision)
    }
}

/// `[model] temperature`, `top_p`, `seed`: sent only when set, so each server's defaults hold
/// otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// 0–2.
    pub temperature: Option<f64>,
    /// (0, 1].
    pub top_p: Option<f64>,
    /// Chat Completions only (Anthropic and Responses have no seed).
    pub seed: Option<u64>,
}

impl Sampling {
    /// Adds the settings that are set to a request body (`temperature`, `top_p`, `seed`: the
    /// same names in all three APIs; [`ResolvedModelConfig::resolve`] refuses a seed where the API
    /// has none).
    pub fn insert_into(&self, body: &mut serde_json::Value) {
        let Some(map) = body.as_object_mut() else {
            return;
        };
        if let Some(t) = self.temperature {
            map.insert("temperature".into(), serde_json::json!(t));
        }
        if let Some(p) = self.top_p {
            map.insert("top_p".into(), serde_json::json!(p));
        }
        if let Some(seed) = self.seed {
            map.insert("seed".into(), serde_json::json!(seed));
        }
    }
}

/// Default `stream_idle_timeout_sec`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Models api.openai.com serves only through the Responses API (the `-pro` reasoning models and
/// the Codex models): `wire_api` defaults to `responses` for them there.
fn responses_only(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    m.contains("codex")
        || m.starts_with("o1-pro")
        || m.starts_with("o3-pro")
        || (m.starts_with("gpt-5") && m.contains("-pro"))
}

/// The server kind a base URL suggests: ollama's, llama.cpp's, vLLM's and LM Studio's default
/// ports. `None` when the port says nothing (then every probe is tried).
pub fn guess_server(base_url: &str) -> Option<ModelServer> {
    if base_url == OPENAI_DEFAULT_BASE_URL {
        return Some(ModelServer::Openai);
    }
    let url = reqwest::Url::parse(base_url).ok()?;
    match url.port_or_known_default()? {
        11434 => Some(ModelServer::Ollama),
        8080 => Some(ModelServer::Llamacpp),
        8000 => Some(ModelServer::Vllm),
        1234 => Some(ModelServer::Lmstudio),
        _ => None,
    }
}

/// Default output budget.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

impl ResolvedModelConfig {
    /// Fills the gaps of `[model]` from `env` (a lookup, so tests need no `set_var`) and
    /// validates.
    pub fn resolve(
        config: &ModelConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedModelConfig, ConfigError> {
        let get = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let provider = match config.provider {
            Some(p) => p,
            None if get(ANTHROPIC_API_KEY).is_some() => Provider::Anthropic,
            None if get(OPENAI_API_KEY).is_some() => Provider::Openai,
            None if get(OPENAI_BASE_URL).is_some() => Provider::Openai,
            None => return Err(ConfigError::NoProvider),
        };
        let (key_var, url_var, default_url, default_model) = match provider {
            Provider::Anthropic => (
                ANTHROPIC_API_KEY,
                ANTHROPIC_BASE_URL,
                ANTHROPIC_DEFAULT_BASE_URL,
                ANTHROPIC_DEFAULT_MODEL,
            ),
            Provider::Openai => (
                OPENAI_API_KEY,
                OPENAI_BASE_URL,
                OPENAI_DEFAULT_BASE_URL,
                OPENAI_DEFAULT_MODEL,
            ),
        };
        let base_url = config
            .base_url
            .clone()
            .or_else(|| get(url_var))
            .unwrap_or_else(|| default_url.to_owned());
        let base_url = validate_base_url(&base_url)?;
        let key_var = config
            .api_key_env
            .clone()
            .unwrap_or_else(|| key_var.to_owned());
        let api_key = get(&key_var).map(|k| ApiKey::new(k.trim()));
        // A local OpenAI-compatible server (ollama ignores the key) may run without one; the
        // public endpoints never do, and saying so now beats a 401 on the first turn.
        let key_optional = provider == Provider::Openai && base_url != OPENAI_DEFAULT_BASE_URL;
        if api_key.is_none() && !key_optional {
            return Err(ConfigError::MissingKey {
                provider: provider.as_str(),
                var: key_var,
            });
        }
        let max_tokens = config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if max_tokens == 0 {
            return Err(ConfigError::Invalid {
                field: "max_tokens",
                reason: "must be at least 1".into(),
            });
        }
        let defaults = RetryPolicy::default();
        let retry = RetryPolicy {
            max_retries: config.max_retries.unwrap_or(defaults.max_retries),
            base_delay: config
                .retry_base_delay_ms
                .map_or(defaults.base_delay, Duration::from_millis),
            max_delay: config
                .retry_max_delay_ms
                .map_or(defaults.max_delay, Duration::from_millis),
            max_retry_after: defaults.max_retry_after,
        };
        let model = config
            .name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| default_model.to_owned());
        let wire_api = match (provider, config.wire_api) {
            (Provider::Anthropic, _) => WireApi::Chat,
            (Provider::Openai, Some(api)) => api,
            (Provider::Openai, None)
                if base_url == OPENAI_DEFAULT_BASE_URL && responses_only(&model) =>
            {
                WireApi::Responses
            }
            (Provider::Openai, None) => WireApi::Chat,
        };
        let sampling = Sampling {
            temperature: config.temperature,
            top_p: config.top_p,
            seed: config.seed,
        };
        check_sampling(&sampling, provider, wire_api)?;
        let idle = config
            .stream_idle_timeout_sec
            .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_secs);
        if idle.is_zero() {
            return Err(ConfigError::Invalid {
                field: "stream_idle_timeout_sec",
                reason: "must be at least 1".into(),
            });
        }
        Ok(ResolvedModelConfig {
            server: config.server.or_else(|| guess_server(&base_url)),
            provider,
            model,
            base_url,
            api_key,
            api_key_var: Some(key_var),
            max_tokens,
            context_window: config.context_window,
            retry,
            idle_timeout: idle,
            wire_api,
            sampling,
            tool_calls: config.tool_calls.unwrap_or(ToolCallMode::Native),
            vision: config.vision,
        })
    }
}

/// Ranges as the APIs document them; a seed only where the API has one.
fn check_sampling(s: &Sampling, provider: Provider, api: WireApi) -> Result<(), ConfigError> {
    if let Some(t) = s.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(ConfigError::Invalid {
            field: "temperature",
            reason: format!("{t} is outside 0–2"),
        });
    }
    if let Some(p) = s.top_p
        && !(p > 0.0 && p <= 1.0)
    {
        return Err(ConfigError::Invalid {
            field: "top_p",
            reason: format!("{p} is outside (0, 1]"),
        });
    }
    if s.seed.is_some() {
        let without = match (provider, api) {
            (Provider::Anthropic, _) => Some("the Anthropic Messages API has no seed"),
            (Provider::Openai, WireApi::Responses) => Some("the Responses API has no seed"),
            (Provider::Openai, WireApi::Chat) => None,
        };
        if let Some(reason) = without {
            return Err(ConfigError::Invalid {
                field: "seed",
                reason: reason.into(),
            });
        }
    }
    Ok(())
}

fn validate_base_url(raw: &str) -> Result<String, ConfigError> {
    let trimmed = raw.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(trimmed).map_err(|e| ConfigError::BadBaseUrl {
        url: raw.to_owned(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ConfigError::BadBaseUrl {
            url: raw.to_owned(),
            reason: "scheme must be http or https".into(),
        });
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::responses_only;

    #[test]
    fn responses_only_names_each_family_served_only_there() {
        // Codex models (any generation and size), the `-pro` reasoning models, dated snapshots
        // and any capitalisation.
        for model in [
            "codex-mini-latest",
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "gpt-5.1-codex-mini",
            "GPT-5-Codex",
            "o1-pro",
            "o1-pro-2025-03-19",
            "o3-pro",
            "o3-pro-2025-06-10",
            "gpt-5-pro",
            "gpt-5-pro-2025-10-06",
            "gpt-5.2-pro",
        ] {
            assert!(
                responses_only(model),
                "{model} is served only by the Responses API"
            );
        }
    }

    #[test]
    fn models_chat_completions_serves_are_not_responses_only() {
        // The plain, mini and nano sizes, the chat aliases, the non-pro o-series, older families,
        // and names that only contain "pro" somewhere else.
        for model in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-5.1",
            "gpt-5-chat-latest",
            "gpt-4o",
            "gpt-4.1-mini",
            "o1",
            "o3",
            "o3-mini",
            "o4-mini",
            "gpt-4o-prompt-test",
            "qwen2.5-coder-1.5b",
            "",
        ] {
            assert!(
                !responses_only(model),
                "{model} is served by Chat Completions"
            );
        }
    }
}
