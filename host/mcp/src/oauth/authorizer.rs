//! One server's authorization during a connection's life: which token to send, and what to do
//! when the server refuses it.
//!
//! - `401`: a token another request or process already replaced is used at once; else an
//!   expired token is refreshed, silently, once (a token that was refused within a minute of
//!   being refreshed is never refreshed again: no refresh loop); else a new authorization is
//!   needed, which only `tern mcp login` runs ([`Mode::Run`]) unless an opener that needs
//!   nobody is configured ([`Mode::Unattended`], at most [`MAX_FLOWS`] times).
//! - `403 insufficient_scope` (step-up): a new authorization asking for the scopes held plus
//!   the ones the server names — unless the token already has those (authorizing again would
//!   not help) or [`MAX_STEP_UPS`] step-ups were made.
//! - Before refreshing, the server's protected resource metadata is read again: a server that
//!   moved to another authorization server gets a new registration there, never the old one's
//!   refresh token (SEP-2352).

use std::{
    path::Path,
    sync::Mutex as StdMutex,
    time::{Duration, Instant},
};

use tokio::sync::Mutex;

use super::{
    AuthError, Browser, Notify, OAuthOptions, OAuthSpec, TokenSink,
    challenge::Challenge,
    flow::{self, FlowContext},
    metadata, net,
    store::{ServerAuth, Store, StoredClient},
    token::{self, RefreshError},
};

/// New authorizations one unattended run may make for one server.
pub(crate) const MAX_FLOWS: u32 = 2;
/// Step-ups one run may make for one server.
pub(crate) const MAX_STEP_UPS: u32 = 2;
/// How long an unattended authorization may wait for its redirect.
const UNATTENDED_WAIT: Duration = Duration::from_secs(60);
/// How long `tern mcp login` waits for the person.
pub(crate) const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// A token refused this soon after it was refreshed is not refreshed again.
const FRESH: Duration = Duration::from_secs(60);

/// Who may run an authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A run: only `tern mcp login` authorizes; a refused token fails the server with a
    /// message naming it.
    Run,
    /// A run with an opener that needs nobody (`TERN_OAUTH_BROWSER`): it authorizes itself.
    Unattended,
    /// `tern mcp login`: no stored token is sent; a needed authorization is handed back to the
    /// login, which runs it between connection attempts.
    Login,
}

/// How the server refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Denied {
    /// `401`: no token, or one it does not take.
    Unauthorized,
    /// `403` with `error="insufficient_scope"`.
    InsufficientScope,
}

#[derive(Default)]
struct State {
    auth: Option<ServerAuth>,
    /// Login mode before its first authorization: send no token.
    fresh: bool,
    flows: u32,
    step_ups: u32,
    /// The token the last refresh gave, and when.
    refreshed: Option<(String, Instant)>,
    /// Why the stored token was dropped, for the message that follows.
    lost: Option<&'static str>,
    /// Login mode: the authorization the last connection attempt needed.
    deferred: Option<(Challenge, Option<Vec<String>>)>,
}

/// See the module documentation.
pub(crate) struct Authorizer {
    server: String,
    url: String,
    spec: OAuthSpec,
    store: Store,
    browser: Browser,
    mode: Mode,
    notify: Notify,
    on_token: Option<TokenSink>,
    http: reqwest::Client,
    state: Mutex<State>,
    /// The last failure, for the connection's error.
    failure: StdMutex<Option<AuthError>>,
}

impl Authorizer {
    /// An authorizer for server `server` at `url`, its credentials in `store_dir`, opening
    /// URLs and reporting new tokens as `options` say.
    pub(crate) fn new(
        server: &str,
        url: &str,
        spec: OAuthSpec,
        store_dir: &Path,
        options: &OAuthOptions,
        mode: Mode,
        notify: Notify,
    ) -> Self {
        Self {
            server: server.to_string(),
            url: url.to_string(),
            spec,
            store: Store::new(store_dir, server),
            browser: options.browser.clone(),
            mode,
            notify,
            on_token: options.on_token.clone(),
            http: net::client(),
            state: Mutex::new(State {
                fresh: mode == Mode::Login,
                ..State::default()
            }),
            failure: StdMutex::new(None),
        }
    }

