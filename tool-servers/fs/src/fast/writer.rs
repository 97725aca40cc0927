//! One stdout for two writers: rmcp's frames and the fast path's replies, never interleaved.
//!
//! rmcp writes through [`Writer`] (its `AsyncWrite`); the fast path hands whole reply lines to
//! [`Shared::send`], which writes them at once (one `write` syscall, the common case) when
//! stdout is free: rmcp is between frames and no earlier reply waits. Otherwise the bytes wait
//! in `pending`, and a flush task writes them as the pipe takes them — before rmcp may start
//! its next frame, so replies keep their order and each line stays whole.
//!
//! Tokio's pipe keeps one waker per direction for the poll API, so several parties polling
//! it (rmcp's write, the flush task, the reader waiting for room) would steal each other's
//! wake-ups. Every poll of the pipe goes through [`WakeAll`]: the pipe holds one waker that
//! wakes everyone who waits for stdout.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

use rmcp::model::RequestId;
use serde::Deserialize;
use tokio::io::AsyncWrite;

/// Reply bytes allowed to wait for stdout (a pipe's worth) before the reader stops taking
/// requests: the backpressure of a client that does not read its replies (rmcp's route has
/// its slots for that).
pub(crate) const PENDING_LIMIT: usize = 64 * 1024;

/// Protocol versions whose sessions the fast path serves: those opened with `initialize`,
/// for which rmcp drops `resultType` from results (`strip_result_type_for_legacy_peer`).
/// A newer version would change the reply's shape, so it stays with rmcp.
const SERVED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// State shared by the reader (fast path), rmcp's writer and the flush task.
pub(crate) struct Shared<W> {
    out: Mutex<Out<W>>,
    wakers: Arc<WakeAll>,
    /// The session was opened with `initialize` and a served version: the fast path may answer.
    active: AtomicBool,
}

struct Out<W> {
    pipe: W,
    /// Fast-path reply bytes not yet written, from `pending_at`.
    pending: Vec<u8>,
    pending_at: usize,
    /// rmcp has written part of a frame: nothing else may go in until its newline.
    rmcp_mid_frame: bool,
    flusher_running: bool,
    /// Until the fast path is active: the `initialize` request's id, and rmcp's frame so far.
    init_id: Option<RequestId>,
    frame: Vec<u8>,
}

impl<W> Out<W> {
    /// Drops the written front of `pending` once it is at least half of it: while a client
    /// reads slowly the buffer never empties, and without this it would keep every reply
    /// of a burst (the bound on what waits, [`PENDING_LIMIT`], counts unwritten bytes).
    fn compact(&mut self) {
        if self.pending_at > 0 && self.pending_at * 2 >= self.pending.len() {
            self.pending.drain(..self.pending_at);
            self.pending_at = 0;
        }
    }
}

/// Wakes every task that waits for stdout; the pipe holds this as its one waker.
#[derive(Default)]
struct WakeAll(Mutex<Vec<Waker>>);

impl Wake for WakeAll {
    fn wake(self: Arc<Self>) {
        self.wake_all();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_all();
    }
}

