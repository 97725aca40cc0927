//! Serving over stdio with a bound on the requests in flight.
//!
//! rmcp spawns a task for every request it reads and queues every response
//! until the pipe takes it, so a client that writes 3 000 requests at once gets
//! 3 000 tasks and answers in memory at the same time (the server's peak RSS
//! went from 7 to 30 MiB). [`Bounded`] wraps the transport and hands rmcp the
//! next request only while fewer than `slots` requests are unanswered, a slot
//! being freed when the answer has been written. The rest wait unread in the
//! pipe, which is the backpressure a client expects from a pipe.
//!
//! Notifications are never held back: up to `read_ahead` messages are read past
//! a waiting request, so a `notifications/cancelled` still arrives while every
//! slot is busy; cancelling a request that is still waiting drops it unanswered
//! (as the MCP spec asks of a cancelled request), and cancelling a running one
//! frees its slot, since rmcp drops the answer of a cancelled request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests handled at once. Above the 8 a busy host keeps in flight, low
/// enough that the answers waiting to be written stay small.
pub(crate) const DEFAULT_SLOTS: usize = 16;
/// Messages read past a request that waits for a slot, to see cancellations.
pub(crate) const DEFAULT_READ_AHEAD: usize = 64;

/// A transport that delivers a request only when a slot is free.
pub(crate) struct Bounded<T> {
    inner: T,
    slots: Arc<Semaphore>,
    /// Slots of delivered requests, until their answer is written.
    held: Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>,
    /// Messages read but not yet delivered, in arrival order.
    ahead: VecDeque<ClientJsonRpcMessage>,
    read_ahead: usize,
    /// The input ended; `ahead` is what is left.
    closed: bool,
}

impl<T> Bounded<T> {
    pub(crate) fn new(inner: T, slots: usize, read_ahead: usize) -> Self {
        Self {
            inner,
            slots: Arc::new(Semaphore::new(slots.max(1))),
            held: Arc::new(Mutex::new(HashMap::new())),
            ahead: VecDeque::new(),
            read_ahead: read_ahead.max(1),
            closed: false,
        }
    }