    /// The server's configured name.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// The token to send now: the stored one, refreshed first when it has expired. `None`: send
    /// none (the server's `401` then says how to get one).
    pub(crate) async fn bearer(&self) -> Option<String> {
        let mut st = self.state.lock().await;
        if st.fresh {
            return None;
        }
        // Read once; a refusal reads the file again (another process may have logged in).
        if st.auth.is_none()
            && let Err(e) = self.reload(&mut st)
        {
            self.fail(e);
            return None;
        }
        let token = st.auth.as_ref()?.token()?.clone();
        if token.expired() && token.refresh_token.is_some() {
            match self.refresh(&mut st).await {
                Ok(access) => return Some(access),
                Err(RefreshError::Refused(_)) => return None,
                // Unreachable authorization server: the old token may still be taken.
                Err(RefreshError::Failed(_)) => {}
            }
        }
        Some(token.access_token)
    }

    /// What to send instead of `used`, which the server refused with `header`
    /// (`WWW-Authenticate`). See the module documentation for the rules.
    pub(crate) async fn recover(
        &self,
        used: Option<&str>,
        header: &str,
        denied: Denied,
    ) -> Result<String, AuthError> {
        let result = self.recover_inner(used, header, denied).await;
        if let Err(e) = &result
            && *e != AuthError::Deferred
        {
            self.fail(e.clone());
        }
        result
    }

    async fn recover_inner(
        &self,
        used: Option<&str>,
        header: &str,
        denied: Denied,
    ) -> Result<String, AuthError> {
        let mut st = self.state.lock().await;
        let challenge = Challenge::parse(header);
        if !st.fresh {
            self.reload(&mut st)?;
            // Replaced meanwhile (by a concurrent request, or another tern process).
            if let Some(current) = current_access(&st)
                && Some(current.as_str()) != used
            {
                return Ok(current);
            }
        }
        match denied {
            Denied::Unauthorized => {
                if let Some(used) = used
                    && self.refreshable(&st, used)
                    && self.same_issuer(&st, &challenge).await
                {
                    match self.refresh(&mut st).await {
                        Ok(access) => return Ok(access),
                        Err(RefreshError::Refused(_)) => {}
                        Err(RefreshError::Failed(e)) => return Err(e),
                    }
                }
                let why = match (used, st.lost) {
                    (_, Some(lost)) => lost,
                    (None, None) => "it asks for it",
                    (Some(_), None) => "it no longer takes the token: expired or revoked",
                };
                self.authorize(&mut st, challenge, None, why).await
            }
            Denied::InsufficientScope => {
                let Some(challenged) = challenge.scope.clone() else {
                    return Err(AuthError::Discovery(format!(
                        "server `{}` refuses the token for insufficient scope without naming the scope",
                        self.server
                    )));
                };
                let granted = st
                    .auth
                    .as_ref()
                    .and_then(|a| a.token())
                    .map(|t| t.scopes.clone())
                    .unwrap_or_default();
                if challenged.iter().all(|s| granted.contains(s)) {
                    return Err(AuthError::ScopeRefused {
                        server: self.server.clone(),
                        scopes: challenged.join(" "),
                    });
                }
                if st.step_ups >= MAX_STEP_UPS {
                    return Err(AuthError::TooManyAttempts {
                        server: self.server.clone(),
                        attempts: st.step_ups,
                    });
                }
                st.step_ups += 1;
                let mut union = granted;
                for s in challenged {
                    if !union.contains(&s) {
                        union.push(s);
                    }
                }
                self.authorize(&mut st, challenge, Some(union), "it needs more scope")
                    .await
            }
        }
    }

