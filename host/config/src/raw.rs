//! One config layer exactly as written: all-`Option` serde structs that reject unknown keys.
//!
//! Each layer is parsed on its own so that an error names the file it is in, and so that "unset" and
//! "set to the default" stay distinct until the layers are merged.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::error::{ConfigError, Result};
use crate::locate::SourceText;
use crate::sandbox::RawSandbox;
use crate::sections::ModelConfig;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub(crate) model: Option<ModelConfig>,
    pub(crate) permissions: Option<crate::permissions::RawPermissions>,
    pub(crate) agent: Option<crate::agent::RawAgent>,
    pub(crate) context: Option<crate::context::RawContext>,
    pub(crate) sandbox: Option<RawSandbox>,
    pub(crate) telemetry: Option<crate::telemetry::RawTelemetry>,
    pub(crate) mcp_servers: Option<BTreeMap<Spanned<String>, crate::servers::RawServer>>,
    pub(crate) agents: Option<BTreeMap<Spanned<String>, crate::agents::RawProfile>>,
    pub(crate) hooks: Option<crate::hooks::RawHooks>,
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
