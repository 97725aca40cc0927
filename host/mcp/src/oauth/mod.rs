//! OAuth 2.1 for streamable HTTP servers, as the MCP authorization spec describes it (both
//! revisions, 2025-11-25 and 2026-07-28).
//!
//! A server that answers `401` with a `WWW-Authenticate: Bearer` challenge is authorized once,
//! with `tern mcp login NAME` ([`login`]); the tokens are stored under `$TERN_HOME/oauth`
//! ([`store`]), sent with every request, refreshed silently when they expire
//! ([`authorizer`]), and forgotten with `tern mcp logout NAME` ([`logout`]). A run that meets a
//! token the server no longer takes, and cannot refresh it, fails that server with one message
//! naming `tern mcp login NAME` — unless an opener is configured (`TERN_OAUTH_BROWSER`), in
//! which case the run authorizes again by itself, a bounded number of times.
//!
//! Pieces: [`challenge`] (the `WWW-Authenticate` header), [`metadata`] (RFC 9728 and RFC 8414
//! discovery), [`registration`] (pre-registered, Client ID Metadata Document, or dynamic
//! registration; token endpoint authentication), [`pkce`], [`redirect`] (the loopback listener
//! and the opener), [`token`] (code exchange, refresh, revocation), [`flow`] (one whole
//! authorization), [`http`] (the HTTP client of the MCP transport that carries the token).

mod assertion;
mod authorizer;
mod challenge;
mod flow;
pub(crate) mod http;
mod login;
mod metadata;
mod net;
mod pkce;
mod redirect;
mod registration;
mod store;
mod token;

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

pub use assertion::{ClientKey, KeyError, SigningAlg};
pub(crate) use authorizer::{Authorizer, Mode};
pub use login::{LoginReport, login, logout};
pub use redirect::{Browser, may_open};
pub use store::stored_secrets;

/// Where progress of an authorization is told (the URL to open, the issuer used): stderr for
/// `tern mcp login`, a notice event during a run. Never given a token.
pub type Notify = Arc<dyn Fn(String) + Send + Sync>;

/// Where new tokens are told (the redactors' secret lists).
pub type TokenSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A server's `[mcp_servers.NAME.oauth]`, resolved (the secret read from its variable).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthSpec {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, when it is a confidential client.
    pub client_secret: Option<String>,
    /// Its private key, when it authenticates with signed assertions (`private_key_jwt`).
    pub client_key: Option<ClientKey>,
    /// The scopes to ask for, instead of those the server's challenge or metadata name.
    pub scopes: Option<Vec<String>>,
    /// The loopback port of the redirect URI, for a client registered with a fixed one.
    pub redirect_port: Option<u16>,
    /// The `https` URL of tern's Client ID Metadata Document, used as the client id where the
    /// authorization server supports those.
    pub client_metadata_url: Option<String>,
    /// The RFC 8707 resource to ask tokens for, instead of the one the server's protected
    /// resource metadata names (Codex's `oauth_resource`).
    pub resource: Option<String>,
}

impl std::fmt::Debug for OAuthSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSpec")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_key", &self.client_key)
            .field("scopes", &self.scopes)
            .field("redirect_port", &self.redirect_port)
            .field("resource", &self.resource)
            .field("client_metadata_url", &self.client_metadata_url)
            .finish()
    }
}

/// Pool-wide OAuth settings.
#[derive(Clone, Default)]
pub struct OAuthOptions {
    /// `$TERN_HOME/oauth`. `None`: tern never authorizes (a `401` is an ordinary failure).
    pub store_dir: Option<PathBuf>,
    /// How an authorization URL is opened.
    pub browser: Browser,
    /// A run may authorize by itself (`TERN_OAUTH_BROWSER` is set: the opener needs nobody),
    /// for a step-up or a revoked token; otherwise only `tern mcp login` does.
    pub unattended: bool,
    /// Told every token a run obtains (authorizing or refreshing), for the redactors.
    pub on_token: Option<TokenSink>,
    /// One authorizer per server for the pool's life, so its limits (re-authorizations,
    /// step-ups) hold across reconnects.
    authorizers: Arc<Mutex<HashMap<String, Arc<Authorizer>>>>,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("store_dir", &self.store_dir)
            .field("browser", &self.browser)
            .field("unattended", &self.unattended)
            .finish_non_exhaustive()
    }
}

impl OAuthOptions {
    /// The authorizer of server `name` at `url`, made on first use; `None` when OAuth is off
    /// for it (no store, or no `oauth` spec).
    pub(crate) fn authorizer(
        &self,
        name: &str,
        url: &str,
        spec: Option<&OAuthSpec>,
        notify: Notify,
    ) -> Option<Arc<Authorizer>> {
        let spec = spec?;
        let dir = self.store_dir.as_ref()?;
        let mut map = self.authorizers.lock().ok()?;
        let made = map.entry(name.to_string()).or_insert_with(|| {
            let mode = if self.unattended {
                Mode::Unattended
            } else {
                Mode::Run
            };
            Arc::new(Authorizer::new(
                name,
                url,
                spec.clone(),
                dir,
                self,
                mode,
                notify,
            ))
        });
        Some(made.clone())
    }
}

/// Why an authorization did not happen. Every message is one line a person can act on, and
/// none carries a token, a code or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Only `tern mcp login` can get the server a usable token now.
    #[error("server `{server}` needs authorization ({why}): run `tern mcp login {server}`")]
    LoginRequired { server: String, why: String },
    /// The server wants scopes the token already has: authorizing again would not help.
    #[error(
        "server `{server}` refuses the token for lacking scope `{scopes}`, which it was granted; \
         authorizing again would not help"
    )]
    ScopeRefused { server: String, scopes: String },
    /// The server kept asking for new authorizations.
    #[error("server `{server}` kept asking for authorization; stopped after {attempts} attempts")]
    TooManyAttempts { server: String, attempts: u32 },
    /// The metadata a server or authorization server published is missing or unusable.
    #[error("{0}")]
    Discovery(String),
    /// The protected resource metadata is about another resource (RFC 9728 §3.3).
    #[error(
        "the server's protected resource metadata is for `{resource}`, not for `{server}`; \
         refused (RFC 9728)"
    )]
    ResourceMismatch { resource: String, server: String },
    /// The authorization server metadata names another issuer (RFC 8414 §3.3).
    #[error(
        "the authorization server metadata at {at} names the issuer `{found}`, not `{expected}`; \
         refused (RFC 8414)"
    )]
    IssuerMismatch {
        expected: String,
        found: String,
        at: String,
    },
    /// The authorization server said no.
    #[error("the authorization server refused {step}: {reason}")]
    Refused { step: &'static str, reason: String },
    /// The redirect did not come back, or came back wrong.
    #[error("{0}")]
    Callback(String),
    /// A request to a metadata location or the authorization server failed.
    #[error("{0}")]
    Http(String),
    /// Something on this machine failed (the credentials file, the listener).
    #[error("{0}")]
    Local(String),
    /// An authorization is needed and `tern mcp login` runs it (between connection attempts).
    #[error("the server asks for authorization")]
    Deferred,
}
