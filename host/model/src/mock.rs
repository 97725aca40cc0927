//! A scripted model server on loopback, for tests (feature `mock-server`).
//!
//! It speaks just enough HTTP/1.1 (one request per connection, `content-length` bodies) to serve
//! queued responses in order and record every request, so a test can assert on exactly what was
//! sent. Response bodies go out with chunked transfer encoding, one chunk per body part, so a
//! test decides where the network splits the stream, can pause it (see [`Gate`]) or sleep between
//! parts, and can drop the connection mid-body — which the client sees as a broken transfer,
//! just like a real reset.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use tern_model::mock::{MockModelServer, MockResponse, script::AnthropicTurn};
//! let server = MockModelServer::start().await?;
//! server.enqueue(AnthropicTurn::new().text(&["Hel", "lo"]).finish("end_turn"));
//! // point the adapter's base_url at server.url(), run a turn, then:
//! let sent = server.requests();
//! # Ok(()) }
//! ```

pub mod responses;
pub mod script;
pub mod simulate;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Requests larger than this are refused (a test bug, not a scenario).
const MAX_REQUEST_BYTES: usize = 64 << 20;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`.
    pub method: String,
    /// Path and query, e.g. `/v1/messages`.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Lets a test hold a response stream at a point until it says go.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<Notify>);

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the waiting (or next) response continue.
    pub fn open(&self) {
        self.0.notify_one();
    }
}

#[derive(Debug, Clone)]
enum Part {
    Bytes(Vec<u8>),
    Sleep(Duration),
    Wait(Gate),
}

/// How a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Terminating chunk, then close.
    Complete,
    /// Close without the terminating chunk: a broken transfer.
    Drop,
}

/// One queued response.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    parts: Vec<Part>,
    ending: Ending,
}

impl MockResponse {
    /// A 200 SSE response sent as one chunk, bytes unchanged.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::sse_chunks(vec![body.into()])
    }

    /// A 200 SSE response, one chunk per element (bytes unchanged, concatenation = body).
    pub fn sse_chunks(chunks: Vec<Vec<u8>>) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts: chunks.into_iter().map(Part::Bytes).collect(),
            ending: Ending::Complete,
        }
    }

    /// A 200 SSE response replaying `body` byte for byte, one chunk per SSE event.
    pub fn sse_by_event(body: &[u8]) -> Self {
        Self::sse_chunks(split_sse_events(body))
    }

    /// A response with this status and JSON body (an API error, typically).
    pub fn json(status: u16, body: &Value) -> Self {
        MockResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part::Bytes(body.to_string().into_bytes())],
            ending: Ending::Complete,
        }
    }

    /// Adds a response header (e.g. `retry-after`, `request-id`).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// Sleeps `delay` between consecutive chunks.
    pub fn delay_between(mut self, delay: Duration) -> Self {
        let mut parts = Vec::with_capacity(self.parts.len() * 2);
        for (i, part) in self.parts.into_iter().enumerate() {
            if i > 0 {
                parts.push(Part::Sleep(delay));
            }
            parts.push(part);
        }
        self.parts = parts;
        self
    }

    /// Holds the stream after the first `chunks` chunks until `gate` is opened.
    pub fn pause_after(mut self, chunks: usize, gate: &Gate) -> Self {
        let at = self.position_after(chunks);
        self.parts.insert(at, Part::Wait(gate.clone()));
        self
    }

    /// Sends only the first `chunks` chunks, then drops the connection mid-body.
    pub fn drop_after(mut self, chunks: usize) -> Self {
        let at = self.position_after(chunks);
        self.parts.truncate(at);
        self.ending = Ending::Drop;
        self
    }

    /// Index in `parts` just after the `chunks`-th byte chunk.
    fn position_after(&self, chunks: usize) -> usize {
        let mut seen = 0;
        for (i, part) in self.parts.iter().enumerate() {
            if seen == chunks {
                return i;
            }
            if matches!(part, Part::Bytes(_)) {
                seen += 1;
            }
        }
        self.parts.len()
    }
}

/// Splits an SSE body after each blank line, keeping every byte (a trailing partial event is the
/// last piece), so replaying the pieces in order reproduces the body exactly.
pub fn split_sse_events(body: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        let end = if body[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if body[i..].starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        };
        match end {
            Some(end) => {
                out.push(body[start..end].to_vec());
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if start < body.len() {
        out.push(body[start..].to_vec());
    }
    out
}

/// Answers the requests a predicate picks, outside the queue.
type Responder = (
    Box<dyn Fn(&RecordedRequest) -> bool + Send + Sync>,
    Box<dyn Fn(&RecordedRequest) -> MockResponse + Send + Sync>,
);

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<MockResponse>>,
    responders: Mutex<Vec<Responder>>,
    simulation: Mutex<Option<simulate::Simulation>>,
    requests: Mutex<Vec<RecordedRequest>>,
    disconnects: Mutex<usize>,
    arrived: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The server. Stops when dropped.
pub struct MockModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockModelServer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(MockModelServer { addr, shared, task })
    }

    /// `http://127.0.0.1:PORT`, to use as an adapter's `base_url` (Anthropic; append `/v1` for
    /// OpenAI-style clients if you want realistic paths). Queued responses answer model calls
    /// (`POST …/messages`, `POST …/chat/completions`, `POST …/responses` — see [`responses`] for
    /// the Responses API); anything else is a 404 unless a
    /// [`MockModelServer::respond_when`] responder takes it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a response; requests are answered in queue order. A request that finds the queue
    /// empty gets a 400 saying so (not retried by the adapters, so the test fails fast).
    pub fn enqueue(&self, response: MockResponse) {
        lock(&self.shared.queue).push_back(response);
    }

    /// Answers every request `when` picks with `respond(request)`, without touching the queue
    /// (summaries, probes of the server's settings, …). Checked before the queue, in order.
    pub fn respond_when(
        &self,
        when: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        respond: impl Fn(&RecordedRequest) -> MockResponse + Send + Sync + 'static,
    ) {
        lock(&self.shared.responders).push((Box::new(when), Box::new(respond)));
    }

    /// Behaves like a provider whose context window is `window` tokens: requests that do not fit
    /// get the provider's real overflow error (the queue is not touched), the others are served
    /// from the queue with usage counted from the request, cached prefixes included.
    pub fn simulate(&self, api: simulate::Api, window: u64) {
        *lock(&self.shared.simulation) = Some(simulate::Simulation::new(api, window));
    }

    /// The simulation's state (largest prompt seen, overflows refused).
    pub fn simulation(&self) -> Option<simulate::Simulation> {
        lock(&self.shared.simulation).clone()
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// The model calls received so far (not the probes of the server's settings), oldest first.
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| is_model_call(r))
            .cloned()
            .collect()
    }

    /// Responses not yet served.
    pub fn pending(&self) -> usize {
        lock(&self.shared.queue).len()
    }

    /// How many clients hung up while their response was paused at a [`Gate`]: proof that a
    /// cancelled or dropped stream closes the connection.
    pub fn disconnects(&self) -> usize {
        *lock(&self.shared.disconnects)
    }

    /// Waits until a paused response sees its client hang up, or `timeout` passes.
    pub async fn wait_for_disconnect(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.arrived.notified();
            if self.disconnects() > 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.disconnects() > 0;
            }
        }
    }

    /// Waits until a model call (not a probe of the server's settings) has arrived, or
    /// `timeout` passes; returns whether one did.
    pub async fn wait_for_model_request(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.arrived.notified();
            if lock(&self.shared.requests).iter().any(is_model_call) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return lock(&self.shared.requests).iter().any(is_model_call);
            }
        }
    }

    /// Waits until at least `n` requests have arrived, or `timeout` passes; returns how many did.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.shared.arrived.notified();
            let count = lock(&self.shared.requests).len();
            if count >= n {
                return count;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return lock(&self.shared.requests).len();
            }
        }
    }
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = serve(socket, &shared).await {
                tracing::debug!(error = %e, "mock model server connection ended");
            }
        });
    }
}

