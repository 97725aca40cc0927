//! Why a server did not start, and why a call did not complete — each in one clean line.
//!
//! rmcp's own error texts name Rust types (`Transport [WorkerTransport<…>] error: …`), carry whole
//! HTML error pages, and nest "when …" contexts; a person needs what failed and why (issue 11,
//! item 8). [`describe_init_error`] and [`describe_service_error`] build that line from the
//! typed errors, and [`clean`] strips what is left of the rest.

use std::error::Error as StdError;

use rmcp::{
    service::{ClientInitializeError, ServiceError},
    transport::streamable_http_client::StreamableHttpError,
};

use crate::oauth::http::HttpClientError;
pub(crate) use crate::text::clean;

/// The error type of tern's streamable HTTP transport (rmcp's, over tern's client).
type HttpError = StreamableHttpError<crate::oauth::http::HttpClientError>;

/// A server could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// The command is not on the child's PATH (or the path does not exist).
    #[error("command `{command}` not found: it is not on PATH ({path})")]
    CommandNotFound { command: String, path: String },
    /// The command names a file (it has a `/`) that is missing or cannot be run.
    #[error("command `{command}` cannot be run: {reason}")]
    NotRunnable { command: String, reason: String },
    /// The OS refused to spawn it.
    #[error("cannot spawn `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    /// It did not finish spawn + initialize + tools/list in time.
    #[error("did not become ready within {secs:.1} s (startup_timeout_sec)")]
    Timeout { secs: f64 },
    /// The MCP handshake failed: it exited, closed stdout, or spoke something else.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// `server/discover` went unanswered for the probe timeout, so tern fell back to
    /// `initialize` on the same connection, and the server — which had answered the probe by
    /// then, only slowly — refused it as a 2026-07-28 connection. Reconnecting in the
    /// discover era fixes it; the supervisor does that at once.
    #[error(
        "the server answered server/discover only after tern had fallen back to initialize (it was slow to start)"
    )]
    DiscoverAnsweredLate,
    /// The server agreed to a protocol revision tern does not know.
    #[error(
        "the server speaks MCP revision \"{version}\", which tern does not know (it speaks 2024-11-05 to 2026-07-28)"
    )]
    UnsupportedProtocol { version: String },
    /// `tools/list` failed after initialize.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// The server asks for an authorization tern could not give (the message says what to do).
    #[error("{0}")]
    Authorization(String),
    /// Invalid configuration detected at spawn time (bad URL, bad header).
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// The server crashed too often.
    #[error("crashed {restarts} times within a minute; not restarting (last: {last})")]
    TooManyRestarts { restarts: usize, last: String },
}

/// A tool call that produced no result from the server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// No server of that name is configured.
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// The server is not ready (still starting, restarting or failed).
    #[error("server `{server}` is not ready: {state}")]
    NotReady { server: String, state: String },
    /// The server no longer offers the tool (its list changed, or it is held out of the table).
    #[error("server `{server}` does not offer a tool `{tool}` (any more)")]
    ToolGone { server: String, tool: String },
    /// The call exceeded its timeout; `notifications/cancelled` was sent.
    #[error("timed out after {secs:.1} s")]
    Timeout { secs: f64 },
    /// The caller cancelled (Ctrl-C); `notifications/cancelled` was sent.
    #[error("cancelled")]
    Cancelled,
    /// The server process died while the call was in flight.
    #[error("server `{server}` crashed during the call{}", fmt_tail(stderr_tail))]
    ServerCrashed {
        server: String,
        stderr_tail: Vec<String>,
    },
    /// The connection to an HTTP server was lost while the call was in flight.
    #[error("lost the connection to server `{server}` during the call: {reason}")]
    ConnectionLost { server: String, reason: String },
    /// The server's reply could not be taken (too large, or unreadable).
    #[error("{0}")]
    BadReply(String),
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server { code: i32, message: String },
    /// The transport failed in another way.
    #[error("transport error: {0}")]
    Transport(String),
}

