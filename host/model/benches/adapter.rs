//! Adapter overhead benchmark (not a timed test): `cargo bench -p tern-model`.
//!
//! 1. Latency: a loopback server writes one SSE event per HTTP chunk and waits until the consumer
//!    has the matching `ModelEvent::TextDelta` before writing the next; we report the time from
//!    just before the chunk's `write` to the event leaving the stream (p50/p99/max).
//! 2. CPU: the server writes a pre-built stream of 100 000 text deltas as fast as the socket
//!    takes it; CPU time of the whole process (sum of every thread's `schedstat` run time, so
//!    tokio workers, the reqwest connection task and the server thread) per 1 000 deltas.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tern_model::{Message, ModelConfig, ModelEvent, ModelRequest, Provider, build_adapter};
use tokio_util::sync::CancellationToken;

const LATENCY_SAMPLES: usize = 2_000;
const CPU_DELTAS: usize = 100_000;

#[derive(Clone, Copy)]
enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        }
    }

    fn head(self) -> String {
        match self {
            Wire::Anthropic => "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".into(),
            Wire::OpenAi => "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".into(),
        }
    }

    fn delta(self, text: &str) -> String {
        match self {
            Wire::Anthropic => format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
            ),
            Wire::OpenAi => format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
            ),
        }
    }

    fn tail(self) -> String {
        match self {
            Wire::Anthropic => "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".into(),
            Wire::OpenAi => "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".into(),
        }
    }
}

fn read_request(socket: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket.read(&mut chunk).unwrap();
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < end + 4 + len {
                let n = socket.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            return;
        }
    }
}

fn write_chunk(socket: &mut TcpStream, bytes: &[u8]) {
    let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
    frame.extend_from_slice(bytes);
    frame.extend_from_slice(b"\r\n");
    socket.write_all(&frame).unwrap();
}

const RESPONSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

fn adapter_for(wire: Wire, port: u16) -> Box<dyn tern_model::ModelAdapter> {
    let (provider, base) = match wire {
        Wire::Anthropic => (Provider::Anthropic, format!("http://127.0.0.1:{port}")),
        Wire::OpenAi => (Provider::Openai, format!("http://127.0.0.1:{port}/v1")),
    };
    let cfg = ModelConfig {
        provider: Some(provider),
        base_url: Some(base),
        max_retries: Some(0),
        ..ModelConfig::default()
    };
    build_adapter(&cfg, &|_| Some("bench-key".to_owned())).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        system: vec!["bench".into()],
        messages: vec![Message::user_text("go")],
        tools: vec![],
        max_tokens: 64,
        tool_choice: Default::default(),
        cache: true,
    }
}

/// Returns latencies in microseconds.
fn latency(rt: &tokio::runtime::Runtime, wire: Wire) -> Vec<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (ack_tx, ack_rx) = mpsc::channel::<Instant>();
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        read_request(&mut s);
        s.write_all(RESPONSE_HEAD).unwrap();
        write_chunk(&mut s, wire.head().as_bytes());
        let mut samples = Vec::with_capacity(LATENCY_SAMPLES);
        for i in 0..LATENCY_SAMPLES {
            let event = wire.delta(&format!("d{i}"));
            let sent = Instant::now();
            write_chunk(&mut s, event.as_bytes());
            let received = ack_rx.recv().unwrap();
            samples.push(received.duration_since(sent).as_secs_f64() * 1e6);
        }
        write_chunk(&mut s, wire.tail().as_bytes());
        s.write_all(b"0\r\n\r\n").unwrap();
        samples
    });
    rt.block_on(async {
        let adapter = adapter_for(wire, port);
        let mut stream = adapter
            .stream(&request(), CancellationToken::new())
            .await
            .unwrap();
        while let Some(event) = stream.next().await {
            if let ModelEvent::TextDelta(_) = event.unwrap() {
                ack_tx.send(Instant::now()).unwrap();
            }
        }
    });
    server.join().unwrap()
}

/// CPU time of every thread of this process, in nanoseconds.
fn process_cpu_ns() -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let path = task.unwrap().path().join("schedstat");
        if let Ok(s) = std::fs::read_to_string(path) {
            total += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// Returns (CPU µs per 1 000 deltas, wall ms, deltas/s).
fn cpu(rt: &tokio::runtime::Runtime, wire: Wire) -> (f64, f64, f64) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut body = wire.head();
    for i in 0..CPU_DELTAS {
        body.push_str(&wire.delta(&format!("tok{}", i % 100)));
    }
    body.push_str(&wire.tail());
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let server = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        read_request(&mut s);
        go_rx.recv().unwrap();
        s.write_all(RESPONSE_HEAD).unwrap();
        // 16 KiB chunks: roughly what a TLS record / socket read delivers in practice.
        for piece in body.as_bytes().chunks(16 * 1024) {
            write_chunk(&mut s, piece);
        }
        s.write_all(b"0\r\n\r\n").unwrap();
    });
    let (cpu_ns, wall, count) = rt.block_on(async {
        let adapter = adapter_for(wire, port);
        let mut stream = adapter
            .stream(&request(), CancellationToken::new())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await; // let the request go out first
        let cpu0 = process_cpu_ns();
        let t0 = Instant::now();
        go_tx.send(()).unwrap();
        let mut count = 0usize;
        while let Some(event) = stream.next().await {
            if let ModelEvent::TextDelta(_) = event.unwrap() {
                count += 1;
            }
        }
        (process_cpu_ns() - cpu0, t0.elapsed(), count)
    });
    server.join().unwrap();
    assert_eq!(count, CPU_DELTAS);
    let per_1000_us = cpu_ns as f64 / 1e3 / (CPU_DELTAS as f64 / 1000.0);
    (
        per_1000_us,
        wall.as_secs_f64() * 1e3,
        CPU_DELTAS as f64 / wall.as_secs_f64(),
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent; keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if quick {
        let _ = latency(&rt, Wire::Anthropic);
        println!("adapter bench: smoke run ok (use `cargo bench -p tern-model` for numbers)");
        return;
    }
    println!("tern-model adapter overhead (loopback, release build, 2 tokio workers)");
    println!();
    println!(
        "| wire      | chunk written → ModelEvent p50 | p99      | max      | CPU per 1 000 deltas | throughput       |"
    );
    println!(
        "|-----------|--------------------------------|----------|----------|----------------------|------------------|"
    );
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let _ = latency(&rt, wire); // warm-up: connection setup, allocator, page faults
        let mut lat = latency(&rt, wire);
        lat.sort_by(f64::total_cmp);
        let (cpu_us, _wall_ms, rate) = cpu(&rt, wire);
        println!(
            "| {:<9} | {:>27.1} µs | {:>5.1} µs | {:>5.0} µs | {:>15.0} µs | {:>9.0} deltas/s |",
            wire.name(),
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            lat.last().copied().unwrap_or(0.0),
            cpu_us,
            rate
        );
    }
    println!();
    println!(
        "latency: {LATENCY_SAMPLES} deltas, one per chunk, lock-step; CPU: {CPU_DELTAS} deltas, whole-process schedstat"
    );
}
