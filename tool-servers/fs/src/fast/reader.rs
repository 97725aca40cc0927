//! stdin as rmcp sees it, minus the lines the fast path answered.
//!
//! [`Reader`] reads stdin into its own buffer and looks at each whole line: a quick tool call
//! ([`super::call::answer`]) is answered on the spot and its bytes never reach rmcp; every
//! other byte is handed up unchanged and in order, so rmcp's line reader, its limits and its
//! error replies see exactly what they would have seen without this layer. A line longer
//! than [`MAX_FAST_LINE`] is never a quick call: it streams through without being buffered
//! whole (rmcp's 16 MiB limit and `BoundedStdio` apply to it as before).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::model::RequestId;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::call;
use super::writer::Shared;
use crate::FsServer;

/// Longest line the fast path considers (a read_file or list_dir call is a few hundred bytes).
const MAX_FAST_LINE: usize = 64 * 1024;
/// The read buffer: room for one line of [`MAX_FAST_LINE`] and a pipe's worth beyond it.
const BUFFER: usize = MAX_FAST_LINE + 64 * 1024;

pub(crate) struct Reader<R, W> {
    inner: R,
    server: FsServer,
    shared: Arc<Shared<W>>,
    /// Bytes read from stdin: `buf[start..len]` is not yet handed up or answered
    /// (`start <= pass_end <= scan <= len` always).
    buf: Box<[u8]>,
    start: usize,
    len: usize,
    /// `buf[start..pass_end]` is cleared for rmcp (whole lines it gets unchanged).
    pass_end: usize,
    /// Where the search for the next newline resumes (past `start` when a line is partial).
    scan: usize,
    /// Inside a line too long for the fast path: everything up to its newline goes up.
    long_line: bool,
    /// A request other than `ping` was seen: the session's opening is decided.
    opened: bool,
    eof: bool,
    reply: Vec<u8>,
}

impl<R, W> Reader<R, W> {
    pub(crate) fn new(inner: R, server: FsServer, shared: Arc<Shared<W>>) -> Self {
        Self {
            inner,
            server,
            shared,
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            len: 0,
            pass_end: 0,
            scan: 0,
            long_line: false,
            opened: false,
            eof: false,
            reply: Vec::new(),
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin + Send + 'static> Reader<R, W> {
    /// Decides what happens to the next whole line, or the bytes of a long one; `false` when
    /// more input is needed first.
    fn step(&mut self) -> bool {
        let pending = &self.buf[self.scan..self.len];
        if self.long_line {
            if pending.is_empty() {
                return false;
            }
            match memchr::memchr(b'\n', pending) {
                Some(i) => {
                    self.pass_end = self.scan + i + 1;
                    self.long_line = false;
                }
                None => self.pass_end = self.len,
            }
            self.scan = self.pass_end;
            return true;
        }
        let Some(i) = memchr::memchr(b'\n', pending) else {
            self.scan = self.len;
            if self.len - self.start > MAX_FAST_LINE {
                self.long_line = true;
                self.pass_end = self.len;
                return true;
            }
            return false;
        };
        let end = self.scan + i + 1;
        let line = &self.buf[self.start..end - 1];
        if self.shared.active() && call::answer(&self.server, line, &mut self.reply) {
            self.shared.send(&self.reply);
            self.reply.clear();
            self.start = end;
            self.pass_end = end;
        } else {
            if !self.opened {
                self.watch_opening(self.start, end - 1);
            }
            self.pass_end = end;
        }
        self.scan = end;
        true
    }

    /// Before the session is opened: notes the id of an opening `initialize`, whose reply
    /// switches the fast path on (a session opened otherwise — `server/discover`, an inline
    /// request — never turns it on).
    fn watch_opening(&mut self, from: usize, to: usize) {
        #[derive(Deserialize)]
        struct Opening<'a> {
            id: Option<RequestId>,
            #[serde(borrow)]
            method: Option<std::borrow::Cow<'a, str>>,
        }
        let Ok(message) = serde_json::from_slice::<Opening<'_>>(&self.buf[from..to]) else {
            return;
        };
        let (Some(id), Some(method)) = (message.id, message.method) else {
            return;
        };
        match method.as_ref() {
            "ping" => {}
            "initialize" => {
                self.opened = true;
                self.shared.expect_initialize(id);
            }
            _ => self.opened = true,
        }
    }

    /// Makes room at the end of the buffer by moving the unread bytes to its start.
    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        self.buf.copy_within(self.start..self.len, 0);
        self.len -= self.start;
        self.pass_end -= self.start;
        self.scan -= self.start;
        self.start = 0;
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin + Send + 'static> AsyncRead for Reader<R, W> {
    /// Cancellation-safe (rmcp polls it inside `select!`): all state lives in `self`, and a
    /// line is answered synchronously within one poll.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.start < this.pass_end {
                let n = out.remaining().min(this.pass_end - this.start);
                out.put_slice(&this.buf[this.start..this.start + n]);
                this.start += n;
                return Poll::Ready(Ok(()));
            }
            if this.start == this.len {
                (this.start, this.len, this.pass_end, this.scan) = (0, 0, 0, 0);
            }
            // A client that does not read its replies: stop taking requests until it does.
            if this.shared.poll_room(cx).is_pending() {
                return Poll::Pending;
            }
            if this.step() {
                continue;
            }
            if this.eof {
                // A last line without a newline goes up as it is (rmcp drops it).
                if this.start < this.len {
                    this.pass_end = this.len;
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            if this.len == this.buf.len() {
                this.compact();
                if this.len == this.buf.len() {
                    // Cannot happen (a partial line here is at most MAX_FAST_LINE), but a
                    // full buffer must never read as the end of input.
                    this.long_line = true;
                    this.pass_end = this.len;
                    continue;
                }
            }
            let mut read = ReadBuf::new(&mut this.buf[this.len..]);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    if n == 0 {
                        this.eof = true;
                    }
                    this.len += n;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
