//! Errors: what went wrong, whether retrying can help, and the provider's own words.

use std::time::Duration;

/// `Result` with [`ModelError`].
pub type Result<T, E = ModelError> = std::result::Result<T, E>;

/// Classification of a failure. The retry policy is an exhaustive `match` on this, so a new kind
/// forces a decision there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 401/403: bad or missing key, or no permission.
    Auth,
    /// 400 and other 4xx the request itself caused (also 402, 413, 422).
    BadRequest,
    /// 404: unknown model or endpoint.
    NotFound,
    /// 408: the provider timed out waiting for us.
    Timeout,
    /// 409: conflict, retried by the providers' own SDKs.
    Conflict,
    /// 429 or a `rate_limit_error` event.
    RateLimited,
    /// 529 or an `overloaded_error` event.
    Overloaded,
    /// 5xx or an `api_error`/unknown error event in the stream.
    Server,
    /// Connection failed, broke mid-stream, or went silent too long.
    Transport,
    /// The stream could not be understood (bad JSON, wrong shapes).
    MalformedStream,
    /// The caller cancelled the turn.
    Cancelled,
    /// The configuration cannot work (no key, unknown provider, ...).
    Config,
    /// The request is longer than the model's context window. Retrying the same request cannot
    /// help; the caller must make it shorter (tern compacts the conversation and retries once).
    ContextOverflow,
}

impl ErrorKind {
    /// Classifies an HTTP status the way the providers document them.
    pub fn from_status(status: u16) -> Self {
        match status {
            401 | 403 => ErrorKind::Auth,
            404 => ErrorKind::NotFound,
            408 => ErrorKind::Timeout,
            409 => ErrorKind::Conflict,
            429 => ErrorKind::RateLimited,
            529 => ErrorKind::Overloaded,
            500..=599 => ErrorKind::Server,
            _ => ErrorKind::BadRequest,
        }
    }

    /// Whether retrying the same request can succeed.
    pub fn is_retryable(self) -> bool {
        match self {
            ErrorKind::Timeout
            | ErrorKind::Conflict
            | ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::Server
            | ErrorKind::Transport => true,
            ErrorKind::Auth
            | ErrorKind::BadRequest
            | ErrorKind::NotFound
            | ErrorKind::MalformedStream
            | ErrorKind::Cancelled
            | ErrorKind::Config
            | ErrorKind::ContextOverflow => false,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ErrorKind::Auth => "authentication",
            ErrorKind::BadRequest => "bad request",
            ErrorKind::NotFound => "not found",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Conflict => "conflict",
            ErrorKind::RateLimited => "rate limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Server => "server",
            ErrorKind::Transport => "transport",
            ErrorKind::MalformedStream => "malformed stream",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Config => "config",
            ErrorKind::ContextOverflow => "context overflow",
        };
        f.write_str(s)
    }
}

