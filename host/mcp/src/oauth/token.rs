//! The token endpoint: a code for tokens (with the PKCE verifier), a refresh token for new
//! ones, and revocation at logout (RFC 6749 §4.1.3 and §6, RFC 7009). Every request names the
//! resource (RFC 8707), so a token is only ever good for the server it was asked for.

use serde_json::Value;

use super::{
    AuthError,
    challenge::split_scopes,
    net,
    registration::authenticate,
    store::{StoredClient, TokenSet, now},
};

/// A refresh the authorization server refused (`invalid_grant`: expired or revoked), as
/// opposed to one that could not be made (the server was unreachable).
#[derive(Debug)]
pub(crate) enum RefreshError {
    Refused(String),
    Failed(AuthError),
}

/// What the redirect brought back, and what the token request must repeat of the
/// authorization request.
pub(crate) struct CodeGrant<'a> {
    pub(crate) code: &'a str,
    pub(crate) redirect_uri: &'a str,
    /// The PKCE verifier of the challenge sent.
    pub(crate) verifier: &'a str,
    pub(crate) resource: &'a str,
}

/// The authorization code for tokens.
pub(crate) async fn exchange(
    http: &reqwest::Client,
    endpoint: &str,
    client: &StoredClient,
    grant: CodeGrant<'_>,
    requested: &[String],
) -> Result<TokenSet, AuthError> {
    let params = vec![
        ("grant_type", "authorization_code".to_string()),
        ("code", grant.code.to_string()),
        ("redirect_uri", grant.redirect_uri.to_string()),
        ("code_verifier", grant.verifier.to_string()),
        ("resource", grant.resource.to_string()),
    ];
    let reply = post(
        http,
        endpoint,
        client,
        params,
        "exchanging the authorization code",
    )
    .await?;
    if !reply.ok() {
        return Err(AuthError::Refused {
            step: "the token request",
            reason: reply.oauth_error(),
        });
    }
    read_tokens(&reply, requested, None)
}

/// The client credentials grant (RFC 6749 §4.4; the MCP client-credentials extension,
/// SEP-1046): the configured client authenticates itself and gets a token, no person involved.
pub(crate) async fn client_credentials(
    http: &reqwest::Client,
    endpoint: &str,
    client: &StoredClient,
    scopes: &[String],
    resource: &str,
) -> Result<TokenSet, AuthError> {
    let mut params = vec![
        ("grant_type", "client_credentials".to_string()),
        ("resource", resource.to_string()),
    ];
    if !scopes.is_empty() {
        params.push(("scope", scopes.join(" ")));
    }
    let reply = post(
        http,
        endpoint,
        client,
        params,
        "the client credentials grant",
    )
    .await?;
    if !reply.ok() {
        return Err(AuthError::Refused {
            step: "the client credentials grant",
            reason: reply.oauth_error(),
        });
    }
    read_tokens(&reply, scopes, None)
}

/// A refresh token for new tokens. The old refresh token is kept when no new one comes back.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    endpoint: &str,
    client: &StoredClient,
    current: &TokenSet,
    resource: &str,
) -> Result<TokenSet, RefreshError> {
    let Some(refresh_token) = &current.refresh_token else {
        return Err(RefreshError::Refused("no refresh token".to_string()));
    };
    let params = vec![
        ("grant_type", "refresh_token".to_string()),
        ("refresh_token", refresh_token.clone()),
        ("resource", resource.to_string()),
    ];
    let reply = post(http, endpoint, client, params, "refreshing the token")
        .await
        .map_err(RefreshError::Failed)?;
    if !reply.ok() {
        // 400/401 with an OAuth error: the grant is gone. A 5xx is the server's trouble.
        return Err(if reply.status < 500 {
            RefreshError::Refused(reply.oauth_error())
        } else {
            RefreshError::Failed(AuthError::Http(format!(
                "refreshing the token failed: HTTP {}",
                reply.status
            )))
        });
    }
    read_tokens(&reply, &current.scopes, Some(refresh_token)).map_err(RefreshError::Failed)
}

/// Tells the server to forget `token` (best effort: logout forgets it locally anyway).
pub(crate) async fn revoke(
    http: &reqwest::Client,
    endpoint: &str,
    client: &StoredClient,
    token: &str,
    hint: &str,
) -> Result<(), AuthError> {
    let params = vec![
        ("token", token.to_string()),
        ("token_type_hint", hint.to_string()),
    ];
    let reply = post(http, endpoint, client, params, "revoking the token").await?;
    if reply.ok() {
        Ok(())
    } else {
        Err(AuthError::Refused {
            step: "revocation",
            reason: reply.oauth_error(),
        })
    }
}

async fn post(
    http: &reqwest::Client,
    endpoint: &str,
    client: &StoredClient,
    mut params: Vec<(&'static str, String)>,
    what: &str,
) -> Result<net::Reply, AuthError> {
    let request = http
        .post(endpoint)
        .header(reqwest::header::ACCEPT, "application/json");
    let request = authenticate(client, request, &mut params)?;
    let request = request
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(net::form_body(&params));
    net::send(request, &format!("{what} at {endpoint}")).await
}

/// A token response (RFC 6749 §5.1). Only bearer tokens: a DPoP-bound token would be refused
/// by the server when sent as one.
fn read_tokens(
    reply: &net::Reply,
    requested: &[String],
    old_refresh: Option<&String>,
) -> Result<TokenSet, AuthError> {
    let bad = |why: &str| AuthError::Http(format!("the token response {why}"));
    let json = reply.json().ok_or_else(|| bad("is not JSON"))?;
    let field = |k: &str| json.get(k).and_then(Value::as_str).map(str::to_string);
    let access_token = field("access_token")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad("has no access_token"))?;
    let token_type = field("token_type").unwrap_or_default();
    if !token_type.eq_ignore_ascii_case("bearer") {
        return Err(bad(&format!(
            "is a `{token_type}` token; tern sends only bearer tokens"
        )));
    }
    Ok(TokenSet {
        access_token,
        refresh_token: field("refresh_token").or_else(|| old_refresh.cloned()),
        expires_at: json
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|s| now() + s),
        scopes: field("scope")
            .map(|s| split_scopes(&s))
            .unwrap_or_else(|| requested.to_vec()),
    })
}