    /// A new authorization, as the mode allows.
    async fn authorize(
        &self,
        st: &mut State,
        challenge: Challenge,
        asked: Option<Vec<String>>,
        why: &'static str,
    ) -> Result<String, AuthError> {
        match self.mode {
            Mode::Login => {
                st.deferred = Some((challenge, asked));
                Err(AuthError::Deferred)
            }
            Mode::Run => {
                if let Some(asked) = asked
                    && let Some(auth) = st.auth.as_mut()
                {
                    // The next `tern mcp login` asks for these too.
                    auth.wanted_scopes = asked;
                    let _ = self.store.save(auth);
                }
                let why = match &st.auth.as_ref().map(|a| a.wanted_scopes.join(" ")) {
                    Some(w) if !w.is_empty() && why == "it needs more scope" => {
                        format!("it needs scope `{w}`")
                    }
                    _ => why.to_string(),
                };
                Err(AuthError::LoginRequired {
                    server: self.server.clone(),
                    why,
                })
            }
            Mode::Unattended => {
                if st.flows >= MAX_FLOWS {
                    return Err(AuthError::TooManyAttempts {
                        server: self.server.clone(),
                        attempts: st.flows,
                    });
                }
                st.flows += 1;
                (self.notify)(format!(
                    "server `{}` needs authorization ({why}); authorizing again",
                    self.server
                ));
                self.run_flow(st, &challenge, asked, UNATTENDED_WAIT).await
            }
        }
    }

    /// Login mode: runs the authorization the last connection attempt needed; `false` when none
    /// was needed.
    pub(crate) async fn run_deferred(&self) -> Result<bool, AuthError> {
        let mut st = self.state.lock().await;
        let Some((challenge, asked)) = st.deferred.take() else {
            return Ok(false);
        };
        if st.auth.is_none() {
            st.auth = Some(self.store.load_for(&self.url)?);
        }
        st.flows += 1;
        self.run_flow(&mut st, &challenge, asked, LOGIN_WAIT)
            .await?;
        Ok(true)
    }

    /// Issuer and scopes of the current token, for the login's report.
    pub(crate) async fn current(&self) -> Option<(String, Vec<String>)> {
        let st = self.state.lock().await;
        let auth = st.auth.as_ref()?;
        Some((auth.issuer.clone()?, auth.token()?.scopes.clone()))
    }

    /// Authorizations run so far.
    pub(crate) async fn flows(&self) -> u32 {
        self.state.lock().await.flows
    }

    async fn run_flow(
        &self,
        st: &mut State,
        challenge: &Challenge,
        asked: Option<Vec<String>>,
        wait: Duration,
    ) -> Result<String, AuthError> {
        let mut auth = match st.auth.clone() {
            Some(a) => a,
            None => self.store.load_for(&self.url)?,
        };
        let cx = FlowContext {
            http: &self.http,
            server: &self.server,
            url: &self.url,
            spec: &self.spec,
            browser: &self.browser,
            notify: &self.notify,
            wait,
        };
        flow::authorize(&cx, &mut auth, challenge, asked).await?;
        strip_configured_secret(&mut auth, &self.spec);
        self.store.save(&auth)?;
        if let Some(t) = auth.token() {
            self.told(t);
        }
        let access = auth
            .token()
            .map(|t| t.access_token.clone())
            .ok_or_else(|| AuthError::Local("the authorization stored no token".into()))?;
        st.auth = Some(auth);
        st.fresh = false;
        st.lost = None;
        st.refreshed = None;
        Ok(access)
    }

    /// Re-reads the file: another tern process may have logged in or refreshed meanwhile.
    fn reload(&self, st: &mut State) -> Result<(), AuthError> {
        st.auth = Some(self.store.load_for(&self.url)?);
        Ok(())
    }

    /// Whether `used` is the current token, has a refresh token, and was not itself just given
    /// by a refresh.
    fn refreshable(&self, st: &State, used: &str) -> bool {
        let Some(token) = st.auth.as_ref().and_then(|a| a.token()) else {
            return false;
        };
        let just_refreshed = st
            .refreshed
            .as_ref()
            .is_some_and(|(t, at)| t == used && at.elapsed() < FRESH);
        token.access_token == used && token.refresh_token.is_some() && !just_refreshed
    }

