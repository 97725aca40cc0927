//! One authorization, start to finish (the MCP spec's authorization flow): discover the
//! authorization server, pick the scopes and the client, send the person (or the configured
//! opener) to the authorization URL with PKCE, `state` and `resource`, take the code at the
//! loopback redirect, check `iss` (RFC 9207), and exchange the code for tokens. An authorization
//! server that grants only client credentials gets the configured client's own token request
//! instead (SEP-1046).

use std::time::Duration;

use super::{
    AuthError, Notify, OAuthSpec,
    challenge::Challenge,
    metadata::{self, ServerMetadata},
    pkce::{Pkce, random_token},
    redirect::{Browser, Listener},
    registration,
    store::ServerAuth,
    token,
};

/// What an authorization needs besides the stored state.
pub(crate) struct FlowContext<'a> {
    pub(crate) http: &'a reqwest::Client,
    /// The server's configured name, for messages.
    pub(crate) server: &'a str,
    /// The MCP endpoint.
    pub(crate) url: &'a str,
    pub(crate) spec: &'a OAuthSpec,
    pub(crate) browser: &'a Browser,
    pub(crate) notify: &'a Notify,
    /// How long to wait for the redirect.
    pub(crate) wait: Duration,
}

/// Authorizes for the server `challenge` came from, asking for `asked` scopes (those of the
/// challenge, or a step-up's union) when given. On success the new token is `auth`'s current
/// one, under the issuer that gave it.
pub(crate) async fn authorize(
    cx: &FlowContext<'_>,
    auth: &mut ServerAuth,
    challenge: &Challenge,
    asked: Option<Vec<String>>,
) -> Result<(), AuthError> {
    let mut resource = metadata::resource_metadata(cx.http, cx.url, challenge).await?;
    // A configured resource (Codex's `oauth_resource`) is the one tokens are asked for.
    if let Some(configured) = &cx.spec.resource {
        resource.resource.clone_from(configured);
    }
    let Some(issuer) = resource.authorization_servers.first().cloned() else {
        return Err(AuthError::Discovery(
            "the protected resource metadata names no authorization server".into(),
        ));
    };
    let server = metadata::server_metadata(cx.http, &issuer).await?;

    let previous = auth.token().map(|t| t.scopes.clone()).unwrap_or_default();
    let scopes = select_scopes(
        cx.spec.scopes.as_deref(),
        asked.as_deref().or(challenge.scope.as_deref()),
        resource.scopes_supported.as_deref(),
        &previous,
        &auth.wanted_scopes,
        &server,
    );

    let known = auth.issuers.get(&issuer).and_then(|e| e.client.clone());
    if server.client_credentials_only() {
        return client_credentials(cx, auth, &server, &issuer, resource.resource, &scopes).await;
    }
    let listener = bind_listener(cx.spec, known.as_ref()).await?;
    let redirect_uri = listener.redirect_uri();
    let client =
        registration::client(cx.http, cx.spec, &server, known.as_ref(), &redirect_uri).await?;
    // Kept for refreshing and revoking later (a configured secret is taken out before saving).
    auth.entry(&issuer).client = Some(client.clone());

    let pkce = Pkce::new()?;
    let state = random_token()?;
    let url = authorization_url(
        &server,
        &client.client_id,
        &redirect_uri,
        &pkce.challenge,
        &state,
        &scopes,
        &resource.resource,
    )?;
    if *cx.browser != Browser::Fetch {
        (cx.notify)(format!(
            "to authorize tern for server `{}`, open this URL (waiting {} s):\n  {url}",
            cx.server,
            cx.wait.as_secs()
        ));
    }
    let callback = wait_for_redirect(cx, &listener, &url, &state).await?;

    if let Some(error) = callback.get("error") {
        let detail = callback
            .get("error_description")
            .map(|d| format!(": {}", crate::text::clean(d)))
            .unwrap_or_default();
        return Err(AuthError::Refused {
            step: "the authorization",
            reason: format!("{error}{detail}"),
        });
    }
    check_issuer(callback.get("iss"), &server)?;
    let code = callback
        .get("code")
        .ok_or_else(|| AuthError::Callback("the redirect carries no authorization code".into()))?;

    let grant = token::CodeGrant {
        code,
        redirect_uri: &redirect_uri,
        verifier: &pkce.verifier,
        resource: &resource.resource,
    };
    let tokens = token::exchange(cx.http, &server.token_endpoint, &client, grant, &scopes).await?;
    auth.resource = Some(resource.resource);
    auth.issuer = Some(issuer.clone());
    auth.wanted_scopes.clear();
    let entry = auth.entry(&issuer);
    entry.token = Some(tokens);
    entry.token_endpoint = Some(server.token_endpoint.clone());
    entry.revocation_endpoint = server.revocation_endpoint.clone();
    Ok(())
}

