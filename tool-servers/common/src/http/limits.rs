//! How much of a server its clients can hold: live MCP sessions (`--max-sessions`, 503
//! beyond) and requests in flight per session (`--max-inflight`, 429 beyond).
//!
//! Why here and how:
//! - rmcp's [`LocalSessionManager`] keeps every session until DELETE or its idle timeout,
//!   with no cap: 15 000 `initialize` requests grew a server from 13 to 823 MB. Sessions
//!   are counted by [`CappedSessions`], a [`SessionManager`] wrapped around rmcp's that
//!   sees every creation and every end (DELETE, idle expiry, shutdown all pass through
//!   `close_session`).
//! - The refusal itself is decided in the [`limit`] middleware, before rmcp reads the
//!   request: rmcp would turn a session manager's error into a 500, while a client needs a
//!   503 with `Retry-After` and a JSON-RPC error naming its request. The middleware takes a
//!   [`Reservation`] for each `initialize` (live + reserved never exceeds the cap), so
//!   concurrent `initialize` requests cannot overshoot it; `CappedSessions` refuses on its
//!   own too, as a backstop for a creation the middleware did not see coming.
//! - In flight: a request holds its slot until its response body (the SSE stream that
//!   carries the answer) is finished or dropped. At the cap only requests are refused;
//!   notifications and responses (to the server's own requests) always pass.
//!
//! Both checks run after [`super::guard`], so only clients with the token are counted.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, ServerSseMessage, SessionId, SessionManager,
};

/// rmcp's own limit on a request body (`DEFAULT_MAX_REQUEST_BODY_BYTES`): a body this
/// middleware has to read to see whether it is an `initialize` is never larger.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Seconds a client refused for too many sessions is asked to wait.
const SESSIONS_RETRY_AFTER: &str = "5";
/// Seconds a client refused for too many requests in flight is asked to wait.
const INFLIGHT_RETRY_AFTER: &str = "1";

/// The session count shared by [`CappedSessions`] and the middleware.
#[derive(Debug)]
pub(crate) struct Sessions {
    max: usize,
    state: Mutex<SessionCounts>,
}

#[derive(Debug, Default)]
struct SessionCounts {
    live: HashSet<SessionId>,
    /// `initialize` requests admitted whose session does not exist yet.
    reserved: usize,
}

impl Sessions {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            state: Mutex::new(SessionCounts::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SessionCounts> {
        // The counts stay consistent even if a holder panicked: each update is one step.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for one `initialize`, or `None` when live and reserved sessions fill the cap.
    pub(crate) fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        let mut state = self.lock();
        if state.live.len() + state.reserved >= self.max {
            return None;
        }
        state.reserved += 1;
        Some(Reservation(self.clone()))
    }

    /// Sessions alive now.
    pub(crate) fn live(&self) -> usize {
        self.lock().live.len()
    }
}

/// One admitted `initialize`'s slot, released when the request is answered (by then its
/// session, if one was made, is counted as live).
#[derive(Debug)]
pub(crate) struct Reservation(Arc<Sessions>);

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.reserved = state.reserved.saturating_sub(1);
    }
}

/// Why [`CappedSessions`] failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CappedError {
    #[error("too many sessions (at most {0})")]
    Full(usize),
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

/// rmcp's in-memory session manager, with every live session counted in [`Sessions`].
pub(crate) struct CappedSessions {
    inner: LocalSessionManager,
    sessions: Arc<Sessions>,
}

impl CappedSessions {
    pub(crate) fn new(inner: LocalSessionManager, sessions: Arc<Sessions>) -> Self {
        Self { inner, sessions }
    }
}

impl SessionManager for CappedSessions {
    type Error = CappedError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Checked before and counted after: between the two only the middleware's reserved
        // requests create sessions, and each of those has a slot.
        if self.sessions.live() >= self.sessions.max {
            return Err(CappedError::Full(self.sessions.max));
        }
        let (id, transport) = self.inner.create_session().await?;
        self.sessions.lock().live.insert(id.clone());
        tracing::debug!(session = %id, "session created");
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // rmcp calls this on DELETE and again when the session's worker ends (idle expiry,
        // shutdown): the set makes the second call a no-op for the count.
        if self.sessions.lock().live.remove(id) {
            tracing::debug!(session = %id, "session ended");
        }
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// Requests in flight per session.
#[derive(Debug)]
pub(crate) struct InFlight {
    max: usize,
    by_session: Mutex<HashMap<String, usize>>,
}

impl InFlight {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            by_session: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.by_session.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for one request of `session`, or `None` when it has `max` in flight.
    fn enter(self: &Arc<Self>, session: &str) -> Option<InFlightSlot> {
        let mut map = self.lock();
        let n = map.entry(session.to_string()).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(InFlightSlot {
            owner: self.clone(),
            session: session.to_string(),
        })
    }
}

/// One request's place in its session's in-flight count, given back on drop.
#[derive(Debug)]
struct InFlightSlot {
    owner: Arc<InFlight>,
    session: String,
}

impl Drop for InFlightSlot {
    fn drop(&mut self) {
        let mut map = self.owner.lock();
        if let Some(n) = map.get_mut(&self.session) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                // No entry outlives its requests, whatever session ids clients make up.
                map.remove(&self.session);
            }
        }
    }
}

/// What the middleware needs: the two counts.
#[derive(Debug)]
pub(crate) struct Limiter {
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) in_flight: Arc<InFlight>,
}

