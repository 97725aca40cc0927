//! Codex's `[mcp_servers.NAME]` keys that have no tern key of the same name, each given its
//! meaning here (issue 23: a block pasted from Codex's `config.toml` loads and means what it
//! meant there; unknown keys stay errors).
//!
//! The key list and values are Codex's `RawMcpServerConfig` (`codex-rs/config/src/mcp_types.rs`):
//! - `default_tools_approval_mode` and `tools.TOOL.approval_mode` (`AppToolApproval`: `auto`,
//!   `prompt`, `approve`; precedence per-tool override, then server default, then `auto`) become
//!   permission rules: `approve` an allow rule, `prompt` an ask rule, `auto` none (tern's own
//!   decision: rules, trusted `readOnlyHint`, the mode). Allow rules never beat a deny or ask
//!   rule of any layer or the managed policy.
//! - `supports_parallel_tool_calls` is [`super::ServerConfig::parallel_tool_calls`].
//! - `experimental_environment` and `env_vars = [{ name, source }]` choose where Codex starts a
//!   server; tern starts every server on this machine, so `"remote"` is a notice, not a silence.
//! - `bearer_token` is refused, as Codex refuses it: a secret does not belong in the config file.

use toml::Spanned;

use super::layer::ServersLayer;
use crate::check::invalid;
use crate::error::{Location, Result};
use crate::load::Notice;
use crate::locate::SourceText;
use crate::permissions::{RuleList, RuleSource};

/// Codex's `AppToolApproval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approval {
    /// Codex's default: tern decides as it would without the key.
    Auto,
    /// Always ask: an ask rule.
    Prompt,
    /// Never ask: an allow rule.
    Approve,
}

impl Approval {
    fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "prompt" => Some(Self::Prompt),
            "approve" => Some(Self::Approve),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Prompt => "prompt",
            Self::Approve => "approve",
        }
    }

    fn rule_list(self) -> Option<RuleList> {
        match self {
            Self::Auto => None,
            Self::Prompt => Some(RuleList::Ask),
            Self::Approve => Some(RuleList::Allow),
        }
    }
}

/// An approval mode and where it was written.
pub(crate) type LocatedApproval = (Approval, Location);

/// A Codex key tern reads but cannot act on, said once at load as a notice.
#[derive(Debug, Clone)]
pub(crate) struct IgnoredKey {
    pub(crate) key: String,
    pub(crate) at: Location,
    pub(crate) why: String,
}

/// Reads `default_tools_approval_mode` / `tools.TOOL.approval_mode`.
pub(crate) fn approval(
    key: &str,
    value: Option<Spanned<String>>,
    source: &SourceText<'_>,
) -> Result<Option<LocatedApproval>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let at = source.locate(value.span().start);
    match Approval::parse(value.get_ref()) {
        Some(approval) => Ok(Some((approval, at))),
        None => Err(invalid(
            at,
            key,
            &format!(
                "{:?} is not one of \"auto\" (tern decides), \"prompt\" (always ask) or \"approve\" \
                 (never ask), Codex's approval modes",
                value.get_ref()
            ),
        )),
    }
}

/// Reads `env_vars`: names, or Codex's `{ name, source = "local" | "remote" }` tables.
pub(crate) fn env_vars(
    server: &str,
    raw: Option<Vec<Spanned<toml::Value>>>,
    source: &SourceText<'_>,
    ignored: &mut Vec<IgnoredKey>,
) -> Result<Option<Vec<String>>> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let mut names = Vec::with_capacity(raw.len());
    for (i, entry) in raw.into_iter().enumerate() {
        let at = source.locate(entry.span().start);
        let key = format!("mcp_servers.{server}.env_vars[{i}]");
        let bad = |message: &str| invalid(at.clone(), &key, message);
        match entry.into_inner() {
            toml::Value::String(name) => names.push(name),
            toml::Value::Table(mut table) => {
                let name = match table.remove("name") {
                    Some(toml::Value::String(name)) => name,
                    _ => return Err(bad("needs `name = \"VARIABLE\"`")),
                };
                match table.remove("source") {
                    None => {}
                    Some(toml::Value::String(s)) if s == "local" => {}
                    Some(toml::Value::String(s)) if s == "remote" => ignored.push(IgnoredKey {
                        key: format!("{key}.source"),
                        at: at.clone(),
                        why: format!(
                            "tern has no remote executor: {name} is read from this machine's \
                             environment, where the server runs"
                        ),
                    }),
                    Some(other) => {
                        return Err(bad(&format!(
                            "source {other} is not \"local\" or \"remote\""
                        )));
                    }
                }
                if let Some(extra) = table.keys().next() {
                    return Err(bad(&format!(
                        "unknown key {extra:?}; expected `name` and optionally `source`"
                    )));
                }
                names.push(name);
            }
            _ => {
                return Err(bad(
                    "must be a variable name or a table `{ name = \"VARIABLE\", source = \"local\" }`",
                ));
            }
        }
    }
    Ok(Some(names))
}

