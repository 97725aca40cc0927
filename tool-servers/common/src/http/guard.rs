//! Who may talk to a tool server over HTTP: the `Host`, `Origin` and bearer-token checks
//! every request passes before it reaches MCP.
//!
//! Why each check exists:
//! - **Host** (loopback binds, and wherever `--http-allow-host` is given): a web page can
//!   make the victim's browser resolve its own name to 127.0.0.1 (DNS rebinding) and then
//!   talk to a local server as if same-origin. The browser still sends the attacker's name
//!   in `Host`, so a loopback server answers only to loopback names.
//! - **Origin**: a browser always says which page a request comes from; a page that is not
//!   the server's own (same host and port as `Host`) nor listed with `--http-allow-origin`
//!   is refused, as the MCP transport spec asks of every server
//!   (<https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#security-warning>).
//! - **Token**: required on every address that is not loopback, where the two checks above
//!   do not hold (any name can reach a public address). A browser never attaches a bearer
//!   token on its own, so a token also defeats cross-site requests.
//!
//! Refusals are 403 (Host, Origin) or 401 with `WWW-Authenticate: Bearer` (token), and are
//! decided before the body is read.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::conn::Authorized;

/// A bearer token; never printed (its `Debug` is redacted).
#[derive(Clone)]
pub(crate) struct Token(String);

impl Token {
    pub(crate) fn new(value: String) -> Self {
        Self(value)
    }

    /// The secret itself: only for printing a generated token once at startup.
    pub(crate) fn value(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the first difference is, so response times
    /// do not reveal a token's prefix.
    fn matches(&self, presented: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        if presented.len() != expected.len() {
            return false;
        }
        let diff = expected
            .iter()
            .zip(presented)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// A web origin (`scheme://host:port`), as browsers send it in `Origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    /// Explicit, or the scheme's default.
    port: Option<u16>,
}

impl Origin {
    /// Parses an `Origin` header value; `None` for `null` and anything malformed.
    fn parse(raw: &str) -> Option<Self> {
        let uri = axum::http::Uri::try_from(raw.trim()).ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        let host = authority
            .host()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        let port = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        Some(Self { scheme, host, port })
    }

    /// Parses an `--http-allow-origin` entry: exactly `scheme://host[:port]`.
    pub(crate) fn parse_allowed(raw: &str) -> Result<Self, String> {
        let uri = axum::http::Uri::try_from(raw.trim()).map_err(|e| e.to_string())?;
        let has_path = uri.path_and_query().is_some_and(|p| p.as_str() != "/");
        if has_path || raw.trim().ends_with('/') {
            return Err("an origin is scheme://host[:port], without a path".into());
        }
        Self::parse(raw).ok_or_else(|| "expected scheme://host[:port]".to_string())
    }
}

/// The checks one server applies, built once from its [`super::HttpConfig`].
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) token: Option<Token>,
    pub(crate) allowed_origins: Vec<Origin>,
    pub(crate) allowed_hosts: Option<Vec<String>>,
}

/// Why a request was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `Host` is missing or not one of the server's names.
    Host,
    /// `Origin` is neither the server's own nor allowed.
    Origin,
    /// No `Authorization: Bearer …`.
    NoToken,
    /// A bearer token that is not the server's.
    WrongToken,
}

/// What to do with a request that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Hand it to MCP.
    Serve,
    /// Hand it to MCP and let this allowed cross-origin page read the answer.
    ServeCors(HeaderValue),
    /// A CORS preflight from an allowed origin: answer it here (it carries no token).
    Preflight(HeaderValue),
}

impl Guard {
    pub(crate) fn check(&self, method: &Method, headers: &HeaderMap) -> Result<Pass, Refusal> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| axum::http::uri::Authority::try_from(h).ok());
        if let Some(names) = &self.allowed_hosts {
            let name = host.as_ref().and_then(|a| host_name(a.as_str()));
            if !name.is_some_and(|n| names.contains(&n)) {
                return Err(Refusal::Host);
            }
        }
        let mut cors = None;
        if let Some(raw) = headers.get(header::ORIGIN) {
            let origin = raw.to_str().ok().and_then(Origin::parse);
            let Some(origin) = origin else {
                return Err(Refusal::Origin);
            };
            if self.allowed_origins.contains(&origin) {
                cors = Some(raw.clone());
            } else if !self.is_own(&origin, host.as_ref()) {
                return Err(Refusal::Origin);
            }
        }
        if let (Some(origin), &Method::OPTIONS) = (&cors, method) {
            return Ok(Pass::Preflight(origin.clone()));
        }
        if let Some(token) = &self.token {
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| bearer(v.as_bytes()))
                .ok_or(Refusal::NoToken)?;
            if !token.matches(presented) {
                return Err(Refusal::WrongToken);
            }
        }
        Ok(cors.map_or(Pass::Serve, Pass::ServeCors))
    }

    /// Same host and port as the `Host` the request was sent to (that passed the Host
    /// check), or one of the server's other names on that port.
    fn is_own(&self, origin: &Origin, host: Option<&axum::http::uri::Authority>) -> bool {
        let Some(host) = host else {
            return false;
        };
        // Behind a TLS proxy `Host` often has no port while the page is https on 443.
        let port = host.port_u16().or(origin.port);
        if origin.port != port {
            return false;
        }
        let same = host_name(host.as_str()).is_some_and(|h| h == origin.host);
        same || self
            .allowed_hosts
            .as_ref()
            .is_some_and(|names| names.contains(&origin.host))
    }
}

