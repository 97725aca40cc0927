//! `tern mcp login NAME` and `tern mcp logout NAME`: OAuth for HTTP servers.
//!
//! The login prints the authorization URL (and opens it: `TERN_OAUTH_BROWSER` says how) on
//! stderr, waits for the redirect on a loopback port, and reports on stdout what it got. The
//! credentials go to `$TERN_HOME/oauth/NAME.json`; no token is ever printed.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use tern_mcp::{PoolOptions, TransportSpec, oauth::Notify};

use crate::{
    agent::servers::{oauth_options, specs},
    error::UsageError,
    workspace::Workspace,
};

/// `tern mcp login NAME`.
pub async fn login(
    ws: &Workspace,
    name: &str,
    out: &mut dyn Write,
    err: Arc<Mutex<dyn Write + Send>>,
) -> anyhow::Result<i32> {
    let spec = specs(&ws.config, &ws.tern_exe, &ws.env, Some(name))
        .map_err(|e| UsageError(e.to_string()))?
        .into_iter()
        .next()
        .ok_or_else(|| UsageError(format!("no enabled server named `{name}` in the config")))?;
    if let TransportSpec::Unavailable { reason, .. } = &spec.transport {
        return Err(UsageError(reason.clone()).into());
    }
    let opts = PoolOptions {
        host_env: ws.env.clone(),
        oauth: oauth_options(&ws.paths, &ws.env, None),
        ..PoolOptions::default()
    };
    let notify: Notify = Arc::new(move |message| {
        if let Ok(mut e) = err.lock() {
            let _ = writeln!(e, "{message}");
        }
    });
    let report = tern_mcp::oauth::login(&spec, &opts, notify).await?;
    if report.authorizations == 0 {
        writeln!(
            out,
            "server `{name}` did not ask for authorization; nothing was stored ({} tools)",
            report.tools
        )?;
        return Ok(0);
    }
    let scopes = if report.scopes.is_empty() {
        "none named".to_string()
    } else {
        report.scopes.join(" ")
    };
    writeln!(
        out,
        "authorized tern for `{name}` with {} (scopes: {scopes}); {} tools, protocol {}; \
         credentials in {}",
        report
            .issuer
            .as_deref()
            .unwrap_or("the authorization server"),
        report.tools,
        report.protocol_version,
        report.stored_at.display()
    )?;
    Ok(0)
}

/// `tern mcp logout NAME`: works for a server no longer in the config too.
pub async fn logout(ws: &Workspace, name: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
    let spec = specs(&ws.config, &ws.tern_exe, &ws.env, Some(name))
        .ok()
        .and_then(|s| s.into_iter().next());
    let oauth = spec.as_ref().and_then(|s| s.oauth.as_ref());
    let report = tern_mcp::oauth::logout(&ws.paths.oauth_dir(), name, oauth).await?;
    if !report.removed {
        writeln!(out, "no credentials stored for `{name}`")?;
        return Ok(0);
    }
    for w in &report.warnings {
        writeln!(out, "warning: could not revoke a token at {w}")?;
    }
    writeln!(
        out,
        "forgot the credentials of `{name}`{}",
        if report.revoked > 0 {
            format!(" ({} token(s) revoked)", report.revoked)
        } else {
            String::new()
        }
    )?;
    Ok(0)
}
