//! Per-layer validation and the merge of layers, later over earlier.
//!
//! Merge rules: scalars — later wins; tables (`env`, `http_headers`, `tools.TOOL`) — per key; lists
//! (`args`, `env_vars`, `enabled_tools`) — later replaces; permission rules — accumulate over every layer,
//! each keeping its own file and line, because a deny at any layer must win. A layer that gives a server a
//! different kind of transport (`command`, `builtin` or `url`) than the layers before it replaces the
//! earlier transport keys wholesale: keeping a user-level `args` under a project-level `url` would make a
//! server nobody wrote.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use crate::error::{ConfigError, Location, Result};
use crate::locate::SourceText;
use crate::raw::{RawConfig, RawOAuth, RawRoots, RawServer, RawToolSettings};
use crate::rules::{RuleList, RuleSource, check_rule_shape};
use crate::sandbox::SandboxLayer;
use crate::sections::ModelConfig;
use crate::sections::PermissionMode;
use crate::server::Builtin;

/// One layer, checked on its own.
#[derive(Debug, Default)]
pub(crate) struct Layer {
    pub(crate) model: ModelConfig,
    pub(crate) context: crate::context::ContextLayer,
    pub(crate) mode: Option<PermissionMode>,
    pub(crate) rules: Vec<(RuleList, RuleSource)>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) startup_grace: Option<Duration>,
    pub(crate) sandbox: SandboxLayer,
    pub(crate) telemetry: crate::telemetry::TelemetryLayer,
    pub(crate) servers: Vec<(String, ServerLayer)>,
    pub(crate) agents: crate::agents::AgentsLayer,
}

/// A server's keys from one or more layers.
#[derive(Debug, Clone)]
pub(crate) struct ServerLayer {
    pub(crate) command: Option<String>,
    pub(crate) builtin: Option<Builtin>,
    pub(crate) args: Option<Vec<String>>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) env_vars: Option<Vec<String>>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) url: Option<String>,
    pub(crate) bearer_token_env_var: Option<String>,
    pub(crate) http_headers: BTreeMap<String, String>,
    pub(crate) env_http_headers: BTreeMap<String, String>,
    pub(crate) oauth: RawOAuth,
    pub(crate) enabled: Option<bool>,
    pub(crate) required: Option<bool>,
    pub(crate) startup_timeout: Option<Duration>,
    pub(crate) tool_timeout: Option<Duration>,
    pub(crate) max_output_chars: Option<usize>,
    pub(crate) trust_annotations: Option<bool>,
    pub(crate) defer: Option<crate::server::Defer>,
    pub(crate) roots: Option<RawRoots>,
    pub(crate) max_tool_bytes: Option<usize>,
    pub(crate) enabled_tools: Option<Vec<String>>,
    pub(crate) disabled_tools: Option<Vec<String>>,
    pub(crate) tools: BTreeMap<String, ToolLayer>,
    /// The `[mcp_servers.NAME]` header (or key) of the last layer that mentioned the server.
    pub(crate) at: Location,
}

/// `[mcp_servers.NAME.tools.TOOL]` from one or more layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolLayer {
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_output_chars: Option<usize>,
    pub(crate) command_arg: Option<String>,
    pub(crate) edits_files: Option<bool>,
    pub(crate) enabled: Option<bool>,
}

/// Which transport keys a layer set; `None` if it set none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransportKind {
    Command,
    Builtin,
    Http,
}

impl ServerLayer {
    fn kind(&self) -> Option<TransportKind> {
        if self.command.is_some() {
            Some(TransportKind::Command)
        } else if self.builtin.is_some() {
            Some(TransportKind::Builtin)
        } else if self.url.is_some() {
            Some(TransportKind::Http)
        } else {
            None
        }
    }