fn fmt_tail(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from("; its last stderr lines:\n");
    for line in tail {
        s.push_str("  ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// One line saying why a handshake failed.
pub(crate) fn describe_init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, .. } => describe_chain(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            describe_init_error(fallback)
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!(
                "the server answered with error {}: {}",
                data.code.0,
                clean(&data.message)
            )
        }
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection before answering".to_string()
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered the handshake with something other than its result".to_string()
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => format!(
            "no protocol revision in common: the server speaks {}",
            server_supported
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => clean(&other.to_string()),
    }
}

/// The start error for a failed handshake.
pub(crate) fn init_error(e: &ClientInitializeError) -> StartError {
    if let ClientInitializeError::LegacyFallbackFailed { fallback, .. } = e
        && let ClientInitializeError::JsonRpcError(data) = fallback.as_ref()
        && data.code == rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
    {
        return StartError::DiscoverAnsweredLate;
    }
    StartError::Handshake(describe_init_error(e))
}

/// One line saying why a request failed.
pub(crate) fn describe_service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => {
            format!("error {}: {}", data.code.0, clean(&data.message))
        }
        ServiceError::TransportSend(error) => describe_chain(error.error.as_ref()),
        ServiceError::TransportClosed => "the connection to the server closed".to_string(),
        ServiceError::Timeout { timeout } => {
            format!("no answer within {:.1} s", timeout.as_secs_f64())
        }
        other => clean(&other.to_string()),
    }
}

/// The most specific message in an error's source chain, cleaned; for the HTTP transport, what
/// went wrong in words (`cannot connect to …: connection refused`, `HTTP 404 …`).
fn describe_chain(error: &(dyn StdError + 'static)) -> String {
    if let Some(http) = error.downcast_ref::<HttpError>() {
        return describe_http(http);
    }
    let mut deepest = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let text = e.to_string();
        if !text.trim().is_empty() {
            deepest = text;
        }
        source = e.source();
    }
    clean(&deepest)
}

/// One line for a streamable HTTP failure.
fn describe_http(e: &HttpError) -> String {
    match e {
        StreamableHttpError::Client(HttpClientError::Auth(e)) => e.to_string(),
        StreamableHttpError::Client(HttpClientError::Http(e)) => {
            let url = e.url().map(|u| format!(" {u}")).unwrap_or_default();
            let what = if e.is_connect() {
                format!("cannot connect to{url}")
            } else if e.is_timeout() {
                format!("no answer in time from{url}")
            } else {
                format!("the request to{url} failed")
            };
            // reqwest's own text is generic; the cause (e.g. "Connection refused") is deepest.
            let mut cause = None;
            let mut source = StdError::source(e);
            while let Some(s) = source {
                cause = Some(s.to_string());
                source = s.source();
            }
            match cause {
                Some(c) => format!("{what}: {}", clean(&c)),
                None => what,
            }
        }
        StreamableHttpError::HttpStatus(s) => format!("the server answered HTTP {}", s.status),
        StreamableHttpError::UnexpectedServerResponse(text) => {
            format!("unexpected answer from the server: {}", clean(text))
        }
        StreamableHttpError::UnexpectedContentType(t) => format!(
            "the server answered with content type {} instead of JSON or an event stream",
            t.as_deref().unwrap_or("(none)")
        ),
        StreamableHttpError::SessionExpired => {
            "the server no longer knows this session (HTTP 404)".to_string()
        }
        other => clean(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_and_html_pages_are_cleaned_away() {
        let raw = "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::Client>>] error: unexpected server response: HTTP 404: <!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>\n<h1>Not Found</h1>\n</body></html>";
        let s = clean(raw);
        assert_eq!(
            s,
            "unexpected server response: HTTP 404: (an HTML page: \"404 Not Found\")"
        );
        assert!(!s.contains('\n'));
    }

    #[test]
    fn ordinary_text_is_kept_and_comparisons_survive() {
        assert_eq!(clean("a  b\n c"), "a b c");
        assert_eq!(clean("x < 3 and y > 2"), "x < 3 and y > 2");
        assert!(clean(&"y".repeat(1000)).ends_with('…'));
    }
}
