//! `--http ADDR --oauth`: `/mcp` guarded like a remote MCP server that uses OAuth 2.1, with a
//! small authorization server of its own on the same origin — protected resource metadata,
//! authorization server metadata, dynamic registration, an authorization endpoint that grants
//! at once (redirecting with `code`, `state` and `iss`), a token endpoint (PKCE checked,
//! `resource` checked, refresh tokens rotated) and revocation.
//!
//! Tests steer it through `/admin/…`: `expire` makes every access token stale (as if its
//! lifetime ran out), `revoke` forgets every access and refresh token (as a user revoking
//! access would), and `log` lists what happened (`register`, `authorize`,
//! `token:authorization_code`, `token:refresh_token`, `refused`, …), so a test can prove that a
//! refresh was silent or that nothing looped.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    body::Body,
    extract::{RawQuery, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde_json::{Value, json};

/// What the authorization server knows.
#[derive(Default)]
struct Inner {
    clients: HashSet<String>,
    /// code → (PKCE challenge, redirect URI, scope, resource)
    codes: HashMap<String, (String, String, String, String)>,
    /// access token → scope
    access: HashMap<String, String>,
    /// refresh token → scope
    refresh: HashMap<String, String>,
    log: Vec<String>,
    next: u64,
}

/// Shared by the routes.
pub(crate) struct AuthServer {
    base: String,
    inner: Mutex<Inner>,
}

impl AuthServer {
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut inner)
    }

    fn log(&self, what: impl Into<String>) {
        let what = what.into();
        self.with(|i| i.log.push(what));
    }

    /// A fresh opaque value: letters and digits only, so no secret-shape rule of a client
    /// would notice it — only its value can.
    fn mint(&self, kind: &str) -> String {
        let n = self.with(|i| {
            i.next += 1;
            i.next
        });
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("{kind}{n:04}q{nanos:x}z{:x}", std::process::id())
    }
}

/// The routes, `/mcp` (the MCP service) behind the bearer check.
pub(crate) fn router(base: String, mcp: Router) -> Router {
    let state = Arc::new(AuthServer {
        base,
        inner: Mutex::default(),
    });
    let guarded = mcp.layer(axum::middleware::from_fn_with_state(state.clone(), guard));
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/revoke", post(revoke))
        .route("/admin/expire", post(expire))
        .route("/admin/revoke", post(revoke_all))
        .route("/admin/log", get(log))
        .with_state(state)
        .merge(guarded)
}

