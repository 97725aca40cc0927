//! Answering a stdio request line that is too long instead of dropping it.
//!
//! rmcp's stdio transport refuses lines over [`MAX_LINE`] (16 MiB) so a peer cannot grow
//! the read buffer without bound, but it drops them silently: the client waits forever for
//! a reply that never comes. [`BoundedStdio`] keeps rmcp's transport (and its limit) and
//! watches the same bytes on their way in: when a line ends longer than the limit, it
//! replies itself with a JSON-RPC error naming the limit (id taken from the line's first
//! bytes when it is there, else `null`) and logs a warning on stderr.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::model::{ErrorCode, ErrorData, NumberOrString};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

/// Longest accepted request line, newline included: rmcp's own limit, so both agree on
/// which lines are refused.
pub const MAX_LINE: usize = DEFAULT_MAX_LINE_LENGTH;

/// How much of a line's start is kept to find its `"id"` (requests put it first or near).
const HEAD: usize = 4096;

/// Lines found too long, waiting for their error reply.
#[derive(Default)]
struct Rejected {
    ids: Mutex<VecDeque<Option<NumberOrString>>>,
    ready: Notify,
}

/// The reader side: passes every byte through unchanged and measures lines.
pub struct Watch<R> {
    inner: R,
    line_len: usize,
    head: Vec<u8>,
    rejected: Arc<Rejected>,
}

impl<R> Watch<R> {
    fn observe(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = rest.iter().position(|b| *b == b'\n');
            let chunk = &rest[..newline.map_or(rest.len(), |i| i + 1)];
            if self.head.len() < HEAD {
                let room = HEAD - self.head.len();
                self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            self.line_len = self.line_len.saturating_add(chunk.len());
            rest = &rest[chunk.len()..];
            if newline.is_some() {
                if self.line_len > MAX_LINE {
                    let id = request_id(&self.head);
                    tracing::warn!(
                        bytes = self.line_len,
                        id = ?id,
                        "request line longer than the 16 MiB limit: answered with an error and skipped"
                    );
                    if let Ok(mut ids) = self.rejected.ids.lock() {
                        ids.push_back(id);
                    }
                    self.rejected.ready.notify_one();
                }
                self.line_len = 0;
                self.head.clear();
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watch<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            // Looked at in place: a copy would be an allocation on every read of every request.
            self.observe(&buf.filled()[before..]);
        }
        polled
    }
}

/// rmcp's line transport plus the error replies for lines it drops for their length.
pub struct BoundedStdio<R: AsyncRead + Send + Unpin, W: AsyncWrite + Send + Unpin + 'static> {
    inner: AsyncRwTransport<RoleServer, Watch<R>, W>,
    rejected: Arc<Rejected>,
}

impl<R, W> BoundedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Wraps a read and a write half (stdin and stdout for a tool server).
    pub fn new(read: R, write: W) -> Self {
        let rejected = Arc::new(Rejected::default());
        let watch = Watch {
            inner: read,
            line_len: 0,
            head: Vec::new(),
            rejected: rejected.clone(),
        };
        Self {
            inner: AsyncRwTransport::new(watch, write).with_max_line_length(MAX_LINE),
            rejected,
        }
    }

    /// Sends the pending error replies. Each send runs as its own task: `receive` is polled
    /// in rmcp's `select!` and may be dropped at any await, which must not lose a reply.
    fn answer_rejected(&mut self) {
        let ids: Vec<_> = match self.rejected.ids.lock() {
            Ok(mut ids) => ids.drain(..).collect(),
            Err(_) => return,
        };
        for id in ids {
            let error = ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "request line longer than the {} MiB limit of this stdio transport; \
                     it was skipped. hint: send large content in pieces (e.g. several \
                     edits or appends) instead of one request",
                    MAX_LINE / (1024 * 1024)
                ),
                None,
            );
            let send = self
                .inner
                .send(TxJsonRpcMessage::<RoleServer>::error(error, id));
            tokio::spawn(async move {
                if let Err(e) = send.await {
                    tracing::warn!("cannot send the oversized-request error: {e}");
                }
            });
        }
    }
}

impl<R, W> Transport<RoleServer> for BoundedStdio<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.answer_rejected();
            let rejected = self.rejected.clone();
            // rmcp's receive keeps a partial line across a drop, so leaving it when a
            // too-long line ends (rmcp is then still waiting for the next one) loses nothing.
            tokio::select! {
                biased;
                msg = self.inner.receive() => return msg,
                () = rejected.ready.notified() => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// The top-level `"id"` of a JSON object whose first bytes are `head`, if it appears there
/// as a number or a plain string.
fn request_id(head: &[u8]) -> Option<NumberOrString> {
    let text = String::from_utf8_lossy(head);
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i)?;
                let is_key = bytes[end + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|b| *b == b':');
                if depth == 1 && is_key && &bytes[i + 1..end] == b"id" {
                    return id_value(&text[end + 1..]);
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index of the quote closing the string opened at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The value after `: ` in `rest`, when it is an integer or a string without escapes.
fn id_value(rest: &str) -> Option<NumberOrString> {
    let value = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = value.strip_prefix('"') {
        let end = s.find(['"', '\\'])?;
        return (s.as_bytes()[end] == b'"').then(|| NumberOrString::String(s[..end].into()));
    }
    let end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(value.len());
    value[..end].parse().ok().map(NumberOrString::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_top_level_id_only() {
        let num = |n| Some(NumberOrString::Number(n));
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            num(7)
        );
        assert_eq!(request_id(br#"{ "id" : -3 }"#), num(-3));
        assert_eq!(
            request_id(br#"{"params":{"id":1,"s":"\"id\":2"},"id":"abc","#),
            Some(NumberOrString::String("abc".into()))
        );
        assert_eq!(
            request_id(br#"{"method":"x","params":{"id":5,"data":"aaaa"#),
            None
        );
        assert_eq!(request_id(br#"{"method":"notifications/x"}"#), None);
        assert_eq!(request_id(b"not json at all"), None);
    }
}