/// The token of `Bearer TOKEN` (scheme case-insensitive, RFC 6750).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// The middleware: refuses, answers a preflight, or passes the request on to MCP.
pub(crate) async fn enforce(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let passed = guard.check(request.method(), request.headers());
    if matches!(passed, Ok(Pass::Serve | Pass::ServeCors(_)))
        && let Some(connection) = request.extensions().get::<Authorized>()
    {
        // This connection now carries a client with the token: it is no longer closed to
        // make room for others (see `conn`).
        connection.set();
    }
    match passed {
        Ok(Pass::Serve) => next.run(request).await,
        Ok(Pass::ServeCors(origin)) => {
            let mut response = next.run(request).await;
            let headers = response.headers_mut();
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("mcp-session-id, mcp-protocol-version"),
            );
            headers.insert(header::VARY, HeaderValue::from_static("origin"));
            response
        }
        Ok(Pass::Preflight(origin)) => (
            StatusCode::NO_CONTENT,
            [
                (header::ACCESS_CONTROL_ALLOW_ORIGIN, origin),
                (
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("GET, POST, DELETE"),
                ),
                (
                    header::ACCESS_CONTROL_ALLOW_HEADERS,
                    HeaderValue::from_static(
                        "authorization, content-type, accept, last-event-id, mcp-session-id, \
                         mcp-protocol-version, mcp-method",
                    ),
                ),
                (
                    header::ACCESS_CONTROL_EXPOSE_HEADERS,
                    HeaderValue::from_static("mcp-session-id, mcp-protocol-version"),
                ),
                (header::VARY, HeaderValue::from_static("origin")),
            ],
        )
            .into_response(),
        Err(refusal) => {
            tracing::warn!(peer = ?peer, reason = ?refusal, "refused an HTTP request");
            refusal_response(refusal)
        }
    }
}