fn json_response(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn form(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

/// `/mcp` only with a valid token; otherwise 401 with the challenge.
async fn guard(State(s): State<Arc<AuthServer>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let valid = presented
        .as_ref()
        .is_some_and(|t| s.with(|i| i.access.contains_key(t)));
    if valid {
        return next.run(request).await;
    }
    s.log(if presented.is_some() {
        "mcp:invalid_token"
    } else {
        "mcp:no_token"
    });
    let error = if presented.is_some() {
        ", error=\"invalid_token\""
    } else {
        ""
    };
    let challenge = format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"tools\"{error}",
        s.base
    );
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header(header::WWW_AUTHENTICATE, challenge)
        .body(Body::empty())
        .unwrap_or_default()
}

async fn resource_metadata(State(s): State<Arc<AuthServer>>) -> Response {
    json_response(
        StatusCode::OK,
        json!({
            "resource": format!("{}/mcp", s.base),
            "authorization_servers": [s.base],
            "scopes_supported": ["tools"],
        }),
    )
}

async fn server_metadata(State(s): State<Arc<AuthServer>>) -> Response {
    let b = &s.base;
    json_response(
        StatusCode::OK,
        json!({
            "issuer": b,
            "authorization_endpoint": format!("{b}/authorize"),
            "token_endpoint": format!("{b}/token"),
            "registration_endpoint": format!("{b}/register"),
            "revocation_endpoint": format!("{b}/revoke"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["tools", "offline_access"],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

async fn register(State(s): State<Arc<AuthServer>>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let id = s.mint("client");
    s.with(|i| i.clients.insert(id.clone()));
    s.log("register");
    json_response(
        StatusCode::CREATED,
        json!({
            "client_id": id,
            "redirect_uris": request["redirect_uris"],
            "token_endpoint_auth_method": "none",
        }),
    )
}

async fn authorize(State(s): State<Arc<AuthServer>>, RawQuery(query): RawQuery) -> Response {
    let q = form(query.as_deref().unwrap_or(""));
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let known = s.with(|i| i.clients.contains(&get("client_id")));
    if !known || get("code_challenge_method") != "S256" || get("redirect_uri").is_empty() {
        s.log("authorize:refused");
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    s.log("authorize");
    let code = s.mint("code");
    s.with(|i| {
        i.codes.insert(
            code.clone(),
            (
                get("code_challenge"),
                get("redirect_uri"),
                get("scope"),
                get("resource"),
            ),
        )
    });
    let mut to = url::Url::parse(&get("redirect_uri")).unwrap_or_else(|_| {
        url::Url::parse("http://127.0.0.1/").unwrap_or_else(|_| unreachable!())
    });
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"))
        .append_pair("iss", &s.base);
    Response::builder()
        .status(StatusCode::FOUND)
        .header(header::LOCATION, to.to_string())
        .body(Body::empty())
        .unwrap_or_default()
}

fn s256(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier))
}

fn token_error(s: &AuthServer, what: &str) -> Response {
    s.log(format!("refused:{what}"));
    json_response(
        StatusCode::BAD_REQUEST,
        json!({"error": "invalid_grant", "error_description": what}),
    )
}

async fn token(State(s): State<Arc<AuthServer>>, body: String) -> Response {
    let f = form(&body);
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    let resource = format!("{}/mcp", s.base);
    if get("resource") != resource {
        return token_error(&s, "the resource is not this server");
    }
    let grant = get("grant_type");
    s.log(format!("token:{grant}"));
    let scope = match grant.as_str() {
        "authorization_code" => {
            let Some((challenge, redirect, scope, _)) = s.with(|i| i.codes.remove(&get("code")))
            else {
                return token_error(&s, "unknown code");
            };
            if s256(&get("code_verifier")) != challenge || redirect != get("redirect_uri") {
                return token_error(&s, "PKCE or redirect mismatch");
            }
            scope
        }
        "refresh_token" => match s.with(|i| i.refresh.remove(&get("refresh_token"))) {
            Some(scope) => scope,
            None => return token_error(&s, "unknown refresh token"),
        },
        _ => return token_error(&s, "unsupported grant"),
    };
    let access = s.mint("at");
    let refresh = s.mint("rt");
    s.with(|i| {
        i.access.insert(access.clone(), scope.clone());
        i.refresh.insert(refresh.clone(), scope.clone());
    });
    json_response(
        StatusCode::OK,
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": refresh,
            "scope": scope,
        }),
    )
}

async fn revoke(State(s): State<Arc<AuthServer>>, body: String) -> Response {
    let token = form(&body).remove("token").unwrap_or_default();
    s.with(|i| {
        i.access.remove(&token);
        i.refresh.remove(&token);
    });
    s.log("revoke");
    StatusCode::OK.into_response()
}

async fn expire(State(s): State<Arc<AuthServer>>) -> Response {
    s.with(|i| i.access.clear());
    s.log("admin:expire");
    StatusCode::OK.into_response()
}

async fn revoke_all(State(s): State<Arc<AuthServer>>) -> Response {
    s.with(|i| {
        i.access.clear();
        i.refresh.clear();
    });
    s.log("admin:revoke");
    StatusCode::OK.into_response()
}

async fn log(State(s): State<Arc<AuthServer>>, _: HeaderMap) -> Response {
    json_response(StatusCode::OK, json!(s.with(|i| i.log.clone())))
}