async fn serve(mut socket: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    // Take the response before publishing the request, so a test woken by the request sees the
    // queue as the server does.
    let response = respond(&request, shared);
    lock(&shared.requests).push(request);
    shared.arrived.notify_waiters();
    let response = response.unwrap_or_else(|| {
        MockResponse::json(
            400,
            &serde_json::json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "mock model server: no response queued for this request"}}),
        )
    });
    write_response(&mut socket, response, shared).await
}

/// The response to `request`: a responder's, the simulation's refusal, or the next queued one
/// (with simulated usage).
fn respond(request: &RecordedRequest, shared: &Shared) -> Option<MockResponse> {
    if let Some((_, make)) = lock(&shared.responders)
        .iter()
        .find(|(when, _)| when(request))
    {
        return Some(make(request));
    }
    // Only model calls take scripted responses: a client probing the server's settings
    // (`GET /v1/models`, ollama's `/api/show`) gets what a server without them answers.
    if !is_model_call(request) {
        return Some(MockResponse::json(
            404,
            &serde_json::json!({"error": {"message": "not found", "type": "not_found_error"}}),
        ));
    }
    let mut simulation = lock(&shared.simulation);
    match simulation.as_mut() {
        Some(sim) => match sim.judge(request) {
            Err(refusal) => Some(refusal),
            Ok(usage) => {
                let response = lock(&shared.queue).pop_front()?;
                Some(sim.with_usage(response, usage))
            }
        },
        None => lock(&shared.queue).pop_front(),
    }
}

/// `POST …/messages`, `POST …/chat/completions` or `POST …/responses` (a query string allowed).
fn is_model_call(request: &RecordedRequest) -> bool {
    let path = request.path.split('?').next().unwrap_or_default();
    request.method == "POST"
        && (path.ends_with("/messages")
            || path.ends_with("/chat/completions")
            || path.ends_with("/responses"))
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_REQUEST_BYTES {
            return Err(std::io::Error::other("request head too large"));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST_BYTES);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

async fn write_response(
    socket: &mut TcpStream,
    response: MockResponse,
    shared: &Shared,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (k, v) in &response.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    for part in response.parts {
        match part {
            Part::Bytes(bytes) if bytes.is_empty() => {} // an empty chunk would end the body
            Part::Bytes(bytes) => {
                let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                frame.extend_from_slice(&bytes);
                frame.extend_from_slice(b"\r\n");
                socket.write_all(&frame).await?;
                socket.flush().await?;
            }
            Part::Sleep(d) => tokio::time::sleep(d).await,
            Part::Wait(gate) => {
                // While paused, notice a client that hangs up (cancelled or dropped stream).
                let mut probe = [0u8; 1];
                tokio::select! {
                    () = gate.0.notified() => {}
                    read = socket.read(&mut probe) => {
                        if matches!(read, Ok(0) | Err(_)) {
                            *lock(&shared.disconnects) += 1;
                            shared.arrived.notify_waiters();
                            return Ok(());
                        }
                    }
                }
            }
        }
    }
    if response.ending == Ending::Complete {
        socket.write_all(b"0\r\n\r\n").await?;
        socket.flush().await?;
    }
    socket.shutdown().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