/// The middleware (after the guard): 503 for an `initialize` beyond `--max-sessions`, 429
/// for a request beyond `--max-inflight` of its session; everything else passes untouched.
pub(crate) async fn limit(
    State(limiter): State<Arc<Limiter>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(session) = session {
        let Some(slot) = limiter.in_flight.enter(&session) else {
            let (request, probe) = match read_probe(request).await {
                Ok(read) => read,
                Err(response) => return response,
            };
            // Only requests wait for an answer. A notification or a response (say, to an
            // elicitation a running call is waiting on) must pass, or a session with every
            // slot taken by calls waiting on their client could never finish them.
            let Some(id) = probe.and_then(|p| p.method.and(p.id)) else {
                return next.run(request).await;
            };
            tracing::warn!(
                session,
                max = limiter.in_flight.max,
                "refused a request: too many in flight for its session"
            );
            return refusal(
                StatusCode::TOO_MANY_REQUESTS,
                INFLIGHT_RETRY_AFTER,
                Some(id),
                &format!(
                    "too many requests in flight for this session (at most {}, \
                     --max-inflight). hint: wait for an answer before sending more, or retry \
                     after the Retry-After seconds",
                    limiter.in_flight.max
                ),
            );
        };
        let response = next.run(request).await;
        return response.map(|body| Body::new(HoldUntilDone { body, _slot: slot }));
    }
    // Without a session id, only an `initialize` makes a session. A 2026-07-28 request
    // names its method in `Mcp-Method` (rmcp checks it against the body), so only requests
    // without that header, or naming `initialize`, have their body looked at.
    let named = request
        .headers()
        .get("mcp-method")
        .map(|m| m.as_bytes() == b"initialize");
    if named == Some(false) {
        return next.run(request).await;
    }
    let (request, probe) = match read_probe(request).await {
        Ok(read) => read,
        Err(response) => return response,
    };
    if probe.as_ref().and_then(|p| p.method.as_deref()) != Some("initialize") {
        return next.run(request).await;
    }
    let Some(reservation) = limiter.sessions.reserve() else {
        tracing::warn!(
            max = limiter.sessions.max,
            "refused an initialize: too many sessions"
        );
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            SESSIONS_RETRY_AFTER,
            probe.and_then(|p| p.id),
            &format!(
                "too many sessions: this server holds at most {} (--max-sessions). hint: \
                 retry after the Retry-After seconds; clients end sessions they no longer need \
                 with DELETE, and idle ones end after --session-idle-sec",
                limiter.sessions.max
            ),
        );
    };
    let response = next.run(request).await;
    drop(reservation);
    response
}

/// The two fields of a JSON-RPC message the limits need.
#[derive(Debug, serde::Deserialize)]
struct Probe {
    method: Option<String>,
    id: Option<serde_json::Value>,
}

/// Reads the body (up to rmcp's own limit) and gives back the request rebuilt around it
/// with what the body says, `None` when it is not one JSON-RPC message.
async fn read_probe(request: Request) -> Result<(Request, Option<Probe>), Response> {
    let (parts, body) = request.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: the request body could not be read within 4 MiB: {e}\n"),
        )
            .into_response()
    })?;
    let probe = serde_json::from_slice::<Probe>(&bytes).ok();
    Ok((Request::from_parts(parts, Body::from(bytes)), probe))
}

/// A refusal with `Retry-After` and a JSON-RPC error body for the request `id`.
fn refusal(
    status: StatusCode,
    retry_after: &'static str,
    id: Option<serde_json::Value>,
    message: &str,
) -> Response {
    let mut body = serde_json::json!({
        "jsonrpc": "2.0",
        "error": {"code": -32000, "message": message},
    });
    if let Some(id) = id {
        body["id"] = id;
    }
    (
        status,
        [
            (header::RETRY_AFTER, HeaderValue::from_static(retry_after)),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A response body that keeps its request's in-flight slot until it is finished or dropped.
struct HoldUntilDone {
    body: Body,
    _slot: InFlightSlot,
}

impl http_body::Body for HoldUntilDone {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn reservations_and_live_sessions_share_the_cap() {
        let s = Sessions::new(2);
        let a = s.reserve().unwrap();
        let b = s.reserve().unwrap();
        assert!(s.reserve().is_none(), "two reserved fill a cap of two");
        // The first becomes a live session, the second is answered without one.
        s.lock().live.insert(SessionId::from("one".to_string()));
        drop(a);
        assert!(s.reserve().is_none(), "one live + one reserved");
        drop(b);
        let c = s.reserve().unwrap();
        assert!(s.reserve().is_none());
        drop(c);
        assert!(s.lock().live.remove(&SessionId::from("one".to_string())));
        assert_eq!(s.live(), 0);
        let _x = s.reserve().unwrap();
        let _y = s.reserve().unwrap();
    }

    #[test]
    fn in_flight_slots_are_per_session_and_leave_no_entry_behind() {
        let f = InFlight::new(2);
        let a1 = f.enter("a").unwrap();
        let a2 = f.enter("a").unwrap();
        assert!(f.enter("a").is_none());
        let b1 = f.enter("b").unwrap();
        drop(a1);
        let a3 = f.enter("a").unwrap();
        drop((a2, a3, b1));
        assert!(f.lock().is_empty());
    }
}