/// Reads `experimental_environment`: `"local"` is what tern does anyway; `"remote"` is said.
pub(crate) fn environment(
    server: &str,
    raw: Option<Spanned<String>>,
    source: &SourceText<'_>,
    ignored: &mut Vec<IgnoredKey>,
) -> Result<()> {
    let Some(raw) = raw else {
        return Ok(());
    };
    let at = source.locate(raw.span().start);
    let key = format!("mcp_servers.{server}.experimental_environment");
    match raw.get_ref().as_str() {
        "local" => Ok(()),
        "remote" => {
            ignored.push(IgnoredKey {
                key,
                at,
                why: "tern has no remote executor; the server is started on this machine".into(),
            });
            Ok(())
        }
        other => Err(invalid(
            at,
            &key,
            &format!("{other:?} is not \"local\" or \"remote\""),
        )),
    }
}

/// Refuses `bearer_token`, as Codex does, with the key that takes its place.
pub(crate) fn refuse_bearer_token(
    server: &str,
    raw: Option<Spanned<toml::Value>>,
    source: &SourceText<'_>,
) -> Result<()> {
    let Some(raw) = raw else {
        return Ok(());
    };
    Err(invalid(
        source.locate(raw.span().start),
        &format!("mcp_servers.{server}.bearer_token"),
        "a token is not written into the config (Codex refuses this key too)\nhint: put the token \
         in an environment variable and name it: bearer_token_env_var = \"MY_TOKEN\"",
    ))
}

/// `server__tool` as the tool table names it (the same sanitizing), so a rule matches it.
fn rule_name(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn rule(list: RuleList, text: String, at: &Location) -> (RuleList, RuleSource) {
    (
        list,
        RuleSource {
            rule: text,
            file: at.file.clone(),
            line: at.line,
        },
    )
}

impl ServersLayer {
    /// The permission rules the merged servers' approval modes stand for. A per-tool mode that
    /// would have to loosen the server's default cannot be a rule (tern's ask beats allow, and
    /// a `SERVER__*` allow covers every tool), so it is an error that says what to write instead.
    pub(crate) fn approval_rules(&self) -> Result<Vec<(RuleList, RuleSource)>> {
        let mut rules = Vec::new();
        for (name, server) in &self.0 {
            let default = server.approval.as_ref();
            if let Some((approval, at)) = default
                && let Some(list) = approval.rule_list()
            {
                rules.push(rule(list, format!("{name}__*"), at));
            }
            for (tool, settings) in &server.tools {
                let Some((approval, at)) = &settings.approval else {
                    continue;
                };
                let looser = matches!(
                    (default.map(|(d, _)| *d), approval),
                    (Some(Approval::Approve), Approval::Auto)
                        | (Some(Approval::Prompt), Approval::Auto | Approval::Approve)
                );
                if looser && let Some((default, _)) = default {
                    return Err(invalid(
                        at.clone(),
                        &format!("mcp_servers.{name}.tools.{tool}.approval_mode"),
                        &format!(
                            "{:?} loosens the server's default_tools_approval_mode = {:?}, which \
                             tern cannot express: its ask rules beat allow rules, and an allow \
                             rule covers every tool of the server\nhint: leave out \
                             default_tools_approval_mode and set approval_mode on each tool, or \
                             write [permissions] rules",
                            approval.name(),
                            default.name()
                        ),
                    ));
                }
                if let Some(list) = approval.rule_list() {
                    rules.push(rule(list, rule_name(name, tool), at));
                }
            }
        }
        Ok(rules)
    }

    /// Notices for the Codex keys tern read but cannot act on (a disabled server's are noise).
    pub(crate) fn ignored(&self) -> Vec<Notice> {
        self.0
            .values()
            .filter(|server| server.enabled != Some(false))
            .flat_map(|server| &server.ignored)
            .map(|i| Notice::ServerKeyIgnored {
                key: i.key.clone(),
                at: i.at.clone(),
                why: i.why.clone(),
            })
            .collect()
    }
}
