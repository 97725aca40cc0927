//! Merged layers → validated, typed config.
//!
//! Structure is checked by `TryFrom` (which transport, which keys belong to it); `${VAR}` expansion is a
//! separate pass over the result because it needs the injected environment.

use std::collections::BTreeMap;

use crate::error::{ConfigError, Result};
use crate::expand::{EnvLookup, expand};
use crate::layers::{ServerLayer, ToolLayer, invalid};
use crate::raw::RawRoots;
use crate::server::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, Launch, ServerConfig, ServerRoots, ToolSettings,
    Transport,
};

impl From<ToolLayer> for ToolSettings {
    fn from(raw: ToolLayer) -> Self {
        Self {
            timeout: raw.timeout,
            max_output_chars: raw.max_output_chars,
            command_arg: raw.command_arg,
            edits_files: raw.edits_files,
            enabled: raw.enabled,
        }
    }
}

impl TryFrom<(String, ServerLayer)> for ServerConfig {
    type Error = ConfigError;

    fn try_from((name, raw): (String, ServerLayer)) -> Result<Self> {
        let at = raw.at.clone();
        let fail = |key: &str, message: &str| {
            invalid(at.clone(), &format!("mcp_servers.{name}.{key}"), message)
        };
        let launch = match (raw.command, raw.builtin) {
            (Some(command), _) if command.trim().is_empty() => {
                return Err(fail("command", "is empty"));
            }
            (Some(command), _) => Some(Launch::Command(command)),
            (None, Some(builtin)) => Some(Launch::Builtin(builtin)),
            (None, None) => None,
        };
        let transport = match (launch, raw.url) {
            (Some(launch), _) => {
                let http_only = [
                    ("bearer_token_env_var", raw.bearer_token_env_var.is_some()),
                    ("http_headers", !raw.http_headers.is_empty()),
                    ("env_http_headers", !raw.env_http_headers.is_empty()),
                ];
                if let Some((key, _)) = http_only.iter().find(|(_, set)| *set) {
                    return Err(fail(key, "applies to HTTP servers (`url`) only"));
                }
                Transport::Stdio {
                    launch,
                    args: raw.args.unwrap_or_default(),
                    env: raw.env,
                    env_vars: raw.env_vars.unwrap_or_default(),
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                let stdio_only = [
                    ("args", raw.args.is_some()),
                    ("env", !raw.env.is_empty()),
                    ("env_vars", raw.env_vars.is_some()),
                    ("cwd", raw.cwd.is_some()),
                ];
                if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
                    return Err(fail(
                        key,
                        "applies to stdio servers (`command` or `builtin`) only",
                    ));
                }
                if url.trim().is_empty() {
                    return Err(fail("url", "is empty"));
                }
                Transport::Http {
                    url,
                    bearer_token_env_var: raw.bearer_token_env_var,
                    headers: raw.http_headers,
                    env_headers: raw.env_http_headers,
                }
            }
            (None, None) => {
                return Err(invalid(
                    at.clone(),
                    &format!("mcp_servers.{name}"),
                    "needs `command` (a program), `builtin` (fs, shell or web) or `url` (an HTTP server)",
                ));
            }
        };
        // tern's own servers are part of tern; anyone else's hints are only hints until the
        // user says otherwise.
        let builtin = matches!(
            transport,
            Transport::Stdio {
                launch: Launch::Builtin(_),
                ..
            }
        );
        let roots = match raw.roots {
            None | Some(RawRoots::Enabled(true)) => ServerRoots::WorkingDirectory,
            Some(RawRoots::Enabled(false)) => ServerRoots::Off,
            Some(RawRoots::Paths(paths)) => {
                if let Some(p) = paths.iter().find(|p| !p.is_absolute()) {
                    return Err(fail(
                        "roots",
                        &format!("{} is not an absolute path", p.display()),
                    ));
                }
                ServerRoots::Paths(paths)
            }
        };
        Ok(Self {
            transport,
            roots,
            max_tool_bytes: raw.max_tool_bytes,
            enabled: raw.enabled.unwrap_or(true),
            required: raw.required.unwrap_or(false),
            startup_timeout: raw.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: raw.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT),
            max_output_chars: raw.max_output_chars,
            trust_annotations: raw.trust_annotations.unwrap_or(builtin),
            defer: raw.defer.unwrap_or_default(),
            enabled_tools: raw.enabled_tools,
            disabled_tools: raw.disabled_tools.unwrap_or_default(),
            tools: raw
                .tools
                .into_iter()
                .map(|(tool, settings)| (tool, settings.into()))
                .collect(),
            defined_at: at,
            name,
        })
    }
}

/// Expands `${VAR}`s in a server's `args`, `env` values, `url` and `http_headers` values.
pub(crate) fn expand_server(server: &mut ServerConfig, env: EnvLookup<'_>) -> Result<()> {
    let name = server.name.clone();
    let at = server.defined_at.clone();
    let run = |key: String, value: &mut String| -> Result<()> {
        *value = expand(value, env).map_err(|err| ConfigError::Expand {
            at: at.clone(),
            server: name.clone(),
            key,
            error: err,
        })?;
        Ok(())
    };
    match &mut server.transport {
        Transport::Stdio { args, env, .. } => {
            for (i, arg) in args.iter_mut().enumerate() {
                run(format!("args[{i}]"), arg)?;
            }
            expand_values("env", env, run)?;
        }
        Transport::Http { url, headers, .. } => {
            run("url".to_owned(), url)?;
            expand_values("http_headers", headers, run)?;
        }
    }
    Ok(())
}

fn expand_values(
    table: &str,
    values: &mut BTreeMap<String, String>,
    mut run: impl FnMut(String, &mut String) -> Result<()>,
) -> Result<()> {
    for (key, value) in values.iter_mut() {
        run(format!("{table}.{key}"), value)?;
    }
    Ok(())
}
