//! Accepting connections: a cap on how many are open (`--max-connections`), and timeouts so
//! a connection that sends nothing, dribbles its headers (slowloris) or never presents the
//! token does not keep its socket (`--header-timeout-sec`).
//!
//! Why not `axum::serve`: it has neither a header timeout nor a connection cap, and accepts
//! every connection before any check, so 300 idle connections exhausted a server's file
//! descriptors and locked real clients out. Here each connection is served by hyper's
//! HTTP/1 with `header_read_timeout` (which also bounds the idle time between keep-alive
//! requests), and:
//! - a connection with no authorized request within the same timeout of connecting is
//!   closed (the guard marks a connection authorized when a request passes it);
//! - at the cap, the oldest connection that is not authorized is closed to make room for
//!   the new one, so connections without the token can never crowd out clients that have
//!   it; only when every open connection is authorized is the newcomer refused (503).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

/// What a refused connection reads before it is closed.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-type: text/plain\r\n\
content-length: 58\r\nconnection: close\r\n\r\nService Unavailable: too many connections (--max-connections)";

/// One connection's mark, put into every request's extensions: the guard sets it when a
/// request passes the token check.
#[derive(Debug, Clone)]
pub(crate) struct Authorized(Arc<AtomicBool>);

impl Authorized {
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct Entry {
    authorized: Authorized,
    close: CancellationToken,
}

/// The open connections, oldest first.
struct Registry {
    max: usize,
    state: Mutex<(u64, BTreeMap<u64, Entry>)>,
    emptied: Notify,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, (u64, BTreeMap<u64, Entry>)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new connection, closing the oldest unauthorized one when at the cap;
    /// `None` when every open connection is authorized.
    fn admit(&self) -> Option<(u64, Authorized, CancellationToken)> {
        let mut state = self.lock();
        let (next, conns) = &mut *state;
        if conns.len() >= self.max {
            let victim = conns
                .iter()
                .find(|(_, e)| !e.authorized.get())
                .map(|(id, _)| *id)?;
            if let Some(entry) = conns.remove(&victim) {
                tracing::debug!("closing the oldest connection without the token to make room");
                entry.close.cancel();
            }
        }
        let id = *next;
        *next += 1;
        let authorized = Authorized(Arc::new(AtomicBool::new(false)));
        let close = CancellationToken::new();
        conns.insert(
            id,
            Entry {
                authorized: authorized.clone(),
                close: close.clone(),
            },
        );
        Some((id, authorized, close))
    }

    fn remove(&self, id: u64) {
        let mut state = self.lock();
        state.1.remove(&id);
        if state.1.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    async fn wait_empty(&self) {
        loop {
            let emptied = self.emptied.notified();
            if self.lock().1.is_empty() {
                return;
            }
            emptied.await;
        }
    }
}

/// Serves `app` on `listener` until `stop`, then lets the open connections finish (their
/// sessions end with `stop` too) and returns once none is left.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    max_connections: usize,
    header_timeout: Duration,
    stop: CancellationToken,
) {
    let registry = Arc::new(Registry {
        max: max_connections,
        state: Mutex::new((0, BTreeMap::new())),
        emptied: Notify::new(),
    });
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE and the like: back off instead of spinning; the client waits in the
                // backlog.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Without TCP_NODELAY a reply written in pieces (SSE event, then the chunked end)
        // waits for the client's delayed ACK: ~40 ms per call instead of ~0.1 ms.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let Some((id, authorized, close)) = registry.admit() else {
            tracing::warn!(
                peer = %peer,
                max = max_connections,
                "refused a connection: every open connection is in use by a client with the token"
            );
            // Best effort, never waits: the socket is closed right after.
            let _ = tcp.try_write(FULL);
            continue;
        };
        let registry = registry.clone();
        let app = app.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            connection(tcp, peer, app, authorized, close, header_timeout, stop).await;
            registry.remove(id);
        });
    }
    drop(listener);
    registry.wait_empty().await;
}

async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: axum::Router,
    authorized: Authorized,
    close: CancellationToken,
    header_timeout: Duration,
    stop: CancellationToken,
) {
    let mark = authorized.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        request.extensions_mut().insert(mark.clone());
        let mut app = app.clone();
        // `Router` is always ready, so `call` needs no `poll_ready` first.
        async move { app.call(request.map(Body::new)).await }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let mut conn = pin!(builder.serve_connection(TokioIo::new(tcp), service));
    let deadline = tokio::time::sleep(header_timeout);
    let mut deadline = pin!(deadline);
    let mut deadline_passed = false;
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(peer = %peer, "connection ended: {e}");
                }
                return;
            }
            () = close.cancelled() => return,
            () = &mut deadline, if !deadline_passed => {
                deadline_passed = true;
                if !authorized.get() {
                    tracing::debug!(peer = %peer, "closing a connection that sent no authorized request in time");
                    return;
                }
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn registry(max: usize) -> Registry {
        Registry {
            max,
            state: Mutex::new((0, BTreeMap::new())),
            emptied: Notify::new(),
        }
    }

    #[test]
    fn at_the_cap_the_oldest_unauthorized_connection_makes_room() {
        let r = registry(3);
        let (a, auth_a, close_a) = r.admit().unwrap();
        let (_b, _, close_b) = r.admit().unwrap();
        let (_c, _, close_c) = r.admit().unwrap();
        auth_a.set();
        let (_d, auth_d, _) = r.admit().unwrap();
        assert!(!close_a.is_cancelled(), "authorized connections are kept");
        assert!(close_b.is_cancelled(), "the oldest unauthorized one goes");
        assert!(!close_c.is_cancelled());
        assert_eq!(r.lock().1.len(), 3);
        r.remove(a);
        auth_d.set();
        let (_e, auth_e, _) = r.admit().unwrap();
        assert!(!close_c.is_cancelled(), "below the cap nobody is closed");
        auth_e.set();
        let (_f, auth_f, _) = r.admit().unwrap();
        assert!(close_c.is_cancelled());
        auth_f.set();
        assert!(
            r.admit().is_none(),
            "all authorized: the newcomer is refused"
        );
    }
}