impl WakeAll {
    fn list(&self) -> MutexGuard<'_, Vec<Waker>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn register(&self, waker: &Waker) {
        let mut wakers = self.list();
        if !wakers.iter().any(|w| w.will_wake(waker)) {
            wakers.push(waker.clone());
        }
    }

    fn unregister(&self, waker: &Waker) {
        self.list().retain(|w| !w.will_wake(waker));
    }

    fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.list());
        for waker in wakers {
            waker.wake();
        }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Shared<W> {
    pub(crate) fn new(pipe: W) -> Arc<Self> {
        Arc::new(Self {
            out: Mutex::new(Out {
                pipe,
                pending: Vec::new(),
                pending_at: 0,
                rmcp_mid_frame: false,
                flusher_running: false,
                init_id: None,
                frame: Vec::new(),
            }),
            wakers: Arc::default(),
            active: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Out<W>> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// The session's opening request was `initialize` with this id: its successful reply
    /// (seen on its way out) switches the fast path on.
    pub(crate) fn expect_initialize(&self, id: RequestId) {
        self.lock().init_id = Some(id);
    }

    /// Polls the pipe with [`WakeAll`] as its waker; `cx`'s task is woken with the others
    /// while the pipe is not ready.
    fn poll_pipe<T>(
        &self,
        pipe: &mut W,
        cx: Option<&Context<'_>>,
        op: impl FnOnce(Pin<&mut W>, &mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        if let Some(cx) = cx {
            self.wakers.register(cx.waker());
        }
        let waker = Waker::from(Arc::clone(&self.wakers));
        let polled = op(Pin::new(pipe), &mut Context::from_waker(&waker));
        if polled.is_ready()
            && let Some(cx) = cx
        {
            self.wakers.unregister(cx.waker());
        }
        polled
    }

    /// Writes one reply line (a whole frame), now if stdout is free, else after what waits.
    pub(crate) fn send(self: &Arc<Self>, line: &[u8]) {
        let mut out = self.lock();
        if out.pending.is_empty() && !out.rmcp_mid_frame {
            match self.poll_pipe(&mut out.pipe, None, |pipe, cx| pipe.poll_write(cx, line)) {
                Poll::Ready(Ok(n)) if n == line.len() => return,
                Poll::Ready(Ok(n)) => out.pending.extend_from_slice(&line[n..]),
                Poll::Pending => out.pending.extend_from_slice(line),
                Poll::Ready(Err(e)) => {
                    // stdout is gone: rmcp's next write fails the same way and ends the session.
                    tracing::warn!("cannot write a reply: {e}");
                    return;
                }
            }
        } else {
            out.compact();
            out.pending.extend_from_slice(line);
        }
        if !out.flusher_running {
            out.flusher_running = true;
            let shared = Arc::clone(self);
            tokio::spawn(async move { std::future::poll_fn(|cx| shared.poll_flusher(cx)).await });
        }
    }

    /// The flush task: writes `pending` whenever rmcp is between frames, until it is empty.
    fn poll_flusher(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut out = self.lock();
        if out.rmcp_mid_frame {
            // rmcp finishes its frame first; its writer wakes us at the newline.
            self.wakers.register(cx.waker());
            return Poll::Pending;
        }
        let result = match self.flush_pending(&mut out, cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result,
        };
        if let Err(e) = result {
            tracing::warn!("cannot write replies: {e}");
            out.pending.clear();
            out.pending_at = 0;
        }
        out.flusher_running = false;
        drop(out);
        // rmcp's writer, the reader and `drained` may be waiting for this.
        self.wakers.wake_all();
        Poll::Ready(())
    }

    /// Writes `pending` until it is empty (`Ready`) or the pipe is full (`Pending`).
    fn flush_pending(&self, out: &mut Out<W>, cx: &Context<'_>) -> Poll<io::Result<()>> {
        while out.pending_at < out.pending.len() {
            let Out {
                pipe,
                pending,
                pending_at,
                ..
            } = &mut *out;
            let left = &pending[*pending_at..];
            match self.poll_pipe(pipe, Some(cx), |pipe, cx| pipe.poll_write(cx, left)) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *pending_at += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        out.pending.clear();
        out.pending_at = 0;
        Poll::Ready(Ok(()))
    }

    /// `Ready` once fewer than [`PENDING_LIMIT`] bytes wait; else the caller is woken later.
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        let out = self.lock();
        if out.pending.len() - out.pending_at < PENDING_LIMIT {
            return Poll::Ready(());
        }
        self.wakers.register(cx.waker());
        Poll::Pending
    }

    /// Waits until every reply has been written (or writing failed), before the process ends.
    pub(crate) async fn drained(&self) {
        std::future::poll_fn(|cx| {
            let out = self.lock();
            if !out.flusher_running {
                return Poll::Ready(());
            }
            self.wakers.register(cx.waker());
            Poll::Pending
        })
        .await;
    }

    /// Watches rmcp's frames until the reply to `initialize` went out.
    fn observe_frame(&self, out: &mut Out<W>, written: &[u8]) {
        let Some(init_id) = &out.init_id else {
            return;
        };
        for chunk in written.split_inclusive(|b| *b == b'\n') {
            // An initialize reply is a few KB; a frame far past that is not one.
            if out.frame.len() < 1 << 20 {
                out.frame.extend_from_slice(chunk);
            }
            if chunk.last() != Some(&b'\n') {
                continue;
            }
            #[derive(Deserialize)]
            struct Reply {
                id: Option<RequestId>,
                result: Option<Initialized>,
            }
            #[derive(Deserialize)]
            struct Initialized {
                #[serde(rename = "protocolVersion")]
                protocol_version: Option<String>,
            }
            if let Ok(reply) = serde_json::from_slice::<Reply>(&out.frame)
                && reply.id.as_ref() == Some(init_id)
            {
                let version = reply.result.and_then(|r| r.protocol_version);
                let served = version
                    .as_deref()
                    .is_some_and(|v| SERVED_VERSIONS.contains(&v));
                tracing::debug!(?version, served, "session opened; fast path");
                self.active.store(served, Ordering::Release);
                out.init_id = None;
                out.frame = Vec::new();
                return;
            }
            out.frame.clear();
        }
    }
}

/// rmcp's side of stdout.
pub(crate) struct Writer<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Writer<W> {
    pub(crate) fn new(shared: Arc<Shared<W>>) -> Self {
        Self { shared }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Writer<W> {
    /// The pipe, when rmcp may write: it is mid-frame, or no reply waits (else the flush
    /// task writes them first and wakes it).
    fn poll_turn(&self, cx: &Context<'_>) -> Poll<MutexGuard<'_, Out<W>>> {
        let out = self.shared.lock();
        if out.rmcp_mid_frame || out.pending.is_empty() {
            return Poll::Ready(out);
        }
        self.shared.wakers.register(cx.waker());
        Poll::Pending
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> AsyncWrite for Writer<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let shared = &self.shared;
        let Poll::Ready(mut out) = self.poll_turn(cx) else {
            return Poll::Pending;
        };
        let n = match shared.poll_pipe(&mut out.pipe, Some(cx), |pipe, cx| pipe.poll_write(cx, buf))
        {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        if n > 0 {
            if !shared.active() {
                shared.observe_frame(&mut out, &buf[..n]);
            }
            out.rmcp_mid_frame = buf[n - 1] != b'\n';
            if !out.rmcp_mid_frame && !out.pending.is_empty() {
                // Replies waited for this frame to end: let the flush task go.
                drop(out);
                shared.wakers.wake_all();
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Poll::Ready(mut out) = self.poll_turn(cx) else {
            return Poll::Pending;
        };
        self.shared
            .poll_pipe(&mut out.pipe, Some(cx), |pipe, cx| pipe.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Poll::Ready(mut out) = self.poll_turn(cx) else {
            return Poll::Pending;
        };
        self.shared
            .poll_pipe(&mut out.pipe, Some(cx), |pipe, cx| pipe.poll_shutdown(cx))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A pipe read by a slow client: every other write finds it full, and a write takes at
    /// most `chunk` bytes.
    struct SlowPipe {
        written: Arc<Mutex<Vec<u8>>>,
        chunk: usize,
        full: bool,
    }

    impl AsyncWrite for SlowPipe {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.full = !self.full;
            if self.full {
                // The reader drains it at once: writable again.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(self.chunk);
            self.written.lock().unwrap().extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn replies_and_frames_stay_whole_and_waiting_replies_stay_bounded() {
        let written = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared::new(SlowPipe {
            written: Arc::clone(&written),
            chunk: 700,
            full: false,
        });
        // rmcp writing its own frames meanwhile, a few bytes at a time (mid-frame often).
        let mut rmcp = Writer::new(Arc::clone(&shared));
        let frames = tokio::spawn(async move {
            for i in 0..200 {
                let frame = format!("{{\"rmcp\":{i},\"pad\":\"{}\"}}\n", "r".repeat(i * 7));
                for piece in frame.as_bytes().chunks(50) {
                    rmcp.write_all(piece).await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
        });
        let mut peak = 0;
        for i in 0..3000 {
            // As the reader does before answering a line.
            std::future::poll_fn(|cx| shared.poll_room(cx)).await;
            let reply = format!("{{\"fast\":{i},\"pad\":\"{}\"}}\n", "f".repeat(1000));
            shared.send(reply.as_bytes());
            // No yield: like a burst, the reader answers until the limit stops it, so the
            // buffer is never empty again until the end.
            peak = peak.max(shared.lock().pending.capacity());
        }
        frames.await.unwrap();
        shared.drained().await;
        assert!(peak <= 4 * PENDING_LIMIT, "pending grew to {peak} bytes");
        let written = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let (mut fast, mut from_rmcp) = (0, 0);
        for line in written.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(i) = v.get("fast") {
                assert_eq!(i, fast, "replies in order, each whole");
                fast += 1;
            } else {
                assert_eq!(v["rmcp"], from_rmcp, "frames in order, each whole");
                from_rmcp += 1;
            }
        }
        assert_eq!((fast, from_rmcp), (3000, 200));
    }
}
