//! The non-server sections of config.toml: `[model]`, `[permissions]`, `[agent]`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::rules::RuleSource;

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

/// `permissions.mode`: the default decision when no rule matches (issue 4, item 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Ask unless a rule or a trusted read-only annotation allows.
    #[default]
    Default,
    /// Also allow file edits inside the roots.
    AcceptEdits,
    /// Deny every tool not marked read-only.
    ReadOnly,
    /// Allow everything not denied.
    Yolo,
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept-edits",
            Self::ReadOnly => "read-only",
            Self::Yolo => "yolo",
        })
    }
}

/// `[permissions]`. Rule lists accumulate over every layer, in layer order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    /// `mode` (default `default`).
    pub mode: PermissionMode,
    /// `allow` rules.
    pub allow: Vec<RuleSource>,
    /// `ask` rules.
    pub ask: Vec<RuleSource>,
    /// `deny` rules.
    pub deny: Vec<RuleSource>,
}

/// The agent loop's step budget when `agent.max_steps` is unset.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSection {
    /// `max_steps` (default 50): model turns per run before the loop stops.
    pub max_steps: u32,
    /// Accept a server's form elicitation with the defaults its schema declares instead of
    /// declining it (no file key: only `tern run --accept-elicitation-defaults` sets it).
    pub accept_elicitation_defaults: bool,
    /// `startup_grace_sec` (default 2): how long a headless run waits for servers that are not
    /// `required` before its first model request; later ones join the table as they come up.
    pub startup_grace: std::time::Duration,
}

/// How long a headless run waits for servers that are not required.
pub const DEFAULT_STARTUP_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Default for AgentSection {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            accept_elicitation_defaults: false,
            startup_grace: DEFAULT_STARTUP_GRACE,
        }
    }
}
