//! The provider-independent half of an adapter: send the request, classify the HTTP status, feed
//! the SSE bytes to the provider's decoder as they arrive, and retry what can be retried.
//!
//! The work runs in a spawned task that hands events to the caller through a small bounded
//! channel. That keeps retry sleeps, cancellation and the socket in one place, and the channel's
//! back-pressure means nothing is buffered beyond a few events. Dropping the returned stream
//! cancels the task (a drop guard on a child token), which drops the HTTP response and with it
//! the connection.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use reqwest::header::HeaderMap;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::error::ModelError;
use crate::retry::RetryPolicy;
use crate::sse::{SseEvent, SseParser};
use crate::types::ModelEvent;

/// The stream an adapter returns.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// What one provider contributes to the driver.
pub(crate) trait Wire: Send + Sync + 'static {
    /// `anthropic` / `openai`, for errors and logs.
    fn provider(&self) -> &'static str;
    /// The POST with URL, auth and headers; the body is serialised once and reused on retries so
    /// every attempt sends the very same bytes.
    fn request(&self, client: &reqwest::Client, body: Bytes) -> reqwest::RequestBuilder;
    /// A fresh decoder for one attempt.
    fn decoder(&self, request_id: Option<String>) -> Box<dyn Decoder>;
    /// Turns an error response into a [`ModelError`], keeping the provider's message verbatim.
    fn error_response(
        &self,
        status: u16,
        headers: &HeaderMap,
        body: &[u8],
        request_id: Option<String>,
    ) -> ModelError;
}