/// Whether a rejected request was rejected for being longer than the context window, in any of
/// the providers' wordings: Anthropic `prompt is too long: N tokens > M maximum`, OpenAI's
/// `context_length_exceeded` code (and its older "maximum context length" message), vLLM's
/// "maximum context length is N tokens", llama.cpp's `exceed_context_size_error`.
pub fn is_context_overflow(
    status: u16,
    error_type: Option<&str>,
    code: Option<&str>,
    message: &str,
) -> bool {
    if !matches!(status, 400 | 413) {
        return false;
    }
    if matches!(code, Some("context_length_exceeded"))
        || matches!(error_type, Some("exceed_context_size_error"))
    {
        return true;
    }
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "maximum context length",
        "context_length_exceeded",
        "exceeds the context window",
        "exceeds the available context size",
        "context length exceeded",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// The limit a context-overflow message names, when it names one: Anthropic's `> N maximum`,
/// OpenAI's and vLLM's `maximum context length is N tokens`, llama.cpp's `n_ctx`.
pub fn overflow_limit(message: &str) -> Option<u64> {
    let number_after = |needle: &str| -> Option<u64> {
        let at = message.find(needle)? + needle.len();
        let digits: String = message[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    if let Some(i) = message.find(" maximum") {
        // "... tokens > 200000 maximum": the number just before.
        let before = message[..i].trim_end();
        let digits: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if let Ok(n) = digits.parse() {
            return Some(n);
        }
    }
    number_after("maximum context length is").or_else(|| number_after("\"n_ctx\":"))
}

/// A failure of a model turn.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The provider refused or failed the request: an HTTP error status, or an error event after
    /// a 200. `message` is the provider's text, verbatim.
    #[error("{provider} {kind} error{}{}: {message}", fmt_status(*status), fmt_request_id(request_id.as_deref()))]
    Api {
        /// Which adapter (`anthropic`, `openai`).
        provider: &'static str,
        /// Classification.
        kind: ErrorKind,
        /// HTTP status; `None` for an error event inside a 200 stream.
        status: Option<u16>,
        /// The provider's error type (`invalid_request_error`, `overloaded_error`, ...), if given.
        error_type: Option<String>,
        /// The provider's message, verbatim.
        message: String,
        /// `request-id` / `x-request-id` header, or the body's `request_id`.
        request_id: Option<String>,
        /// `retry-after-ms` / `retry-after` the provider asked for.
        retry_after: Option<Duration>,
        /// The provider's `x-should-retry` verdict, when it sent one; overrides the kind.
        should_retry: Option<bool>,
    },
    /// The connection failed or broke, or the stream ended before the turn did.
    #[error("{provider} transport error{}: {message}", fmt_request_id(request_id.as_deref()))]
    Transport {
        /// Which adapter.
        provider: &'static str,
        /// What happened.
        message: String,
        /// Request id, when the response headers had arrived.
        request_id: Option<String>,
    },
    /// The provider sent something that is not the documented stream format.
    #[error("{provider} sent a malformed stream{}: {message}", fmt_request_id(request_id.as_deref()))]
    MalformedStream {
        /// Which adapter.
        provider: &'static str,
        /// What could not be parsed, with the offending data.
        message: String,
        /// Request id.
        request_id: Option<String>,
    },
    /// The caller cancelled the turn.
    #[error("model request cancelled")]
    Cancelled,
    /// The request cannot be built (for example, a body that does not serialise).
    #[error("invalid model request: {0}")]
    InvalidRequest(String),
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

fn fmt_status(status: Option<u16>) -> String {
    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
}

fn fmt_request_id(id: Option<&str>) -> String {
    id.map(|id| format!(" [request id {id}]"))
        .unwrap_or_default()
}

impl ModelError {
    /// The classification.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ModelError::Api { kind, .. } => *kind,
            ModelError::Transport { .. } => ErrorKind::Transport,
            ModelError::MalformedStream { .. } => ErrorKind::MalformedStream,
            ModelError::Cancelled => ErrorKind::Cancelled,
            ModelError::InvalidRequest(_) => ErrorKind::BadRequest,
            ModelError::Config(_) => ErrorKind::Config,
        }
    }

    /// HTTP status, when the error came from one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Api { status, .. } => *status,
            _ => None,
        }
    }

    /// The provider's request id.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ModelError::Api { request_id, .. }
            | ModelError::Transport { request_id, .. }
            | ModelError::MalformedStream { request_id, .. } => request_id.as_deref(),
            ModelError::Cancelled | ModelError::InvalidRequest(_) | ModelError::Config(_) => None,
        }
    }

    /// The provider's message verbatim (for `Api`), or our description otherwise.
    pub fn message(&self) -> String {
        match self {
            ModelError::Api { message, .. }
            | ModelError::Transport { message, .. }
            | ModelError::MalformedStream { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// Whether the adapter retries this error. The provider's `x-should-retry` header wins over
    /// the kind, as in the official SDKs.
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Api {
                should_retry: Some(verdict),
                ..
            } => *verdict,
            other => other.kind().is_retryable(),
        }
    }

    /// The wait the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflows_are_recognised_in_each_providers_words_and_their_limit_read() {
        let anthropic = "prompt is too long: 45718 tokens > 40000 maximum";
        assert!(is_context_overflow(
            400,
            Some("invalid_request_error"),
            None,
            anthropic
        ));
        assert_eq!(overflow_limit(anthropic), Some(40_000));
        let openai = "This model's maximum context length is 128000 tokens. However, your \
                      messages resulted in 130000 tokens.";
        assert!(is_context_overflow(
            400,
            Some("invalid_request_error"),
            Some("context_length_exceeded"),
            openai
        ));
        assert_eq!(overflow_limit(openai), Some(128_000));
        assert!(is_context_overflow(
            400,
            None,
            None,
            "This model's maximum context length is 32768 tokens. However, you requested 33000"
        ));
        assert!(is_context_overflow(
            400,
            Some("exceed_context_size_error"),
            None,
            "the request exceeds the available context size, try increasing it"
        ));
        assert!(!is_context_overflow(
            400,
            Some("invalid_request_error"),
            None,
            "messages: text content blocks must be non-empty"
        ));
        assert!(!is_context_overflow(500, None, None, "prompt is too long"));
    }
}
