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

/// `[model]`. Every key is optional: what is unset is chosen automatically by the host, which maps this
/// onto the model crate's own config (config does not depend on the model crate).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSection {
    /// `provider`.
    pub provider: Option<Provider>,
    /// `name`: the model id sent to the provider.
    pub name: Option<String>,
    /// `base_url`: for proxies and local OpenAI-compatible servers.
    pub base_url: Option<String>,
    /// `api_key_env`: the variable holding the API key (the key itself never goes in config).
    pub api_key_env: Option<String>,
    /// `max_tokens`: the output budget per request.
    pub max_tokens: Option<u32>,
    /// `context_window`: the model's context size in tokens, when the host cannot know it.
    pub context_window: Option<u32>,
    /// `max_retries`: retries of a failed request.
    pub max_retries: Option<u32>,
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
}

impl Default for AgentSection {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}