/// Turns one attempt's SSE events into [`ModelEvent`]s.
pub(crate) trait Decoder: Send {
    /// Handles one event. Returns `Ok(true)` once the turn is complete (its `Completed` pushed).
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError>;
    /// The body ended before `on_event` returned `true`: finish the turn or report a broken stream.
    fn on_eof(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
}

/// Serialises `body` and starts the turn: the common tail of every adapter's `stream`.
pub(crate) fn start(
    wire: Arc<dyn Wire>,
    url: &str,
    model: &str,
    client: &reqwest::Client,
    retry: RetryPolicy,
    body: &serde_json::Value,
    cancel: CancellationToken,
) -> Result<EventStream, ModelError> {
    let body = serde_json::to_vec(body).map_err(|e| ModelError::InvalidRequest(e.to_string()))?;
    tracing::debug!(
        provider = wire.provider(),
        model,
        url,
        bytes = body.len(),
        "sending model request"
    );
    Ok(spawn(
        wire,
        client.clone(),
        retry,
        Bytes::from(body),
        cancel,
    ))
}

/// Starts the request in a task and returns its event stream.
pub(crate) fn spawn(
    wire: Arc<dyn Wire>,
    client: reqwest::Client,
    retry: RetryPolicy,
    body: Bytes,
    cancel: CancellationToken,
) -> EventStream {
    // Small: the consumer is normally waiting; a few slots absorb bursts of tiny deltas.
    let (tx, rx) = mpsc::channel(32);
    let token = cancel.child_token();
    let guard = token.clone().drop_guard();
    tokio::spawn(run(wire, client, retry, body, token, tx));
    Box::pin(GuardedStream { rx, _guard: guard })
}

struct GuardedStream {
    rx: mpsc::Receiver<Result<ModelEvent, ModelError>>,
    _guard: DropGuard,
}

impl Stream for GuardedStream {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

type Tx = mpsc::Sender<Result<ModelEvent, ModelError>>;

/// How an attempt ended, other than success.
enum Stop {
    /// The consumer dropped the stream; nobody to tell.
    Gone,
    /// The attempt failed.
    Failed(ModelError),
}

impl From<ModelError> for Stop {
    fn from(e: ModelError) -> Self {
        Stop::Failed(e)
    }
}

async fn run(
    wire: Arc<dyn Wire>,
    client: reqwest::Client,
    retry: RetryPolicy,
    body: Bytes,
    token: CancellationToken,
    tx: Tx,
) {
    let provider = wire.provider();
    let mut attempt: u32 = 0;
    loop {
        let mut delivered = false;
        let outcome = tokio::select! {
            biased;
            () = token.cancelled() => Err(Stop::Failed(ModelError::Cancelled)),
            r = attempt_once(&*wire, &client, body.clone(), &tx, &mut delivered) => r,
        };
        let error = match outcome {
            Ok(()) | Err(Stop::Gone) => return,
            Err(Stop::Failed(e)) => e,
        };
        if !error.is_retryable() || attempt >= retry.max_retries {
            tracing::warn!(provider, error = %error, "model turn failed");
            let _ = tx.send(Err(error)).await;
            return;
        }
        attempt += 1;
        let delay = retry.delay(attempt, error.retry_after());
        tracing::warn!(provider, attempt, ?delay, error = %error, "retrying model request");
        let event = ModelEvent::Retry {
            attempt,
            reason: error.to_string(),
            delay,
            discard_partial: delivered,
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
        tokio::select! {
            biased;
            () = token.cancelled() => {
                let _ = tx.send(Err(ModelError::Cancelled)).await;
                return;
            }
            () = tokio::time::sleep(delay) => {}
        }
    }
}

async fn attempt_once(
    wire: &dyn Wire,
    client: &reqwest::Client,
    body: Bytes,
    tx: &Tx,
    delivered: &mut bool,
) -> Result<(), Stop> {
    let provider = wire.provider();
    let transport = |e: reqwest::Error, request_id: Option<String>| ModelError::Transport {
        provider,
        message: error_chain(&e),
        request_id,
    };
    let mut response = wire
        .request(client, body)
        .send()
        .await
        .map_err(|e| transport(e, None))?;
    let status = response.status().as_u16();
    let request_id = request_id(response.headers());
    tracing::debug!(provider, status, request_id = ?request_id, "model response headers");
    if !response.status().is_success() {
        let headers = response.headers().clone();
        let rid = request_id.clone();
        let body = response.bytes().await.map_err(|e| transport(e, rid))?;
        return Err(wire
            .error_response(status, &headers, &body, request_id)
            .into());
    }
    if is_json(response.headers()) {
        // A server that ignored `stream: true` (or a proxy's error page): retrying will not help.
        let rid = request_id.clone();
        let body = response.bytes().await.map_err(|e| transport(e, rid))?;
        return Err(ModelError::MalformedStream {
            provider,
            message: format!(
                "expected an SSE stream (text/event-stream), got JSON: {}",
                String::from_utf8_lossy(&body)
            ),
            request_id,
        }
        .into());
    }
    let mut decoder = wire.decoder(request_id.clone());
    let mut parser = SseParser::new();
    let mut sse = Vec::new();
    let mut out = Vec::new();
    let malformed =
        |e: crate::sse::SseError, request_id: &Option<String>| ModelError::MalformedStream {
            provider,
            message: e.to_string(),
            request_id: request_id.clone(),
        };
    loop {
        let eof = match response.chunk().await {
            Ok(Some(bytes)) => {
                parser
                    .feed(&bytes, &mut sse)
                    .map_err(|e| malformed(e, &request_id))?;
                false
            }
            Ok(None) => {
                parser
                    .finish(&mut sse)
                    .map_err(|e| malformed(e, &request_id))?;
                true
            }
            Err(e) => return Err(transport(e, request_id).into()),
        };
        for event in sse.drain(..) {
            let done = decoder.on_event(event, &mut out)?;
            deliver(tx, &mut out, delivered).await?;
            if done {
                return Ok(());
            }
        }
        if eof {
            decoder.on_eof(&mut out)?;
            deliver(tx, &mut out, delivered).await?;
            return Ok(());
        }
    }
}

async fn deliver(tx: &Tx, out: &mut Vec<ModelEvent>, delivered: &mut bool) -> Result<(), Stop> {
    for event in out.drain(..) {
        tx.send(Ok(event)).await.map_err(|_| Stop::Gone)?;
        *delivered = true;
    }
    Ok(())
}

/// `request-id` (Anthropic) or `x-request-id` (OpenAI and most compatible servers).
fn request_id(headers: &HeaderMap) -> Option<String> {
    ["request-id", "x-request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok().map(str::to_owned))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"))
}

/// reqwest's top-level message is often just "error decoding response body"; the cause chain says
/// what actually happened (connection reset, incomplete chunked body, timeout).
fn error_chain(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}