/// A machine-to-machine authorization server: the configured client (`oauth.client_id` and
/// its secret or private key) gets the token itself with the client credentials grant.
async fn client_credentials(
    cx: &FlowContext<'_>,
    auth: &mut ServerAuth,
    server: &ServerMetadata,
    issuer: &str,
    resource: String,
    scopes: &[String],
) -> Result<(), AuthError> {
    if cx.spec.client_id.is_none()
        || (cx.spec.client_secret.is_none() && cx.spec.client_key.is_none())
    {
        return Err(AuthError::Discovery(format!(
            "the authorization server `{}` grants only client credentials: set `oauth.client_id` \
             and `client_secret_env` (or `private_key_file`) for server `{}` (a client registered \
             with it)",
            server.issuer, cx.server
        )));
    }
    let client = registration::client(cx.http, cx.spec, server, None, "").await?;
    auth.entry(issuer).client = Some(client.clone());
    let tokens =
        token::client_credentials(cx.http, &server.token_endpoint, &client, scopes, &resource)
            .await?;
    auth.resource = Some(resource);
    auth.issuer = Some(issuer.to_string());
    auth.wanted_scopes.clear();
    let entry = auth.entry(issuer);
    entry.token = Some(tokens);
    entry.token_endpoint = Some(server.token_endpoint.clone());
    entry.revocation_endpoint = server.revocation_endpoint.clone();
    Ok(())
}

/// The loopback listener: the configured port, else the port a stored registration was made
/// for (so it stays valid), else any free one. A stored port that is taken now means a new
/// registration, not a failure; a configured one that is taken is an error.
async fn bind_listener(
    spec: &OAuthSpec,
    known: Option<&super::store::StoredClient>,
) -> Result<Listener, AuthError> {
    if let Some(port) = spec.redirect_port {
        return Listener::bind(port).await;
    }
    let remembered = known
        .and_then(|c| c.redirect_uri.as_deref())
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.port());
    if let Some(port) = remembered
        && let Ok(listener) = Listener::bind(port).await
    {
        return Ok(listener);
    }
    Listener::bind(0).await
}

/// The scopes to ask for (the MCP spec's scope selection): the configured ones, else the
/// challenge's, else everything the resource lists, else none (the parameter is omitted). On a
/// re-authorization the scopes held before and any a server asked for in between are kept
/// (SEP-2350), and `offline_access` is added when the authorization server lists it (SEP-2207),
/// so a refresh token can spare the person the next round.
fn select_scopes(
    configured: Option<&[String]>,
    asked: Option<&[String]>,
    supported: Option<&[String]>,
    previous: &[String],
    wanted: &[String],
    server: &ServerMetadata,
) -> Vec<String> {
    let base = configured.or(asked).or(supported).unwrap_or_default();
    let mut out: Vec<String> = Vec::new();
    for s in previous.iter().chain(base).chain(wanted) {
        if !s.is_empty() && !out.contains(s) {
            out.push(s.clone());
        }
    }
    let offline = "offline_access";
    let supports_offline = server
        .scopes_supported
        .as_ref()
        .is_some_and(|s| s.iter().any(|x| x == offline));
    if !out.is_empty() && supports_offline && !out.iter().any(|s| s == offline) {
        out.push(offline.to_string());
    }
    out
}

fn authorization_url(
    server: &ServerMetadata,
    client_id: &str,
    redirect_uri: &str,
    challenge: &str,
    state: &str,
    scopes: &[String],
    resource: &str,
) -> Result<String, AuthError> {
    let mut url = url::Url::parse(&server.authorization_endpoint).map_err(|e| {
        AuthError::Discovery(format!(
            "the authorization endpoint `{}` is not a URL: {e}",
            server.authorization_endpoint
        ))
    })?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state);
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
        q.append_pair("resource", resource);
    }
    Ok(url.to_string())
}

/// RFC 9207 §2.4: an `iss` in the response must be the issuer, compared as strings (no URL
/// normalization); a server that advertises `iss` must send it.
fn check_issuer(iss: Option<&str>, server: &ServerMetadata) -> Result<(), AuthError> {
    match iss {
        Some(iss) if iss != server.issuer => Err(AuthError::Callback(format!(
            "the authorization response names the issuer `{iss}`, not `{}` (a mix-up attack or a \
             misconfigured server, RFC 9207); refused",
            server.issuer
        ))),
        None if server.authorization_response_iss_parameter_supported => {
            Err(AuthError::Callback(format!(
                "the authorization server `{}` says it sends `iss` with its responses, but this \
                 one has none (RFC 9207); refused",
                server.issuer
            )))
        }
        _ => Ok(()),
    }
}

