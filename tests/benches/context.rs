//! Context benchmark (issue 10). Not a timed test: prints a table.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench context`
//!
//! 1. A 500-step scripted session (each step reads a ~2.5k-token file) against a provider with
//!    a 100k window, with compaction and without it (tern told the window is unlimited, the
//!    provider then too): tokens sent in total, peak request, cache-read share, host CPU per
//!    step and RSS at the start and the end.
//! 2. A table of 300 tools (the official Python SDK's server): tokens of the first request's
//!    tool table with deferral and without.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

use tern_e2e::release_bin;
use tern_model::mock::{MockModelServer, RecordedRequest, script::AnthropicTurn, simulate::Api};

const STEPS: usize = 500;

/// (utime + stime in ms, RSS in KiB) of a live process.
fn sample(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After the `)`: field 11 is utime, 12 stime (in clock ticks, 100 per second here).
    let cpu_ms = (ticks(11) + ticks(12)) * 10.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (cpu_ms, rss)
}

fn is_summary(r: &RecordedRequest) -> bool {
    r.body.windows(12).any(|w| w == b"tern:compact")
}

struct Session {
    total_prompt: u64,
    peak_prompt: u64,
    cache_share: f64,
    cpu_first: f64,
    cpu_last: f64,
    rss_first: u64,
    rss_last: u64,
    wall_s: f64,
    compactions: usize,
}

async fn session(compact: bool) -> Session {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n[model]\nmax_retries = 1\n",
    )
    .unwrap();
    for i in 0..10 {
        let text: String = (0..1_200).map(|j| format!("f{i}w{j} ")).collect();
        std::fs::write(dir.path().join(format!("f{i}.txt")), text).unwrap();
    }
    let server = MockModelServer::start().await.unwrap();
    let window: u64 = if compact { 100_000 } else { 100_000_000 };
    server.simulate(Api::Anthropic, window);
    server.respond_when(is_summary, |_| {
        AnthropicTurn::new()
            .text(&["Goal: read the files in turn. Files read: f0..f9, repeatedly."])
            .finish("end_turn")
    });
    // Per-step samples of tern's CPU and RSS, taken as each model call arrives.
    let pid: Arc<Mutex<Option<u32>>> = Arc::default();
    let samples: Arc<Mutex<Vec<(f64, u64)>>> = Arc::default();
    {
        let pid = pid.clone();
        let samples = samples.clone();
        server.respond_when(
            move |r| {
                if !is_summary(r)
                    && let Some(p) = *pid.lock().unwrap()
                {
                    samples.lock().unwrap().push(sample(p));
                }
                false
            },
            |_| unreachable!(),
        );
    }
    for i in 0..STEPS {
        let args = format!(r#"{{"path":"f{}.txt"}}"#, i % 10);
        server.enqueue(
            AnthropicTurn::new()
                .tool_use(&format!("toolu_{i}"), "fs__read_file", &[&args])
                .finish("tool_use"),
        );
    }
    server.enqueue(AnthropicTurn::new().text(&["done"]).finish("end_turn"));
    let window_flag = format!("model.context_window={window}");
    let started = Instant::now();
    let mut child = tokio::process::Command::new(release_bin("tern"))
        .args([
            "run",
            "read the files in turn",
            "--output-format",
            "jsonl",
            "--max-steps",
            "1000",
            "-c",
            &window_flag,
        ])
        .current_dir(dir.path())
        .env("TERN_HOME", home.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", server.url())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    *pid.lock().unwrap() = child.id();
    let status = child.wait().await.unwrap();
    assert!(status.success(), "tern run failed ({status})");
    let wall_s = started.elapsed().as_secs_f64();
    let sim = server.simulation().unwrap();
    let samples = samples.lock().unwrap().clone();
    let per_step = |from: usize, to: usize| (samples[to].0 - samples[from].0) / (to - from) as f64;
    let n = samples.len();
    let runs = std::fs::read_dir(home.path().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let events = std::fs::read_to_string(runs.path().join("events.jsonl")).unwrap();
    Session {
        total_prompt: sim.total_prompt,
        peak_prompt: sim.peak_prompt,
        cache_share: sim.total_cache_read as f64 * 100.0 / sim.total_prompt.max(1) as f64,
        cpu_first: per_step(1, 11),
        cpu_last: per_step(n - 11, n - 1),
        rss_first: samples[1].1,
        rss_last: samples[n - 1].1,
        wall_s,
        compactions: events.matches("\"type\":\"compaction\"").count(),
    }
}

async fn first_table_tokens(defer: &str) -> (u64, usize) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.web]\nenabled = false\n[mcp_servers.big]\ncommand = {:?}\nargs = [{:?}, \"300\"]\nstartup_timeout_sec = 60\ndefer = {defer:?}\n",
            tern_e2e::dep("venv/bin/python").to_string_lossy(),
            tern_e2e::workspace_root()
                .join("tests/interop/many_tools.py")
                .to_string_lossy()
        ),
    )
    .unwrap();
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let status = tokio::process::Command::new(release_bin("tern"))
        .args(["run", "hello", "--output-format", "jsonl"])
        .current_dir(dir.path())
        .env("TERN_HOME", home.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", server.url())
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let body = server.model_requests()[0].json();
    let tools = body["tools"].as_array().unwrap();
    // Counted as the provider simulation counts: JSON text / 4.
    (
        (serde_json::Value::Array(tools.clone()).to_string().len() as u64).div_ceil(4),
        tools.len(),
    )
}

#[tokio::main]
async fn main() {
    println!("500-step session, each step reading a ~2.5k-token file; provider window 100k\n");
    println!(
        "| {:<22} | {:>14} | {:>10} | {:>8} | {:>12} | {:>12} | {:>9} | {:>9} | {:>6} | {:>5} |",
        "",
        "tokens sent",
        "peak req",
        "cached",
        "CPU/step 1-10",
        "CPU/step 490+",
        "RSS step 1",
        "RSS 500",
        "wall",
        "compactions"
    );
    for (label, compact) in [("with compaction", true), ("without (unlimited)", false)] {
        let s = session(compact).await;
        println!(
            "| {label:<22} | {:>14} | {:>10} | {:>7.1}% | {:>10.2}ms | {:>10.2}ms | {:>6} KiB | {:>6} KiB | {:>5.1}s | {:>11} |",
            s.total_prompt,
            s.peak_prompt,
            s.cache_share,
            s.cpu_first,
            s.cpu_last,
            s.rss_first,
            s.rss_last,
            s.wall_s,
            s.compactions
        );
    }
    println!("\nFirst request's tool table with 300 tools from a third-party server\n");
    let (deferred, n_deferred) = first_table_tokens("auto").await;
    let (full, n_full) = first_table_tokens("never").await;
    println!("| {:<18} | {:>6} | {:>8} |", "", "tools", "tokens");
    println!(
        "| {:<18} | {n_deferred:>6} | {deferred:>8} |",
        "with deferral"
    );
    println!("| {:<18} | {n_full:>6} | {full:>8} |", "without");
    println!(
        "\ndeferral sends {:.1}% fewer tool-table tokens (goal: at least 85%)",
        (full - deferred) as f64 * 100.0 / full as f64
    );
}