    fn hold(&self, id: RequestId, permit: OwnedSemaphorePermit) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, permit);
    }

    /// The next message that may be delivered without a slot: the first
    /// non-request (notifications and responses overtake waiting requests).
    fn take_free(&mut self) -> Option<ClientJsonRpcMessage> {
        let i = self
            .ahead
            .iter()
            .position(|m| !matches!(m, JsonRpcMessage::Request(_)))?;
        let message = self.ahead.remove(i)?;
        if let JsonRpcMessage::Notification(n) = &message
            && let ClientNotification::CancelledNotification(c) = &n.notification
            && let Some(id) = &c.params.request_id
        {
            // Still waiting: it is dropped, never run nor answered.
            self.ahead
                .retain(|m| !matches!(m, JsonRpcMessage::Request(r) if &r.id == id));
            // Running: rmcp drops its answer, so its slot is freed here.
            self.held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(id);
        }
        Some(message)
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Bounded<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        let held = Arc::clone(&self.held);
        let write = self.inner.send(item);
        async move {
            let result = write.await;
            // The slot is free once the answer has left: until then it is memory.
            if let Some(id) = id {
                held.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
            result
        }
    }

    /// Cancellation-safe, as rmcp requires (it polls this inside `select!`):
    /// all state lives in `self` and changes only after an inner future completes.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(message) = self.take_free() {
                return Some(message);
            }
            // Only requests are waiting (or nothing is).
            if !self.ahead.is_empty()
                && let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned()
            {
                return self.deliver(permit);
            }
            if self.closed {
                if self.ahead.is_empty() {
                    return None;
                }
                // Input is over: wait for a slot for what is left.
                let permit = Arc::clone(&self.slots).acquire_owned().await.ok()?;
                return self.deliver(permit);
            }
            let can_read = self.ahead.len() < self.read_ahead;
            let waiting = !self.ahead.is_empty();
            let slots = Arc::clone(&self.slots);
            tokio::select! {
                biased;
                permit = slots.acquire_owned(), if waiting => {
                    let permit = permit.ok()?;
                    return self.deliver(permit);
                }
                message = self.inner.receive(), if can_read => match message {
                    Some(m) => self.ahead.push_back(m),
                    None => self.closed = true,
                },
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl<T> Bounded<T> {
    /// Hands out the first waiting request under `permit`.
    fn deliver(&mut self, permit: OwnedSemaphorePermit) -> Option<ClientJsonRpcMessage> {
        let message = self.ahead.pop_front()?;
        if let JsonRpcMessage::Request(r) = &message {
            self.hold(r.id.clone(), permit);
        }
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::time::Duration;

    use rmcp::model::ServerJsonRpcMessage;
    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;

    /// An inner transport fed by a channel (what the client wrote), recording
    /// nothing it sends; the wrapper's behaviour is what is under test.
    struct Pipe {
        rx: mpsc::UnboundedReceiver<ClientJsonRpcMessage>,
    }

    impl Transport<RoleServer> for Pipe {
        type Error = std::io::Error;
        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleServer>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }
        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
            self.rx.recv().await
        }
        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn request(id: u64) -> ClientJsonRpcMessage {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})).unwrap()
    }

    fn cancel(id: u64) -> ClientJsonRpcMessage {
        serde_json::from_value(json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id}
        }))
        .unwrap()
    }

    fn answer(id: u64) -> ServerJsonRpcMessage {
        serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {}})).unwrap()
    }

    fn id_of(m: &ClientJsonRpcMessage) -> String {
        match m {
            JsonRpcMessage::Request(r) => format!("request {}", r.id),
            JsonRpcMessage::Notification(_) => "notification".into(),
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => "other".into(),
        }
    }

    fn bounded(slots: usize) -> (Bounded<Pipe>, mpsc::UnboundedSender<ClientJsonRpcMessage>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Bounded::new(Pipe { rx }, slots, 8), tx)
    }

    async fn next(t: &mut Bounded<Pipe>) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(100), t.receive())
            .await
            .ok()
            .map(|m| id_of(&m.expect("input open")))
    }

    #[tokio::test]
    async fn a_request_waits_until_an_answer_frees_a_slot() {
        let (mut t, tx) = bounded(2);
        for id in 1..=3 {
            tx.send(request(id)).unwrap();
        }
        assert_eq!(next(&mut t).await.as_deref(), Some("request 1"));
        assert_eq!(next(&mut t).await.as_deref(), Some("request 2"));
        assert_eq!(next(&mut t).await, None, "both slots are busy");
        t.send(answer(2)).await.unwrap();
        assert_eq!(next(&mut t).await.as_deref(), Some("request 3"));
    }

    #[tokio::test]
    async fn cancellations_overtake_waiting_requests_and_free_slots() {
        let (mut t, tx) = bounded(1);
        for id in 1..=3 {
            tx.send(request(id)).unwrap();
        }
        assert_eq!(next(&mut t).await.as_deref(), Some("request 1"));
        // Request 2 is waiting for the slot; its cancellation is read past it.
        tx.send(cancel(2)).unwrap();
        assert_eq!(next(&mut t).await.as_deref(), Some("notification"));
        // Request 1 is cancelled while running: its slot is freed (rmcp drops its
        // answer), and request 2 never runs.
        tx.send(cancel(1)).unwrap();
        assert_eq!(next(&mut t).await.as_deref(), Some("notification"));
        assert_eq!(next(&mut t).await.as_deref(), Some("request 3"));
        assert_eq!(next(&mut t).await, None);
    }

    #[tokio::test]
    async fn what_is_left_is_delivered_after_the_input_ends() {
        let (mut t, tx) = bounded(1);
        tx.send(request(1)).unwrap();
        tx.send(request(2)).unwrap();
        drop(tx);
        assert_eq!(next(&mut t).await.as_deref(), Some("request 1"));
        t.send(answer(1)).await.unwrap();
        assert_eq!(next(&mut t).await.as_deref(), Some("request 2"));
        t.send(answer(2)).await.unwrap();
        let end = tokio::time::timeout(Duration::from_millis(100), t.receive()).await;
        assert!(matches!(end, Ok(None)), "then the input ends");
    }
}
