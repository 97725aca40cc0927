//! The guard every transport is wrapped in: only replies to requests tern actually has in
//! flight get through, matched by exact id.
//!
//! rmcp matches a reply to a request loosely (a string id `"7"` completes request `7`), and
//! during the handshake it fails the whole connection on any reply it did not expect. Both are
//! wrong for a host: a reply with another id type is not ours (issue 15, F13), and a stray reply
//! before the `initialize` reply is noise to ignore, as the TypeScript SDK does (issue 11,
//! item 8). The guard also turns a `server/discover` answer that is no discover result (some
//! legacy servers answer every unknown method with `{}`) into the "method not found" a legacy
//! server should have sent, so the probe falls back to `initialize` on the same connection.
//!
//! A server that never answers the probe at all (some legacy servers ignore what they do not
//! know until initialized) gets the same "method not found" after a probe timeout shorter than
//! the startup timeout — rmcp waits 10 s, as long as tern's default startup timeout, so such a
//! server could never start.
//!
//! And it sees `notifications/tools/list_changed` in wire order: the server's tools are marked
//! as changing before any reply that follows the notification reaches its caller, so a call
//! that returns after a server dropped a tool can never race the re-list.

use std::{
    collections::HashSet,
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient,
    model::{
        ClientNotification, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
        ServerNotification, ServerResult,
    },
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// A transport whose incoming replies are checked against the requests sent through it.
pub(crate) struct Guarded<T> {
    inner: T,
    pending: HashSet<RequestId>,
    /// The `server/discover` probe in flight, and when to give up on it.
    discover: Option<(RequestId, Instant)>,
    probe_timeout: Duration,
    tools_changing: Arc<dyn Fn() + Send + Sync>,
}

impl<T> Guarded<T> {
    /// Wraps `inner`; `tools_changing` runs when the server announces a tool list change; a
    /// `server/discover` unanswered after `probe_timeout` counts as "not supported".
    pub(crate) fn new(
        inner: T,
        probe_timeout: Duration,
        tools_changing: Arc<dyn Fn() + Send + Sync>,
    ) -> Self {
        Self {
            inner,
            pending: HashSet::new(),
            discover: None,
            probe_timeout,
            tools_changing,
        }
    }

    fn not_a_modern_server(id: RequestId, why: &'static str) -> RxJsonRpcMessage<RoleClient> {
        JsonRpcMessage::error(
            ErrorData::new(ErrorCode::METHOD_NOT_FOUND, why, None),
            Some(id),
        )
    }

    /// Whether `id` answers a request in flight (and retires it).
    fn answers(&mut self, id: &RequestId) -> bool {
        self.pending.remove(id)
    }

    fn check(&mut self, msg: RxJsonRpcMessage<RoleClient>) -> Option<RxJsonRpcMessage<RoleClient>> {
        match msg {
            JsonRpcMessage::Response(r) => {
                if !self.answers(&r.id) {
                    tracing::debug!(id = %r.id, "ignoring a reply that answers no request in flight");
                    return None;
                }
                if self.discover.as_ref().is_some_and(|(id, _)| *id == r.id) {
                    self.discover = None;
                    let legacy = match &r.result {
                        // A discover result naming only revisions that open with `initialize`
                        // says "use initialize": rmcp would give up instead.
                        ServerResult::DiscoverResult(d) => {
                            !d.supported_versions.iter().any(|v| !v.has_initialize())
                        }
                        _ => true,
                    };
                    if legacy {
                        return Some(Self::not_a_modern_server(
                            r.id,
                            "server/discover did not offer a revision without initialize",
                        ));
                    }
                }
                Some(JsonRpcMessage::Response(r))
            }
            JsonRpcMessage::Error(e) => match &e.id {
                Some(id) if !self.answers(id) => {
                    tracing::debug!(%id, "ignoring an error reply that answers no request in flight");
                    None
                }
                Some(id) => {
                    if self.discover.as_ref().is_some_and(|(d, _)| d == id) {
                        self.discover = None;
                    }
                    Some(JsonRpcMessage::Error(e))
                }
                None => Some(JsonRpcMessage::Error(e)),
            },
            JsonRpcMessage::Notification(n) => {
                if matches!(
                    n.notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    (self.tools_changing)();
                }
                Some(JsonRpcMessage::Notification(n))
            }
            other => Some(other),
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Guarded<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r) => {
                self.pending.insert(r.id.clone());
                if matches!(r.request, ClientRequest::DiscoverRequest(_)) {
                    self.discover = Some((r.id.clone(), Instant::now() + self.probe_timeout));
                }
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.pending.remove(id);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let msg = match self.discover.clone() {
                // Both transports' `receive` are cancel-safe: a message cut short by the
                // timeout is resumed by the next call.
                Some((id, deadline)) => {
                    match tokio::time::timeout_at(deadline.into(), self.inner.receive()).await {
                        Ok(msg) => msg?,
                        Err(_) => {
                            self.discover = None;
                            self.pending.remove(&id);
                            return Some(Self::not_a_modern_server(
                                id,
                                "no answer to server/discover",
                            ));
                        }
                    }
                }
                None => self.inner.receive().await?,
            };
            if let Some(msg) = self.check(msg) {
                return Some(msg);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
