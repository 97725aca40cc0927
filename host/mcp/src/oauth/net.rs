//! The HTTP requests of an authorization: bounded reads, one-line errors, no secrets in them.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use super::AuthError;

/// Metadata documents and token responses are small; anything larger is not one.
const MAX_BODY: usize = 1024 * 1024;
/// One request to an authorization server or a metadata location.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The client for authorization requests (redirects followed, as metadata may move).
pub(crate) fn client() -> reqwest::Client {
    crate::http_client()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .unwrap_or_default()
}

/// A response, read whole (bounded).
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// `error` and `error_description` of an OAuth error response (RFC 6749 §5.2), as one line.
    pub(crate) fn oauth_error(&self) -> String {
        let json = self.json();
        let field = |k: &str| {
            json.as_ref()
                .and_then(|j| j.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        match (field("error"), field("error_description")) {
            (Some(e), Some(d)) => format!("{e}: {}", crate::text::clean(&d)),
            (Some(e), None) => e,
            _ => format!("HTTP {}", self.status),
        }
    }
}

/// Sends `request`, reading at most [`MAX_BODY`] bytes of the answer. `what` names the request
/// in errors (`fetching the protected resource metadata at URL`).
pub(crate) async fn send(request: reqwest::RequestBuilder, what: &str) -> Result<Reply, AuthError> {
    let response = request
        .send()
        .await
        .map_err(|e| AuthError::Http(format!("{what} failed: {}", describe(e))))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| AuthError::Http(format!("{what} failed: {}", describe(e))))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::Http(format!(
                "{what}: the answer is larger than {} KiB",
                MAX_BODY / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Reply { status, body })
}

/// `GET url` asking for JSON.
pub(crate) async fn get(http: &reqwest::Client, url: &str, what: &str) -> Result<Reply, AuthError> {
    send(
        http.get(url)
            .header(reqwest::header::ACCEPT, "application/json"),
        what,
    )
    .await
}

/// `POST url` with a form body (`application/x-www-form-urlencoded`).
pub(crate) fn form_body(params: &[(&str, String)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        s.append_pair(k, v);
    }
    s.finish()
}

/// reqwest's error without the URL's query (which may hold a code) and with its cause.
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = if e.is_connect() {
        "cannot connect".to_string()
    } else if e.is_timeout() {
        "no answer in time".to_string()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(&e);
    let mut cause = None;
    while let Some(s) = source {
        cause = Some(s.to_string());
        source = s.source();
    }
    if let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c);
    }
    crate::text::clean(&text)
}

/// Whether secrets may be sent to `url`: HTTPS, or plain HTTP to this machine (OAuth 2.1 §1.5;
/// the loopback exception is what local servers and tests use).
pub(crate) fn secure(url: &url::Url) -> bool {
    url.scheme() == "https"
        || (url.scheme() == "http"
            && match url.host() {
                Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
                Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                None => false,
            })
}

/// Parses `text` as an absolute http(s) URL, for the error naming `what` it is.
pub(crate) fn parse_url(text: &str, what: &str) -> Result<url::Url, AuthError> {
    let url = url::Url::parse(text)
        .map_err(|e| AuthError::Discovery(format!("{what} `{text}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(AuthError::Discovery(format!(
            "{what} `{text}` is not an http(s) URL"
        )));
    }
    Ok(url)
}
