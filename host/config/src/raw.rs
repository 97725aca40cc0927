//! One config layer exactly as written: all-`Option` serde structs that reject unknown keys.
//!
//! Each layer is parsed on its own so that an error names the file it is in, and so that "unset" and
//! "set to the default" stay distinct until the layers are merged.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{ConfigError, Result};
use crate::locate::SourceText;
use crate::sandbox::RawSandbox;
use crate::sections::{ModelConfig, PermissionMode};
use crate::server::Builtin;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub(crate) model: Option<ModelConfig>,
    pub(crate) permissions: Option<RawPermissions>,
    pub(crate) agent: Option<RawAgent>,
    pub(crate) context: Option<crate::context::RawContext>,
    pub(crate) sandbox: Option<RawSandbox>,
    pub(crate) telemetry: Option<crate::telemetry::RawTelemetry>,
    pub(crate) mcp_servers: Option<BTreeMap<Spanned<String>, RawServer>>,
    pub(crate) agents: Option<BTreeMap<Spanned<String>, crate::agents::RawProfile>>,
}

/// `[permissions]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPermissions {
    pub(crate) mode: Option<PermissionMode>,
    pub(crate) allow: Option<Vec<Spanned<String>>>,
    pub(crate) ask: Option<Vec<Spanned<String>>>,
    pub(crate) deny: Option<Vec<Spanned<String>>>,
}

/// `[agent]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgent {
    pub(crate) max_steps: Option<Spanned<u32>>,
    pub(crate) startup_grace_sec: Option<Spanned<f64>>,
}

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
    pub(crate) env_vars: Option<Vec<String>>,
    pub(crate) cwd: Option<PathBuf>,
    // streamable HTTP
    pub(crate) url: Option<String>,
    pub(crate) bearer_token_env_var: Option<String>,
    pub(crate) http_headers: Option<BTreeMap<String, String>>,
    pub(crate) env_http_headers: Option<BTreeMap<String, String>>,
    pub(crate) oauth: Option<RawOAuth>,
    // common
    pub(crate) enabled: Option<bool>,
    pub(crate) required: Option<bool>,
    pub(crate) startup_timeout_sec: Option<Spanned<f64>>,
    pub(crate) tool_timeout_sec: Option<Spanned<f64>>,
    pub(crate) max_output_chars: Option<usize>,
    pub(crate) trust_annotations: Option<bool>,
    pub(crate) defer: Option<crate::server::Defer>,
    pub(crate) roots: Option<RawRoots>,
    pub(crate) max_tool_bytes: Option<usize>,
    pub(crate) enabled_tools: Option<Vec<String>>,
    pub(crate) disabled_tools: Option<Vec<String>>,
    pub(crate) tools: Option<BTreeMap<String, RawToolSettings>>,
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
}

/// Parses one layer, turning serde's message into one that names the file, line, column and key.
pub(crate) fn parse(source: &SourceText<'_>) -> Result<RawConfig> {
    toml::from_str(source.text).map_err(|err| toml_error(source, &err))
}

fn toml_error(source: &SourceText<'_>, err: &toml::de::Error) -> ConfigError {
    let span = err.span();
    let at = source.locate_span(span.clone());
    let key = span.clone().and_then(|span| source.key_at(span.start));
    let mut message = describe(err.message(), key.as_deref());
    // The text does not parse, so no key path; a duplicate key's span is the key itself.
    if message == "duplicate key"
        && let Some(name) = span.and_then(|span| source.text.get(span))
    {
        message = format!("duplicate key {:?}", name.trim());
    }
    ConfigError::Toml { at, key, message }
}

/// Rewrites serde's wording into config wording: `unknown key "comand" in [mcp_servers.git]; expected
/// one of command, args, …`, and prefixes other messages with the key they are about.
fn describe(message: &str, key: Option<&str>) -> String {
    let message = message.trim_end();
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((field, expected)) = rest.split_once('`')
    {
        {
            let table = key.and_then(|key| key.rsplit_once('.')).map_or_else(
                || "the top level".to_owned(),
                |(table, _)| format!("[{table}]"),
            );
            let expected = expected
                .trim_start_matches(", ")
                .replace('`', "")
                .replace("there are no fields", "no keys are allowed here");
            return format!("unknown key {field:?} in {table}; {expected}");
        }
    }
    match key {
        Some(key) if !key.is_empty() => format!("{key}: {message}"),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn rewrites_unknown_field_messages() {
        assert_eq!(
            describe(
                "unknown field `comand`, expected one of `command`, `args`",
                Some("mcp_servers.git.comand")
            ),
            "unknown key \"comand\" in [mcp_servers.git]; expected one of command, args"
        );
        assert_eq!(
            describe("unknown field `x`, expected `model`", Some("x")),
            "unknown key \"x\" in the top level; expected model"
        );
        assert_eq!(
            describe("invalid type: integer `3`, expected a string", Some("a.b")),
            "a.b: invalid type: integer `3`, expected a string"
        );
    }
}
