//! The HTTP client under every streamable HTTP connection: rmcp's reqwest client, with the
//! server's token put on each request and a refused one recovered by the server's
//! [`Authorizer`] — so a `401` or a step-up `403` is handled where it happens, below the MCP
//! session, and the request that met it is sent again with the new token.

use std::{borrow::Cow, collections::HashMap, sync::Arc, time::Duration};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::{
    model::ClientJsonRpcMessage,
    transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::Sse;

use super::{AuthError, Authorizer, authorizer::Denied};

/// A request refused this many times in a row (each time with a new token) fails.
const MAX_RECOVERIES: usize = 3;

/// Why a request of the HTTP transport failed below MCP.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpClientError {
    /// The HTTP request itself failed.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// The server wants authorization tern could not give.
    #[error(transparent)]
    Auth(#[from] AuthError),
}

type Error = StreamableHttpError<HttpClientError>;

/// rmcp's reqwest client plus the server's authorizer (none: the configured bearer token, if
/// any, is sent as it is).
#[derive(Clone)]
pub(crate) struct AuthHttpClient {
    http: reqwest::Client,
    auth: Option<Arc<Authorizer>>,
}

impl AuthHttpClient {
    pub(crate) fn new(auth: Option<Arc<Authorizer>>) -> Self {
        Self {
            http: mcp_client(),
            auth,
        }
    }
}

/// Like rmcp's default client: no idle pooling (avoids delayed-ACK stalls), and only
/// same-origin 307/308 redirects followed, which keep the method and body.
fn mcp_client() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > 10 {
            attempt.error("more than 10 redirects")
        } else {
            attempt.follow()
        }
    });
    crate::http_client()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .connect_timeout(Duration::from_secs(30))
        .build()
        .unwrap_or_default()
}

/// The challenge of a refusal the authorizer can act on.
fn refusal<E: std::error::Error + Send + Sync + 'static>(
    e: &StreamableHttpError<E>,
) -> Option<(Denied, String)> {
    match e {
        StreamableHttpError::AuthRequired(a) => {
            Some((Denied::Unauthorized, a.www_authenticate_header.clone()))
        }
        StreamableHttpError::InsufficientScope(s) => {
            let header = s.www_authenticate_header.clone();
            let challenge = super::challenge::Challenge::parse(&header);
            // A 403 that is not about scope is not a step-up (RFC 6750 §3.1).
            challenge
                .insufficient_scope()
                .then_some((Denied::InsufficientScope, header))
        }
        _ => None,
    }
}

impl AuthHttpClient {
    /// Runs `send` with the current token; a refusal is recovered and `send` runs again with the
    /// new token, at most [`MAX_RECOVERIES`] times.
    async fn with_token<T, F, Fut>(&self, fallback: Option<String>, send: F) -> Result<T, Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let Some(auth) = &self.auth else {
            return send(fallback).await.map_err(convert);
        };
        let mut token = auth.bearer().await;
        for _ in 0..MAX_RECOVERIES {
            let err = match send(token.clone()).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let Some((denied, header)) = refusal(&err) else {
                return Err(convert(err));
            };
            let recovered = auth
                .recover(token.as_deref(), &header, denied)
                .await
                .map_err(|e| StreamableHttpError::Client(HttpClientError::Auth(e)))?;
            token = Some(recovered);
        }
        Err(StreamableHttpError::Client(HttpClientError::Auth(
            AuthError::TooManyAttempts {
                server: auth.server().to_string(),
                attempts: MAX_RECOVERIES as u32,
            },
        )))
    }
}

impl StreamableHttpClient for AuthHttpClient {
    type Error = HttpClientError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_token(auth_header, |token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        // Closing needs no new authorization: the current token, or nothing.
        let token = match &self.auth {
            Some(auth) => auth.bearer().await,
            None => auth_header,
        };
        self.http
            .delete_session(uri, session_id, token, custom_headers)
            .await
            .map_err(convert)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.with_token(auth_header, |token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}

/// rmcp's reqwest error type, as this client's.
fn convert(e: StreamableHttpError<reqwest::Error>) -> Error {
    use StreamableHttpError as E;
    match e {
        E::Sse(e) => E::Sse(e),
        E::Io(e) => E::Io(e),
        E::Client(e) => E::Client(HttpClientError::Http(e)),
        E::HttpStatus(e) => E::HttpStatus(e),
        E::UnexpectedEndOfStream => E::UnexpectedEndOfStream,
        E::UnexpectedServerResponse(m) => E::UnexpectedServerResponse(m),
        E::ResponseBodyTooLarge { max_size } => E::ResponseBodyTooLarge { max_size },
        E::UnexpectedContentType(t) => E::UnexpectedContentType(t),
        E::ServerDoesNotSupportSse => E::ServerDoesNotSupportSse,
        E::ServerDoesNotSupportDeleteSession => E::ServerDoesNotSupportDeleteSession,
        E::TokioJoinError(e) => E::TokioJoinError(e),
        E::Deserialize(e) => E::Deserialize(e),
        E::TransportChannelClosed => E::TransportChannelClosed,
        E::MissingSessionIdInResponse => E::MissingSessionIdInResponse,
        E::AuthRequired(e) => E::AuthRequired(e),
        E::InsufficientScope(e) => E::InsufficientScope(e),
        E::ReservedHeaderConflict(h) => E::ReservedHeaderConflict(h),
        E::SessionExpired => E::SessionExpired,
        E::SessionRecoveryTimeout => E::SessionRecoveryTimeout,
        E::ReinitializationFailed(e) => E::ReinitializationFailed(e),
        E::ControlRequestTimeout => E::ControlRequestTimeout,
        other => E::UnexpectedServerResponse(Cow::Owned(other.to_string())),
    }
}