fn refusal_response(refusal: Refusal) -> Response {
    let challenge =
        |value: &'static str| [(header::WWW_AUTHENTICATE, HeaderValue::from_static(value))];
    match refusal {
        Refusal::Host => (
            StatusCode::FORBIDDEN,
            "Forbidden: the Host header is not one of this server's names \
             (add it with --http-allow-host)\n",
        )
            .into_response(),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "Forbidden: requests from this Origin are not allowed \
             (add it with --http-allow-origin)\n",
        )
            .into_response(),
        Refusal::NoToken => (
            StatusCode::UNAUTHORIZED,
            challenge(r#"Bearer realm="tern""#),
            "Unauthorized: send `Authorization: Bearer <token>`\n",
        )
            .into_response(),
        Refusal::WrongToken => (
            StatusCode::UNAUTHORIZED,
            challenge(r#"Bearer realm="tern", error="invalid_token""#),
            "Unauthorized: wrong bearer token\n",
        )
            .into_response(),
    }
}

/// A `Host`-style name, lowercased, IPv6 brackets removed, any port dropped.
pub(crate) fn host_name(raw: &str) -> Option<String> {
    let authority = axum::http::uri::Authority::try_from(raw.trim()).ok()?;
    let host = authority
        .host()
        .trim_matches(['[', ']'])
        .to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123";

    fn loopback(token: Option<&str>, origins: &[&str]) -> Guard {
        Guard {
            token: token.map(|t| Token::new(t.into())),
            allowed_origins: origins
                .iter()
                .map(|o| Origin::parse_allowed(o).unwrap())
                .collect(),
            allowed_hosts: Some(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]),
        }
    }

    fn public(token: &str) -> Guard {
        Guard {
            token: Some(Token::new(token.into())),
            allowed_origins: Vec::new(),
            allowed_hosts: None,
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn post(g: &Guard, pairs: &[(&str, &str)]) -> Result<Pass, Refusal> {
        g.check(&Method::POST, &headers(pairs))
    }

    #[test]
    fn loopback_answers_to_loopback_names_only() {
        let g = loopback(None, &[]);
        for host in [
            "127.0.0.1:8765",
            "localhost:8765",
            "[::1]:8765",
            "LOCALHOST",
        ] {
            assert_eq!(post(&g, &[("host", host)]), Ok(Pass::Serve), "{host}");
        }
        // DNS rebinding: the attacker's name in Host.
        assert_eq!(
            post(&g, &[("host", "evil.example:8765")]),
            Err(Refusal::Host)
        );
        assert_eq!(post(&g, &[]), Err(Refusal::Host), "no Host at all");
    }

    #[test]
    fn foreign_origins_are_refused_and_the_servers_own_pass() {
        let g = loopback(None, &["https://app.example.com"]);
        let own = [
            ("host", "127.0.0.1:8765"),
            ("origin", "http://127.0.0.1:8765"),
        ];
        assert_eq!(post(&g, &own), Ok(Pass::Serve));
        let other_name = [
            ("host", "127.0.0.1:8765"),
            ("origin", "http://localhost:8765"),
        ];
        assert_eq!(post(&g, &other_name), Ok(Pass::Serve));
        for origin in [
            "https://evil.example",
            "http://127.0.0.1:9999",
            "null",
            "not an origin",
            "https://app.example.com:8443",
        ] {
            assert_eq!(
                post(&g, &[("host", "127.0.0.1:8765"), ("origin", origin)]),
                Err(Refusal::Origin),
                "{origin}"
            );
        }
        assert_eq!(
            post(
                &g,
                &[
                    ("host", "127.0.0.1:8765"),
                    ("origin", "https://app.example.com")
                ]
            ),
            Ok(Pass::ServeCors(HeaderValue::from_static(
                "https://app.example.com"
            )))
        );
    }

    #[test]
    fn a_token_server_wants_the_exact_bearer_token() {
        let g = public(TOKEN);
        let host = ("host", "tools.example.com:8765");
        assert_eq!(post(&g, &[host]), Err(Refusal::NoToken));
        let ok = format!("Bearer {TOKEN}");
        assert_eq!(post(&g, &[host, ("authorization", &ok)]), Ok(Pass::Serve));
        let lower = format!("bearer {TOKEN}");
        assert_eq!(
            post(&g, &[host, ("authorization", &lower)]),
            Ok(Pass::Serve)
        );
        for wrong in [
            format!("Bearer {TOKEN}x"),
            format!("Bearer {}", &TOKEN[1..]),
            "Bearer 0123456789abcdef0124".to_string(),
        ] {
            assert_eq!(
                post(&g, &[host, ("authorization", &wrong)]),
                Err(Refusal::WrongToken),
                "{wrong}"
            );
        }
        for missing in [
            format!("Basic {TOKEN}"),
            "Bearer ".into(),
            format!("Bearer{TOKEN}"),
        ] {
            assert_eq!(
                post(&g, &[host, ("authorization", &missing)]),
                Err(Refusal::NoToken),
                "{missing}"
            );
        }
    }

    #[test]
    fn without_host_checks_an_origin_must_still_match_the_host() {
        let g = public(TOKEN);
        let auth = format!("Bearer {TOKEN}");
        let same = [
            ("host", "tools.example.com"),
            ("origin", "https://tools.example.com"),
            ("authorization", auth.as_str()),
        ];
        assert_eq!(post(&g, &same), Ok(Pass::Serve));
        let foreign = [
            ("host", "tools.example.com"),
            ("origin", "https://evil.example"),
            ("authorization", auth.as_str()),
        ];
        assert_eq!(post(&g, &foreign), Err(Refusal::Origin));
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_is_answered_without_the_token() {
        let g = Guard {
            allowed_origins: vec![Origin::parse_allowed("https://app.example.com").unwrap()],
            ..public(TOKEN)
        };
        let h = headers(&[
            ("host", "tools.example.com"),
            ("origin", "https://app.example.com"),
        ]);
        assert!(matches!(
            g.check(&Method::OPTIONS, &h),
            Ok(Pass::Preflight(_))
        ));
        // The request itself still needs the token.
        assert_eq!(g.check(&Method::POST, &h), Err(Refusal::NoToken));
    }

    #[test]
    fn allowed_origins_are_bare_origins() {
        for bad in [
            "https://a.example/",
            "https://a.example/app",
            "a.example",
            "*",
        ] {
            assert!(Origin::parse_allowed(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Origin::parse_allowed("HTTPS://A.example").unwrap(),
            Origin::parse("https://a.example:443").unwrap()
        );
    }
}
