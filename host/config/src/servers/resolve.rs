//! Merged `[mcp_servers]` layers → validated, typed [`ServerConfig`]s.
//!
//! Structure is checked by `TryFrom` (which transport, which keys belong to it); `${VAR}` expansion is a
//! separate pass over the result because it needs the injected environment.

use std::collections::BTreeMap;

use super::layer::{ServerLayer, ServersLayer, ToolLayer};
use super::raw::{RawOAuth, RawRoots};
use super::resolved::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, Launch, OAuthConfig, PrivateKeySource,
    SIGNING_ALGS, ServerConfig, ServerRoots, ToolSettings, Transport,
};
use crate::check::invalid;
use crate::error::{ConfigError, Result};
use crate::expand::{EnvLookup, expand};

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
                    ("oauth", raw.oauth.is_set()),
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
                let oauth = oauth_config(raw.oauth, raw.bearer_token_env_var.is_some())
                    .map_err(|(key, message)| fail(&format!("oauth.{key}"), &message))?;
                Transport::Http {
                    url,
                    bearer_token_env_var: raw.bearer_token_env_var,
                    headers: raw.http_headers,
                    env_headers: raw.env_http_headers,
                    oauth,
                }
            }
            (None, None) => {
                return Err(invalid(
                    at.clone(),
                    &format!("mcp_servers.{name}"),
                    "needs `command` (a program), `builtin` (fs, shell, web or lsp) or `url` (an HTTP server)",
                ));
            }
        };
        // tern's own servers are part of tern; anyone else's hints are only hints until the
        // user says otherwise.
        let builtin = transport.builtin().is_some();
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
            protocol: raw.protocol.unwrap_or_default(),
            enabled: raw.enabled.unwrap_or(true),
            required: raw.required.unwrap_or(false),
            startup_timeout: raw.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: raw.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT),
            max_output_chars: raw.max_output_chars,
            trust_annotations: raw.trust_annotations.unwrap_or(builtin),
            defer: raw.defer.unwrap_or_default(),
            enabled_tools: raw.enabled_tools,
            disabled_tools: raw.disabled_tools.unwrap_or_default(),
            parallel_tool_calls: raw.parallel_tool_calls.unwrap_or(false),
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

/// `[mcp_servers.NAME.oauth]`, checked: `None` when OAuth is off (a static bearer token, or
/// `enabled = false`). Errors are `(key, message)`.
fn oauth_config(
    raw: RawOAuth,
    static_token: bool,
) -> std::result::Result<Option<OAuthConfig>, (&'static str, String)> {
    if raw.enabled == Some(false) {
        return Ok(None);
    }
    if static_token {
        if raw.is_set() {
            return Err((
                "enabled",
                "a server with `bearer_token_env_var` sends that token; OAuth settings do not apply \
                 (remove one of them)"
                    .to_string(),
            ));
        }
        return Ok(None);
    }
    if raw.client_secret_env.is_some() && raw.client_id.is_none() {
        return Err((
            "client_secret_env",
            "needs `client_id`: a secret belongs to a registered client".to_string(),
        ));
    }
    let private_key = private_key(&raw)?;
    if raw
        .client_id
        .as_deref()
        .is_some_and(|id| id.trim().is_empty())
    {
        return Err(("client_id", "is empty".to_string()));
    }
    if let Some(scopes) = &raw.scopes
        && let Some(bad) = scopes.iter().find(|s| {
            s.is_empty()
                || s.chars()
                    .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        })
    {
        return Err((
            "scopes",
            format!("{bad:?} is not a scope (one word each, no spaces or quotes)"),
        ));
    }
    if raw.redirect_port == Some(0) {
        return Err((
            "redirect_port",
            "must be a port from 1 to 65535".to_string(),
        ));
    }
    if let Some(url) = &raw.client_metadata_url
        && !url.starts_with("https://")
    {
        return Err((
            "client_metadata_url",
            "must be an https URL (a Client ID Metadata Document is fetched by the authorization \
             server)"
                .to_string(),
        ));
    }
    if let Some(resource) = &raw.resource
        && !(resource.starts_with("https://") || resource.starts_with("http://"))
    {
        return Err((
            "resource",
            format!("{resource:?} is not an absolute http(s) URL (RFC 8707 resource indicator)"),
        ));
    }
    Ok(Some(OAuthConfig {
        private_key,
        signing_alg: raw.signing_alg,
        key_id: raw.key_id,
        resource: raw.resource,
        client_id: raw.client_id,
        client_secret_env: raw.client_secret_env,
        scopes: raw.scopes,
        redirect_port: raw.redirect_port,
        client_metadata_url: raw.client_metadata_url,
    }))
}