/// Opens the URL and waits for the redirect, at most `cx.wait`. When tern fetches the URL
/// itself and the fetch ends without the redirect arriving, the flow ends at once with what the
/// fetch saw.
async fn wait_for_redirect(
    cx: &FlowContext<'_>,
    listener: &Listener,
    url: &str,
    state: &str,
) -> Result<super::redirect::Callback, AuthError> {
    let opened = cx.browser.open(url);
    let wait = listener.wait(state);
    tokio::pin!(wait);
    let timeout = tokio::time::sleep(cx.wait);
    tokio::pin!(timeout);
    let timed_out = || {
        AuthError::Callback(format!(
            "no authorization arrived within {} s",
            cx.wait.as_secs()
        ))
    };
    match opened {
        None => tokio::select! {
            r = &mut wait => r,
            _ = &mut timeout => Err(timed_out()),
        },
        Some(mut opener) => tokio::select! {
            r = &mut wait => r,
            seen = &mut opener => {
                let seen = seen.unwrap_or_else(|e| e.to_string());
                // The redirect may still be in flight behind the fetch's own answer.
                match tokio::time::timeout(Duration::from_secs(2), &mut wait).await {
                    Ok(r) => r,
                    Err(_) => Err(AuthError::Callback(format!(
                        "the authorization did not come back to tern: {seen}"
                    ))),
                }
            }
            _ = &mut timeout => Err(timed_out()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    fn server(scopes: Option<&[&str]>) -> ServerMetadata {
        ServerMetadata {
            issuer: "http://as".into(),
            scopes_supported: scopes.map(v),
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn scopes_come_from_the_challenge_then_the_resource_then_nowhere() {
        let s = server(None);
        let asked = v(&["mcp:basic"]);
        let supported = v(&["a", "b"]);
        assert_eq!(
            select_scopes(None, Some(&asked), Some(&supported), &[], &[], &s),
            asked
        );
        assert_eq!(
            select_scopes(None, None, Some(&supported), &[], &[], &s),
            supported
        );
        assert!(select_scopes(None, None, None, &[], &[], &s).is_empty());
        let configured = v(&["x"]);
        assert_eq!(
            select_scopes(Some(&configured), Some(&asked), None, &[], &[], &s),
            configured
        );
    }

    #[test]
    fn reauthorization_keeps_what_was_held_and_offline_access_is_added_when_offered() {
        let s = server(Some(&["mcp:basic", "offline_access"]));
        let got = select_scopes(
            None,
            Some(&v(&["mcp:write"])),
            None,
            &v(&["mcp:basic"]),
            &[],
            &s,
        );
        assert_eq!(got, v(&["mcp:basic", "mcp:write", "offline_access"]));
        // Nothing to ask for: the parameter stays out, offline_access too.
        assert!(select_scopes(None, None, None, &[], &[], &s).is_empty());
        // Not offered: not asked for.
        let plain = server(Some(&["mcp:basic"]));
        assert_eq!(
            select_scopes(None, Some(&v(&["mcp:basic"])), None, &[], &[], &plain),
            v(&["mcp:basic"])
        );
    }

    #[test]
    fn iss_is_compared_as_a_string_and_required_when_advertised() {
        let mut s = server(None);
        assert!(check_issuer(Some("http://as"), &s).is_ok());
        assert!(check_issuer(None, &s).is_ok());
        assert!(check_issuer(Some("http://as/"), &s).is_err());
        assert!(check_issuer(Some("https://evil.example.com"), &s).is_err());
        s.authorization_response_iss_parameter_supported = true;
        assert!(check_issuer(None, &s).is_err());
        assert!(check_issuer(Some("http://as"), &s).is_ok());
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_resource_and_only_wanted_scope() {
        let mut s = server(None);
        s.authorization_endpoint = "http://as/authorize?tenant=1".into();
        let u = authorization_url(
            &s,
            "cid",
            "http://127.0.0.1:5/callback",
            "ch",
            "st",
            &[],
            "http://h/mcp",
        )
        .unwrap();
        let parsed = url::Url::parse(&u).unwrap();
        let q: std::collections::HashMap<_, _> = parsed.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "1");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["resource"], "http://h/mcp");
        assert_eq!(q["state"], "st");
        assert!(!q.contains_key("scope"));
    }
}