    /// Whether the server's metadata still names the issuer of the current token (an
    /// unreadable metadata document does not stop a refresh).
    async fn same_issuer(&self, st: &State, challenge: &Challenge) -> bool {
        let Some(current) = st.auth.as_ref().and_then(|a| a.issuer.clone()) else {
            return false;
        };
        match metadata::resource_metadata(&self.http, &self.url, challenge).await {
            Ok(prm) => prm.authorization_servers.first() == Some(&current),
            Err(_) => true,
        }
    }

    async fn refresh(&self, st: &mut State) -> Result<String, RefreshError> {
        let refused = |why: &str| RefreshError::Refused(why.to_string());
        let Some(mut auth) = st.auth.clone() else {
            return Err(refused("nothing stored"));
        };
        let Some(issuer) = auth.issuer.clone() else {
            return Err(refused("no issuer"));
        };
        let resource = auth.resource.clone().unwrap_or_else(|| self.url.clone());
        let entry = auth.entry(&issuer);
        let (Some(current), Some(endpoint), Some(client)) = (
            entry.token.clone(),
            entry.token_endpoint.clone(),
            entry.client.clone(),
        ) else {
            return Err(refused("no token endpoint or client"));
        };
        let client = with_configured_secret(client, &self.spec, &issuer);
        match token::refresh(&self.http, &endpoint, &client, &current, &resource).await {
            Ok(new) => {
                self.told(&new);
                let access = new.access_token.clone();
                entry.token = Some(new);
                self.store.save(&auth).map_err(RefreshError::Failed)?;
                st.auth = Some(auth);
                st.refreshed = Some((access.clone(), Instant::now()));
                st.lost = None;
                Ok(access)
            }
            Err(RefreshError::Refused(why)) => {
                // Another tern process may have refreshed first (a rotated refresh token is
                // refused the second time): its token is the one to use, not to delete.
                if let Ok(on_disk) = self.store.load_for(&self.url)
                    && let Some(theirs) = on_disk.token()
                    && theirs.access_token != current.access_token
                {
                    let access = theirs.access_token.clone();
                    st.auth = Some(on_disk);
                    return Ok(access);
                }
                entry.token = None;
                let _ = self.store.save(&auth);
                st.auth = Some(auth);
                st.lost = Some("its token expired or was revoked, and refreshing it was refused");
                Err(RefreshError::Refused(why))
            }
            Err(e) => Err(e),
        }
    }

    /// Tells the token sink about a new token set.
    fn told(&self, t: &super::store::TokenSet) {
        if let Some(sink) = &self.on_token {
            sink(&t.access_token);
            if let Some(r) = &t.refresh_token {
                sink(r);
            }
        }
    }

    fn fail(&self, e: AuthError) {
        if let Ok(mut f) = self.failure.lock() {
            *f = Some(e);
        }
    }

    /// The last failure, taken (the connection's error names it).
    pub(crate) fn take_failure(&self) -> Option<AuthError> {
        self.failure.lock().ok().and_then(|mut f| f.take())
    }
}

fn current_access(st: &State) -> Option<String> {
    st.auth
        .as_ref()
        .and_then(|a| a.token())
        .map(|t| t.access_token.clone())
}

/// A configured client's secret stays in its environment variable, not in the file.
fn strip_configured_secret(auth: &mut ServerAuth, spec: &OAuthSpec) {
    for entry in auth.issuers.values_mut() {
        if let Some(c) = entry.client.as_mut()
            && spec.client_id.as_deref() == Some(c.client_id.as_str())
        {
            c.client_secret = None;
        }
    }
}

/// The stored client, with the configured secret (or private key, signing for `issuer`) when
/// it is the configured client.
pub(crate) fn with_configured_secret(
    mut client: StoredClient,
    spec: &OAuthSpec,
    issuer: &str,
) -> StoredClient {
    if spec.client_id.as_deref() == Some(client.client_id.as_str()) {
        if client.client_secret.is_none() {
            client.client_secret = spec.client_secret.clone();
        }
        if client.signer.is_none()
            && let Some(key) = &spec.client_key
        {
            client.signer = Some(super::store::Signer {
                key: key.clone(),
                audience: issuer.to_string(),
            });
        }
    }
    client
}