/// `private_key_file` / `private_key_env` (with `signing_alg`, `key_id`): one key, for a
/// registered client that has no secret.
fn private_key(
    raw: &RawOAuth,
) -> std::result::Result<Option<PrivateKeySource>, (&'static str, String)> {
    let source = match (&raw.private_key_file, &raw.private_key_env) {
        (Some(_), Some(_)) => {
            return Err((
                "private_key_env",
                "and `private_key_file` both name a key; keep one".to_string(),
            ));
        }
        (Some(path), None) => {
            if !(path.starts_with("~/") || std::path::Path::new(path).is_absolute()) {
                return Err((
                    "private_key_file",
                    format!("{path:?} is relative; write an absolute path or one starting with ~/"),
                ));
            }
            Some(("private_key_file", PrivateKeySource::File(path.clone())))
        }
        (None, Some(var)) if var.trim().is_empty() => {
            return Err(("private_key_env", "is empty".to_string()));
        }
        (None, Some(var)) => Some(("private_key_env", PrivateKeySource::Env(var.clone()))),
        (None, None) => None,
    };
    if let Some(alg) = &raw.signing_alg
        && !SIGNING_ALGS.contains(&alg.as_str())
    {
        return Err((
            "signing_alg",
            format!(
                "{alg:?} is not an algorithm tern signs with; expected one of {}",
                SIGNING_ALGS.join(", ")
            ),
        ));
    }
    let Some((key, source)) = source else {
        for (set, name) in [
            (raw.signing_alg.is_some(), "signing_alg"),
            (raw.key_id.is_some(), "key_id"),
        ] {
            if set {
                return Err((
                    name,
                    "needs `private_key_file` or `private_key_env`: it describes the client's key"
                        .to_string(),
                ));
            }
        }
        return Ok(None);
    };
    if raw.client_id.is_none() {
        return Err((
            key,
            "needs `client_id`: a private key belongs to a registered client".to_string(),
        ));
    }
    if raw.client_secret_env.is_some() {
        return Err((
            key,
            "and `client_secret_env` are two ways for the client to authenticate; keep one"
                .to_string(),
        ));
    }
    Ok(Some(source))
}

/// Expands `${VAR}`s in a server's `args`, `env` values, `url` and `http_headers` values.
fn expand_server(server: &mut ServerConfig, env: EnvLookup<'_>) -> Result<()> {
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

impl ServersLayer {
    /// Every server, checked and with its `${VAR}`s expanded. A disabled server whose variables
    /// are unset is kept unexpanded rather than failing the whole config.
    pub(crate) fn resolve(self, env: EnvLookup<'_>) -> Result<BTreeMap<String, ServerConfig>> {
        let mut mcp_servers = BTreeMap::new();
        for (name, raw) in self.0 {
            let mut server = ServerConfig::try_from((name.clone(), raw))?;
            let mut expanded = server.clone();
            match expand_server(&mut expanded, env) {
                Ok(()) => server = expanded,
                Err(err) if server.enabled => return Err(err),
                Err(_) => {}
            }
            mcp_servers.insert(name, server);
        }
        Ok(mcp_servers)
    }
}
