//! `[mcp_servers.NAME]` exactly as written in one layer: all-`Option` serde structs that reject
//! unknown keys.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::resolved::{Builtin, Defer};

/// `[mcp_servers.NAME]`: stdio and HTTP keys side by side (a flattened enum cannot deny unknown keys);
/// which transport it is gets decided after merging.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    // stdio
    pub(crate) command: Option<String>,
    pub(crate) builtin: Option<Builtin>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) env: Option<BTreeMap<String, String>>,
    /// Names, or Codex's `{ name, source = "local" | "remote" }` tables.
    pub(crate) env_vars: Option<Vec<Spanned<toml::Value>>>,
    pub(crate) cwd: Option<PathBuf>,
    // streamable HTTP
    pub(crate) url: Option<String>,
    pub(crate) bearer_token_env_var: Option<String>,
    /// Codex's refused literal token: read only to refuse it with the way out.
    pub(crate) bearer_token: Option<Spanned<toml::Value>>,
    pub(crate) http_headers: Option<BTreeMap<String, String>>,
    pub(crate) env_http_headers: Option<BTreeMap<String, String>>,
    pub(crate) oauth: Option<RawOAuth>,
    /// Codex's spelling of `oauth.scopes`.
    pub(crate) scopes: Option<Vec<String>>,
    /// Codex's spelling of `oauth.resource`.
    pub(crate) oauth_resource: Option<String>,
    // common
    pub(crate) enabled: Option<bool>,
    pub(crate) required: Option<bool>,
    pub(crate) startup_timeout_sec: Option<Spanned<f64>>,
    /// Codex's milliseconds form of `startup_timeout_sec` (which wins when both are set).
    pub(crate) startup_timeout_ms: Option<Spanned<u64>>,
    /// `"2025-11-25"`, `"2026-07-28"` or `"auto"`: which of MCP's eras to open with.
    pub(crate) protocol: Option<Spanned<String>>,
    /// Codex's legacy display name: accepted and unused (the table's name is the name).
    #[allow(dead_code)]
    pub(crate) name: Option<String>,
    pub(crate) tool_timeout_sec: Option<Spanned<f64>>,
    pub(crate) max_output_chars: Option<usize>,
    pub(crate) trust_annotations: Option<bool>,
    pub(crate) defer: Option<Defer>,
    pub(crate) roots: Option<RawRoots>,
    pub(crate) max_tool_bytes: Option<usize>,
    pub(crate) enabled_tools: Option<Vec<String>>,
    pub(crate) disabled_tools: Option<Vec<String>>,
    pub(crate) tools: Option<BTreeMap<String, RawToolSettings>>,
    // Codex's keys with no tern key of their own (`codex-rs/config/src/mcp_types.rs`,
    // `RawMcpServerConfig`): each gets its meaning in `layer.rs`.
    /// `"auto"`, `"prompt"` or `"approve"`: an ask or allow rule for every tool of the server.
    pub(crate) default_tools_approval_mode: Option<Spanned<String>>,
    /// Its tools may run at the same time as the step's other concurrent calls.
    pub(crate) supports_parallel_tool_calls: Option<bool>,
    /// `"local"` or `"remote"` (Codex's remote executor): tern runs every server locally.
    pub(crate) experimental_environment: Option<Spanned<String>>,
}

/// `[mcp_servers.NAME.oauth]` (or `oauth = { … }`): how tern authorizes to an HTTP server.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOAuth {
    pub(crate) enabled: Option<bool>,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret_env: Option<String>,
    pub(crate) scopes: Option<Vec<String>>,
    pub(crate) redirect_port: Option<u16>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) private_key_file: Option<String>,
    pub(crate) private_key_env: Option<String>,
    pub(crate) signing_alg: Option<String>,
    pub(crate) key_id: Option<String>,
}

impl RawOAuth {
    /// Whether any key is set.
    pub(crate) fn is_set(&self) -> bool {
        self.enabled.is_some()
            || self.client_id.is_some()
            || self.client_secret_env.is_some()
            || self.scopes.is_some()
            || self.redirect_port.is_some()
            || self.client_metadata_url.is_some()
            || self.resource.is_some()
            || self.private_key_file.is_some()
            || self.private_key_env.is_some()
            || self.signing_alg.is_some()
            || self.key_id.is_some()
    }

    /// Lays `later` over `self`, key by key.
    pub(crate) fn merge(&mut self, later: Self) {
        fn over<T>(slot: &mut Option<T>, later: Option<T>) {
            if later.is_some() {
                *slot = later;
            }
        }
        over(&mut self.enabled, later.enabled);
        over(&mut self.client_id, later.client_id);
        over(&mut self.client_secret_env, later.client_secret_env);
        over(&mut self.scopes, later.scopes);
        over(&mut self.redirect_port, later.redirect_port);
        over(&mut self.client_metadata_url, later.client_metadata_url);
        over(&mut self.resource, later.resource);
        over(&mut self.private_key_file, later.private_key_file);
        over(&mut self.private_key_env, later.private_key_env);
        over(&mut self.signing_alg, later.signing_alg);
        over(&mut self.key_id, later.key_id);
    }
}

/// `roots = false`, `roots = true`, or `roots = ["/dir", …]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawRoots {
    Enabled(bool),
    Paths(Vec<PathBuf>),
}

/// `[mcp_servers.NAME.tools.TOOL]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawToolSettings {
    pub(crate) timeout_sec: Option<Spanned<f64>>,
    pub(crate) max_output_chars: Option<usize>,
    pub(crate) command_arg: Option<String>,
    pub(crate) edits_files: Option<bool>,
    pub(crate) enabled: Option<bool>,
    /// Codex's per-tool `approval_mode`: `"auto"`, `"prompt"` or `"approve"`.
    pub(crate) approval_mode: Option<Spanned<String>>,
}
