//! `tern mcp login NAME` and `tern mcp logout NAME`.
//!
//! A login connects the way a run does, but sends no stored token and lets every refusal ask
//! for an authorization: the connection attempt stops there, the authorization runs (with no
//! clock but the person's: five minutes), and the next attempt connects with the new token —
//! so the scopes asked for are those of the request that was refused, as the spec's scope
//! selection wants, whichever request that is (`initialize`, `server/discover`, `tools/list`).

use std::{path::Path, sync::Arc};

use serde::Serialize;

use super::{
    AuthError, Authorizer, Mode, Notify, OAuthOptions, authorizer::with_configured_secret, net,
    store::Store, token,
};
use crate::{
    client::{Answers, TernClient},
    connect::connect,
    error::StartError,
    spec::{ElicitationPolicy, PoolOptions, ServerSpec, TransportSpec},
    stderr::StderrTail,
};

/// Authorizations one login may run (a server may ask again after the first, e.g. when it
/// moved to another authorization server, or for a step-up during the connection).
const MAX_LOGIN_FLOWS: u32 = 3;

/// What a login did.
#[derive(Debug, Clone, Serialize)]
pub struct LoginReport {
    pub server: String,
    /// The authorization server that issued the token.
    pub issuer: Option<String>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// Authorizations run: 0 when the server never asked for one.
    pub authorizations: u32,
    /// Tools the server lists with the new token.
    pub tools: usize,
    pub protocol_version: String,
    /// The file the credentials are in.
    pub stored_at: std::path::PathBuf,
}

/// Why a login failed.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// Only HTTP servers authorize with OAuth.
    #[error("server `{0}` is not an HTTP server (`url`); only those use OAuth")]
    NotHttp(String),
    /// The server's config turns OAuth off.
    #[error(
        "server `{0}` does not use OAuth (it has `bearer_token_env_var`, or `oauth.enabled = false`)"
    )]
    Disabled(String),
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The connection failed for another reason.
    #[error("cannot connect to server `{server}`: {error}")]
    Connect { server: String, error: StartError },
}

/// Authorizes tern for `spec` (an HTTP server) and stores the tokens; `notify` is told the URL
/// to open and what happens.
pub async fn login(
    spec: &ServerSpec,
    opts: &PoolOptions,
    notify: Notify,
) -> Result<LoginReport, LoginError> {
    let name = spec.name.clone();
    let TransportSpec::Http {
        url, bearer_token, ..
    } = &spec.transport
    else {
        return Err(LoginError::NotHttp(name));
    };
    let (Some(oauth), None, Some(dir)) = (&spec.oauth, bearer_token, &opts.oauth.store_dir) else {
        return Err(LoginError::Disabled(name));
    };
    let auth = Arc::new(Authorizer::new(
        &name,
        url,
        oauth.clone(),
        dir,
        &opts.oauth,
        Mode::Login,
        notify.clone(),
    ));
    let mut opts = opts.clone();
    opts.oauth = OAuthOptions {
        authorizers: Arc::new(std::sync::Mutex::new(
            [(name.clone(), auth.clone())].into_iter().collect(),
        )),
        ..opts.oauth.clone()
    };
    let stderr = StderrTail::new();
    let noise = crate::transport::StdoutNoise::default();
    let quiet: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
    loop {
        let handler = TernClient {
            answers: Arc::new(Answers {
                server: name.clone(),
                roots: None,
                elicitation: ElicitationPolicy::Decline,
                elicitor: None,
                events: Arc::new(|_| {}),
                person: Default::default(),
            }),
            progress: Arc::default(),
        };
        match connect(spec, &opts, handler, &stderr, &noise, None, quiet.clone()).await {
            Ok(conn) => {
                let tools = conn.tools.len();
                let protocol_version = conn.protocol_version.clone();
                let _ = conn.service.cancel().await;
                let (issuer, scopes) = auth.current().await.unzip();
                let stored_at = Store::new(dir, &name).path().to_path_buf();
                return Ok(LoginReport {
                    server: name,
                    issuer,
                    scopes: scopes.unwrap_or_default(),
                    authorizations: auth.flows().await,
                    tools,
                    protocol_version,
                    stored_at,
                });
            }
            Err(error) => {
                if auth.flows().await >= MAX_LOGIN_FLOWS {
                    return Err(AuthError::TooManyAttempts {
                        server: name,
                        attempts: MAX_LOGIN_FLOWS,
                    }
                    .into());
                }
                if !auth.run_deferred().await? {
                    return Err(match error {
                        StartError::Authorization(_) => match auth.take_failure() {
                            Some(e) => e.into(),
                            None => LoginError::Connect {
                                server: name,
                                error,
                            },
                        },
                        error => LoginError::Connect {
                            server: name,
                            error,
                        },
                    });
                }
                notify(format!("authorized; connecting to `{name}` again"));
            }
        }
    }
}

/// What a logout did.
#[derive(Debug, Clone, Serialize)]
pub struct LogoutReport {
    /// There were credentials to forget.
    pub removed: bool,
    /// Tokens the authorization servers were told to revoke.
    pub revoked: usize,
    /// Revocations that failed (the tokens are forgotten here anyway).
    pub warnings: Vec<String>,
}

/// Forgets what `tern mcp login NAME` stored, asking each authorization server that offers
/// revocation (RFC 7009) to revoke the tokens first.
pub async fn logout(
    store_dir: &Path,
    server: &str,
    spec: Option<&super::OAuthSpec>,
) -> Result<LogoutReport, AuthError> {
    let store = Store::new(store_dir, server);
    let Some(auth) = store.load()? else {
        return Ok(LogoutReport {
            removed: false,
            revoked: 0,
            warnings: Vec::new(),
        });
    };
    let http = net::client();
    let mut revoked = 0;
    let mut warnings = Vec::new();
    for (issuer, entry) in &auth.issuers {
        let (Some(tokens), Some(endpoint), Some(client)) =
            (&entry.token, &entry.revocation_endpoint, &entry.client)
        else {
            continue;
        };
        let client = match spec {
            Some(spec) => with_configured_secret(client.clone(), spec, issuer),
            None => client.clone(),
        };
        let mut pairs = vec![(tokens.access_token.as_str(), "access_token")];
        if let Some(r) = &tokens.refresh_token {
            pairs.insert(0, (r.as_str(), "refresh_token"));
        }
        for (token, hint) in pairs {
            match token::revoke(&http, endpoint, &client, token, hint).await {
                Ok(()) => revoked += 1,
                Err(e) => warnings.push(format!("{issuer}: {e}")),
            }
        }
    }
    let removed = store.remove()?;
    Ok(LogoutReport {
        removed,
        revoked,
        warnings,
    })
}