    fn clear_transport(&mut self) {
        self.command = None;
        self.builtin = None;
        self.args = None;
        self.env.clear();
        self.env_vars = None;
        self.cwd = None;
        self.url = None;
        self.bearer_token_env_var = None;
        self.http_headers.clear();
        self.env_http_headers.clear();
        self.oauth = RawOAuth::default();
    }

    /// Lays `later` over `self`.
    fn merge(&mut self, later: Self) {
        if later.kind().is_some() && later.kind() != self.kind() {
            self.clear_transport();
        }
        fn over<T>(slot: &mut Option<T>, later: Option<T>) {
            if later.is_some() {
                *slot = later;
            }
        }
        over(&mut self.command, later.command);
        over(&mut self.builtin, later.builtin);
        over(&mut self.args, later.args);
        self.env.extend(later.env);
        over(&mut self.env_vars, later.env_vars);
        over(&mut self.cwd, later.cwd);
        over(&mut self.url, later.url);
        over(&mut self.bearer_token_env_var, later.bearer_token_env_var);
        self.http_headers.extend(later.http_headers);
        self.env_http_headers.extend(later.env_http_headers);
        self.oauth.merge(later.oauth);
        over(&mut self.enabled, later.enabled);
        over(&mut self.required, later.required);
        over(&mut self.startup_timeout, later.startup_timeout);
        over(&mut self.tool_timeout, later.tool_timeout);
        over(&mut self.max_output_chars, later.max_output_chars);
        over(&mut self.trust_annotations, later.trust_annotations);
        over(&mut self.defer, later.defer);
        over(&mut self.roots, later.roots);
        over(&mut self.max_tool_bytes, later.max_tool_bytes);
        over(&mut self.enabled_tools, later.enabled_tools);
        over(&mut self.disabled_tools, later.disabled_tools);
        for (name, tool) in later.tools {
            let slot = self.tools.entry(name).or_default();
            over(&mut slot.timeout, tool.timeout);
            over(&mut slot.max_output_chars, tool.max_output_chars);
            over(&mut slot.command_arg, tool.command_arg);
            over(&mut slot.edits_files, tool.edits_files);
            over(&mut slot.enabled, tool.enabled);
        }
        self.at = later.at;
    }
}

/// All layers merged, not yet resolved.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    pub(crate) model: ModelConfig,
    pub(crate) context: crate::context::ContextLayer,
    pub(crate) mode: Option<PermissionMode>,
    pub(crate) rules: Vec<(RuleList, RuleSource)>,
    pub(crate) max_steps: Option<u32>,
    pub(crate) startup_grace: Option<Duration>,
    pub(crate) sandbox: SandboxLayer,
    pub(crate) telemetry: crate::telemetry::TelemetryLayer,
    pub(crate) servers: BTreeMap<String, ServerLayer>,
    pub(crate) agents: crate::agents::AgentsLayer,
}

impl Merged {
    /// Lays `layer` over everything merged so far.
    pub(crate) fn apply(&mut self, layer: Layer) {
        self.model.merge(layer.model);
        self.context.merge(layer.context);
        if layer.mode.is_some() {
            self.mode = layer.mode;
        }
        self.rules.extend(layer.rules);
        if layer.max_steps.is_some() {
            self.max_steps = layer.max_steps;
        }
        if layer.startup_grace.is_some() {
            self.startup_grace = layer.startup_grace;
        }
        self.sandbox.merge(layer.sandbox);
        self.telemetry.merge(layer.telemetry);
        self.agents.merge(layer.agents);
        for (name, server) in layer.servers {
            match self.servers.get_mut(&name) {
                Some(existing) => existing.merge(server),
                None => {
                    self.servers.insert(name, server);
                }
            }
        }
    }
}

