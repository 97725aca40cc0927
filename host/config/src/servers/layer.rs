//! `[mcp_servers.NAME]` per layer and merged: later layers win key by key; tables (`env`,
//! `http_headers`, `tools.TOOL`) merge per key; lists (`args`, `env_vars`, `enabled_tools`) are
//! replaced. A layer that gives a server a different kind of transport (`command`, `builtin` or
//! `url`) than the layers before it replaces the earlier transport keys wholesale: keeping a
//! user-level `args` under a project-level `url` would make a server nobody wrote.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::codex::{self, IgnoredKey, LocatedApproval};
use super::raw::{RawOAuth, RawRoots, RawServer, RawToolSettings};
use super::resolved::{Builtin, Defer, Protocol};
use crate::check::{invalid, seconds, valid_server_name};
use crate::error::{Location, Result};
use crate::locate::SourceText;

/// Every server of one or more layers, by name.
#[derive(Debug, Default)]
pub(crate) struct ServersLayer(pub(crate) BTreeMap<String, ServerLayer>);

impl ServersLayer {
    /// Checks one layer's `[mcp_servers]`: names, one transport per server, durations.
    pub(crate) fn from_raw(
        raw: Option<BTreeMap<Spanned<String>, RawServer>>,
        source: &SourceText<'_>,
    ) -> Result<Self> {
        let mut servers = BTreeMap::new();
        for (name, server) in raw.unwrap_or_default() {
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
            servers.insert(name, server);
        }
        Ok(Self(servers))
    }

    /// Lays `later` over `self`, server by server.
    pub(crate) fn merge(&mut self, later: Self) {
        for (name, server) in later.0 {
            match self.0.get_mut(&name) {
                Some(existing) => existing.merge(server),
                None => {
                    self.0.insert(name, server);
                }
            }
        }
    }
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
    pub(crate) defer: Option<Defer>,
    pub(crate) roots: Option<RawRoots>,
    pub(crate) max_tool_bytes: Option<usize>,
    pub(crate) protocol: Option<Protocol>,
    pub(crate) enabled_tools: Option<Vec<String>>,
    pub(crate) disabled_tools: Option<Vec<String>>,
    pub(crate) tools: BTreeMap<String, ToolLayer>,
    /// Codex's `default_tools_approval_mode`, where it was written.
    pub(crate) approval: Option<LocatedApproval>,
    /// Codex's `supports_parallel_tool_calls`.
    pub(crate) parallel_tool_calls: Option<bool>,
    /// Codex keys read but not acted on, from every layer (each is said once).
    pub(crate) ignored: Vec<IgnoredKey>,
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
    /// Codex's `approval_mode`, where it was written.
    pub(crate) approval: Option<LocatedApproval>,
}

/// Which transport keys a layer set; `None` if it set none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransportKind {
    Command,
    Builtin,
    Http,
}

impl ServerLayer {
    /// Whether a layer so far says how to reach the server (a command, a built-in or a url), as
    /// opposed to only tuning one defined elsewhere (`enabled = false`, timeouts…).
    pub(crate) fn has_transport(&self) -> bool {
        self.kind().is_some()
    }

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
        // A note about the old transport's `env_vars` no longer applies.
        self.ignored.retain(|i| !i.key.contains(".env_vars["));
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
        over(&mut self.protocol, later.protocol);
        over(&mut self.enabled_tools, later.enabled_tools);
        over(&mut self.disabled_tools, later.disabled_tools);
        over(&mut self.approval, later.approval);
        over(&mut self.parallel_tool_calls, later.parallel_tool_calls);
        self.ignored.extend(later.ignored);
        for (name, tool) in later.tools {
            let slot = self.tools.entry(name).or_default();
            over(&mut slot.timeout, tool.timeout);
            over(&mut slot.max_output_chars, tool.max_output_chars);
            over(&mut slot.command_arg, tool.command_arg);
            over(&mut slot.edits_files, tool.edits_files);
            over(&mut slot.enabled, tool.enabled);
            over(&mut slot.approval, tool.approval);
        }
        self.at = later.at;
    }
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
    // Codex's keys, each its meaning here: `scopes` and `oauth_resource` are `oauth.scopes` and
    // `oauth.resource`, `startup_timeout_ms` is `startup_timeout_sec` in milliseconds.
    let mut oauth = raw.oauth.unwrap_or_default();
    let both = |key: &str| {
        invalid(
            at.clone(),
            &format!("mcp_servers.{name}.{key}"),
            &format!(
                "is also set as `oauth.{}`; keep one of them",
                key.trim_start_matches("oauth_")
            ),
        )
    };
    if let Some(scopes) = raw.scopes {
        if oauth.scopes.is_some() {
            return Err(both("scopes"));
        }
        oauth.scopes = Some(scopes);
    }
    if let Some(resource) = raw.oauth_resource {
        if oauth.resource.is_some() {
            return Err(both("oauth_resource"));
        }
        oauth.resource = Some(resource);
    }
    let startup_ms = raw.startup_timeout_ms.map(|ms| {
        let at = source.locate(ms.span().start);
        (at, *ms.get_ref())
    });
    let startup_timeout = match (
        timeout("startup_timeout_sec", raw.startup_timeout_sec)?,
        startup_ms,
    ) {
        (Some(secs), _) => Some(secs),
        (None, Some((at, 0))) => {
            return Err(invalid(
                at,
                &format!("mcp_servers.{name}.startup_timeout_ms"),
                "must be a positive number of milliseconds",
            ));
        }
        (None, Some((_, ms))) => Some(Duration::from_millis(ms)),
        (None, None) => None,
    };
    let protocol = match raw.protocol {
        None => None,
        Some(value) => Some(Protocol::parse(value.get_ref()).ok_or_else(|| {
            invalid(
                source.locate(value.span().start),
                &format!("mcp_servers.{name}.protocol"),
                &format!(
                    "{:?} is not one of \"2025-11-25\" (initialize), \"2026-07-28\" (server/discover) \
                     or \"auto\"",
                    value.get_ref()
                ),
            )
        })?),
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
            approval_mode,
        } = settings;
        let tool_layer = ToolLayer {
            timeout: timeout(&key, timeout_sec)?,
            max_output_chars,
            command_arg,
            edits_files,
            enabled,
            approval: codex::approval(
                &format!("mcp_servers.{name}.tools.{tool}.approval_mode"),
                approval_mode,
                source,
            )?,
        };
        tools.insert(tool, tool_layer);
    }
    let mut ignored = Vec::new();
    codex::refuse_bearer_token(name, raw.bearer_token, source)?;
    codex::environment(name, raw.experimental_environment, source, &mut ignored)?;
    let env_vars = codex::env_vars(name, raw.env_vars, source, &mut ignored)?;
    let approval = codex::approval(
        &format!("mcp_servers.{name}.default_tools_approval_mode"),
        raw.default_tools_approval_mode,
        source,
    )?;
    Ok(ServerLayer {
        approval,
        parallel_tool_calls: raw.supports_parallel_tool_calls,
        ignored,
        startup_timeout,
        protocol,
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
        env_vars,
        cwd: raw.cwd,
        url: raw.url,
        bearer_token_env_var: raw.bearer_token_env_var,
        http_headers: raw.http_headers.unwrap_or_default(),
        env_http_headers: raw.env_http_headers.unwrap_or_default(),
        oauth,
        enabled: raw.enabled,
        required: raw.required,
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools,
        tools,
        at,
    })
}
