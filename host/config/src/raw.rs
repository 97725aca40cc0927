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
    pub(crate) checkpoints: Option<crate::checkpoints::RawCheckpoints>,
    pub(crate) lsp: Option<crate::lsp::RawLsp>,
    pub(crate) ui: Option<crate::ui::RawUi>,
    pub(crate) skills: Option<crate::skills::RawSkills>,
    pub(crate) hooks: Option<crate::hooks::RawHooks>,
}

/// Parses one layer, turning serde's message into one that names the file, line, column and key.
pub(crate) fn parse(source: &SourceText<'_>) -> Result<RawConfig> {
    parse_as(source)
}

/// Parses any strict file shape (the config, the managed policy) with the same messages.
pub(crate) fn parse_as<T: serde::de::DeserializeOwned>(source: &SourceText<'_>) -> Result<T> {
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
            let hint = closest(field, expected)
                .map(|k| format!("\nhint: did you mean `{k}`?"))
                .unwrap_or_default();
            let expected = expected
                .trim_start_matches(", ")
                .replace('`', "")
                .replace("there are no fields", "no keys are allowed here");
            return format!("unknown key {field:?} in {table}; {expected}{hint}");
        }
    }
    match key {
        Some(key) if !key.is_empty() => format!("{key}: {message}"),
        _ => message.to_owned(),
    }
}

/// The expected key (serde lists them as `` `a`, `b` ``) closest to `field` by edit distance,
/// when it is close enough to be a typo: at most a third of the longer name.
fn closest<'a>(field: &str, expected: &'a str) -> Option<&'a str> {
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|k| (distance(field, k), k))
        .filter(|(d, k)| *d > 0 && *d <= field.len().max(k.len()).div_ceil(3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over bytes (config keys are ASCII).
fn distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn an_unknown_key_names_the_closest_valid_one() {
        assert_eq!(
            describe(
                "unknown field `startup_timeout_secs`, expected one of `startup_timeout_sec`, `startup_timeout_ms`, `url`",
                Some("mcp_servers.git.startup_timeout_secs")
            ),
            "unknown key \"startup_timeout_secs\" in [mcp_servers.git]; expected one of \
             startup_timeout_sec, startup_timeout_ms, url\nhint: did you mean `startup_timeout_sec`?"
        );
        // Nothing close: no guess.
        assert!(
            !describe(
                "unknown field `zzz`, expected one of `url`, `env`",
                Some("a.zzz")
            )
            .contains("hint")
        );
    }

    #[test]
    fn rewrites_unknown_field_messages() {
        assert_eq!(
            describe(
                "unknown field `comand`, expected one of `command`, `args`",
                Some("mcp_servers.git.comand")
            ),
            "unknown key \"comand\" in [mcp_servers.git]; expected one of command, args\nhint: \
             did you mean `command`?"
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