/// Whether `name` can be a server name: it prefixes tool names, which providers limit to `[a-zA-Z0-9_-]`.
pub(crate) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Layer {
    /// Checks what can be checked within one layer and records where each value came from.
    pub(crate) fn from_raw(raw: RawConfig, source: &SourceText<'_>) -> Result<Self> {
        let mut layer = Self {
            model: raw.model.unwrap_or_default(),
            ..Self::default()
        };
        if let Some(permissions) = raw.permissions {
            layer.mode = permissions.mode;
            for (list, rules) in [
                (RuleList::Allow, permissions.allow),
                (RuleList::Ask, permissions.ask),
                (RuleList::Deny, permissions.deny),
            ] {
                for rule in rules.unwrap_or_default() {
                    let at = source.locate(rule.span().start);
                    layer
                        .rules
                        .push((list, rule_source(list, rule.into_inner(), at)?));
                }
            }
        }
        if let Some(context) = raw.context {
            layer.context = crate::context::ContextLayer::from_raw(context, source)?;
        }
        let (max_steps, startup_grace) = raw
            .agent
            .map(|a| (a.max_steps, a.startup_grace_sec))
            .unwrap_or_default();
        if let Some(grace) = startup_grace {
            let secs = *grace.get_ref();
            if !(0.0..=600.0).contains(&secs) {
                return Err(invalid(
                    source.locate(grace.span().start),
                    "agent.startup_grace_sec",
                    "must be a number of seconds from 0 to 600",
                ));
            }
            layer.startup_grace = Some(Duration::from_secs_f64(secs));
        }
        if let Some(max_steps) = max_steps {
            if *max_steps.get_ref() == 0 {
                return Err(invalid(
                    source.locate(max_steps.span().start),
                    "agent.max_steps",
                    "must be at least 1",
                ));
            }
            layer.max_steps = Some(max_steps.into_inner());
        }
        if let Some(sandbox) = raw.sandbox {
            layer.sandbox = SandboxLayer::from_raw(sandbox, source)?;
        }
        if let Some(telemetry) = raw.telemetry {
            layer.telemetry = crate::telemetry::TelemetryLayer::from_raw(telemetry, source)?;
        }
        layer.agents = crate::agents::AgentsLayer::from_raw(raw.agents, source)?;
        for (name, server) in raw.mcp_servers.unwrap_or_default() {
            let at = source.locate(name.span().start);
            let name = name.into_inner();
            if !valid_server_name(&name) {
                return Err(invalid(
                    at,
                    &format!("mcp_servers.{name}"),
                    "a server name may only use letters, digits, '_' and '-', because it prefixes \
                     the names of its tools",
                ));
            }
            let server = server_layer(&name, server, at, source)?;
            layer.servers.push((name, server));
        }
        Ok(layer)
    }
}

/// Makes a rule from a config file or a flag, checking its shape.
pub(crate) fn rule_source(list: RuleList, rule: String, at: Location) -> Result<RuleSource> {
    if let Err(message) = check_rule_shape(&rule) {
        return Err(invalid(at, &format!("permissions.{list}"), &message));
    }
    Ok(RuleSource {
        rule,
        file: at.file,
        line: at.line,
    })
}

