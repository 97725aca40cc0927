//! The event bus of a run: every part of the engine emits [`Event`]s here, subscribers render
//! them. The event types themselves live in `tern-protocol`, shared with the pool and the gateway.

use std::sync::{Arc, Mutex};

use tern_protocol::{Envelope, Event, EventSink, now_rfc3339};

/// Receives every event, in order.
pub trait Subscriber: Send {
    /// Called once per event, in `seq` order.
    fn on_event(&mut self, event: &Envelope);
    /// Called when the bus closes (flush and close files).
    fn close(&mut self) {}
}

struct BusInner {
    seq: u64,
    /// The session events belong to: `/clear` starts another one within the same run.
    session_id: Arc<str>,
    subscribers: Vec<Box<dyn Subscriber>>,
    closed: bool,
}

/// Fans events out to subscribers synchronously, so their order is the order of `seq`
/// everywhere (terminal, file, JSONL).
#[derive(Clone)]
pub struct EventBus {
    run_id: Arc<str>,
    inner: Arc<Mutex<BusInner>>,
}

impl EventBus {
    /// A bus for one run.
    pub fn new(run_id: &str, session_id: &str) -> Self {
        Self {
            run_id: run_id.into(),
            inner: Arc::new(Mutex::new(BusInner {
                seq: 0,
                session_id: session_id.into(),
                subscribers: Vec::new(),
                closed: false,
            })),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The session's id (the current one: see [`EventBus::set_session_id`]).
    pub fn session_id(&self) -> String {
        self.inner
            .lock()
            .map(|i| i.session_id.to_string())
            .unwrap_or_default()
    }

    /// Events from now on belong to `session_id` (`/clear` started a new session).
    pub fn set_session_id(&self, session_id: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.session_id = session_id.into();
        }
    }

    /// Adds a subscriber; it sees events emitted from now on.
    pub fn subscribe(&self, s: Box<dyn Subscriber>) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.subscribers.push(s);
        }
    }

    /// Publishes an event. After [`EventBus::close`] events are dropped.
    pub fn emit(&self, event: Event) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.closed {
            return;
        }
        inner.seq += 1;
        let envelope = Envelope {
            run_id: self.run_id.to_string(),
            session_id: inner.session_id.to_string(),
            seq: inner.seq,
            ts: now_rfc3339(),
            event,
        };
        for s in inner.subscribers.iter_mut() {
            s.on_event(&envelope);
        }
    }

    /// This bus as the sink the pool and the gateway report to.
    pub fn sink(&self) -> EventSink {
        let bus = self.clone();
        Arc::new(move |e| bus.emit(e))
    }

    /// Closes every subscriber (idempotent).
    pub fn close(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            if inner.closed {
                return;
            }
            inner.closed = true;
            for s in inner.subscribers.iter_mut() {
                s.close();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Arc<Mutex<Vec<Envelope>>>);
    impl Subscriber for Collect {
        fn on_event(&mut self, e: &Envelope) {
            self.0.lock().unwrap().push(e.clone());
        }
    }

    #[test]
    fn events_carry_ids_and_gap_free_seq_and_stop_after_close() {
        let bus = EventBus::new("r1", "s1");
        let seen = Arc::new(Mutex::new(Vec::new()));
        bus.subscribe(Box::new(Collect(seen.clone())));
        bus.emit(Event::TextDelta { text: "hi".into() });
        (bus.sink())(Event::TurnEnd { step: 1 });
        bus.close();
        bus.emit(Event::TurnEnd { step: 2 });
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].seq, 1);
        assert_eq!(seen[1].seq, 2);
        assert_eq!(seen[0].run_id, "r1");
        assert_eq!(seen[1].session_id, "s1");
    }

    #[test]
    fn events_after_a_new_session_carry_its_id() {
        let bus = EventBus::new("r1", "s1");
        let seen = Arc::new(Mutex::new(Vec::new()));
        bus.subscribe(Box::new(Collect(seen.clone())));
        bus.emit(Event::TurnEnd { step: 1 });
        bus.set_session_id("s2");
        (bus.sink())(Event::TurnEnd { step: 2 });
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].session_id, "s1");
        assert_eq!(seen[1].session_id, "s2");
        assert_eq!(bus.session_id(), "s2");
    }
}