fn server_layer(
    name: &str,
    raw: RawServer,
    at: Location,
    source: &SourceText<'_>,
) -> Result<ServerLayer> {
    let set: Vec<&str> = [
        ("command", raw.command.is_some()),
        ("builtin", raw.builtin.is_some()),
        ("url", raw.url.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if set.len() > 1 {
        return Err(invalid(
            at,
            &format!("mcp_servers.{name}"),
            &format!(
                "sets both `{}` and `{}`; a server is either a command, a built-in or a url",
                set[0], set[1]
            ),
        ));
    }
    let timeout = |key: &str, value: Option<Spanned<f64>>| -> Result<Option<Duration>> {
        value
            .map(|value| {
                seconds(*value.get_ref()).ok_or_else(|| {
                    invalid(
                        source.locate(value.span().start),
                        &format!("mcp_servers.{name}.{key}"),
                        "must be a positive number of seconds",
                    )
                })
            })
            .transpose()
    };
    let mut tools = BTreeMap::new();
    for (tool, settings) in raw.tools.unwrap_or_default() {
        let key = format!("tools.{tool}.timeout_sec");
        let RawToolSettings {
            timeout_sec,
            max_output_chars,
            command_arg,
            edits_files,
            enabled,
        } = settings;
        let tool_layer = ToolLayer {
            timeout: timeout(&key, timeout_sec)?,
            max_output_chars,
            command_arg,
            edits_files,
            enabled,
        };
        tools.insert(tool, tool_layer);
    }
    Ok(ServerLayer {
        startup_timeout: timeout("startup_timeout_sec", raw.startup_timeout_sec)?,
        tool_timeout: timeout("tool_timeout_sec", raw.tool_timeout_sec)?,
        max_output_chars: raw.max_output_chars,
        trust_annotations: raw.trust_annotations,
        defer: raw.defer,
        roots: raw.roots,
        max_tool_bytes: raw.max_tool_bytes,
        command: raw.command,
        builtin: raw.builtin,
        args: raw.args,
        env: raw.env.unwrap_or_default(),
        env_vars: raw.env_vars,
        cwd: raw.cwd,
        url: raw.url,
        bearer_token_env_var: raw.bearer_token_env_var,
        http_headers: raw.http_headers.unwrap_or_default(),
        env_http_headers: raw.env_http_headers.unwrap_or_default(),
        oauth: raw.oauth.unwrap_or_default(),
        enabled: raw.enabled,
        required: raw.required,
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools,
        tools,
        at,
    })
}

fn seconds(value: f64) -> Option<Duration> {
    if value > 0.0 {
        Duration::try_from_secs_f64(value).ok()
    } else {
        None
    }
}

pub(crate) fn invalid(at: Location, key: &str, message: &str) -> ConfigError {
    ConfigError::Invalid {
        at,
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

/// Turns `-c key=value` into one line of TOML. The value is parsed as a TOML value and, if it is not
/// one, taken as a string, so `-c model.name=gpt-4o` needs no quotes. Parsing the key and the value
/// separately keeps a value from smuggling in further keys.
pub(crate) fn override_text(arg: &str) -> Result<String> {
    let error = |message: &str| ConfigError::Override {
        arg: arg.to_owned(),
        message: message.to_owned(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| error("expected key=value, e.g. -c model.name=gpt-4o"))?;
    let keys = toml_edit::Key::parse(key.trim())
        .map_err(|err| error(&format!("bad key {key:?}: {}", err.message())))?;
    let value = value
        .trim()
        .parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(value.trim()));
    let key = keys
        .iter()
        .map(|key| key.display_repr().into_owned())
        .collect::<Vec<_>>()
        .join(".");
    Ok(format!("{key} = {}\n", value.decorated("", "")))
}

#[cfg(test)]
mod tests {
    use super::override_text;

    #[test]
    fn override_values_parse_as_toml_or_fall_back_to_strings() {
        assert_eq!(
            override_text("agent.max_steps=7").unwrap(),
            "agent.max_steps = 7\n"
        );
        assert_eq!(
            override_text("model.name=gpt-4o").unwrap(),
            "model.name = \"gpt-4o\"\n"
        );
        assert_eq!(
            override_text("permissions.allow=[\"a\", \"b\"]").unwrap(),
            "permissions.allow = [\"a\", \"b\"]\n"
        );
        assert_eq!(
            override_text("mcp_servers.\"my-srv\".enabled=false").unwrap(),
            "mcp_servers.\"my-srv\".enabled = false\n"
        );
        // A value cannot add a second key.
        let text = override_text("model.name=a\nb = 1").unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table.len(), 1, "{text}");
        assert_eq!(table["model"]["name"].as_str(), Some("a\nb = 1"));
        assert!(override_text("no-equals").is_err());
        assert!(override_text("bad key=1").is_err());
    }
}
