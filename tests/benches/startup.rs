//! Startup benchmark (issue 13): how long `tern run` takes from launch to its first model
//! request, with the built-in servers only, and with one more server that takes 5 s to start —
//! the first time (nothing remembered: the 2 s grace applies) and once its tools are remembered.
//! Not a timed test: prints a table of medians.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench startup`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tern_model::mock::{MockModelServer, script::AnthropicTurn};

const RUNS: usize = 7;

fn release_bin(name: &str) -> PathBuf {
    let p = tern_e2e::workspace_root().join("target/release").join(name);
    assert!(
        p.exists(),
        "{} missing: run `cargo build --release --workspace --bins` first",
        p.display()
    );
    p
}

/// The built-in servers, and the test server taking `delay_ms` to start (its delay comes
/// from its environment, so its command line — what tern remembers tools by — is the same).
fn config(home: &Path, delay_ms: Option<u64>) {
    let mut text = String::from("[mcp_servers.web]\nenabled = false\n");
    if let Some(delay) = delay_ms {
        text.push_str(&format!(
            "[mcp_servers.slow]\ncommand = {:?}\nenv = {{ TEST_SERVER_SLOW_START_MS = \"{delay}\" }}\nstartup_timeout_sec = 30\n",
            release_bin("tern-test-server").to_string_lossy()
        ));
    }
    std::fs::write(home.join("config.toml"), text).unwrap();
}

/// Milliseconds from launching `tern run` to the mock receiving its first model request.
async fn first_request_ms(home: &Path) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let started = Instant::now();
    let mut child = tokio::process::Command::new(release_bin("tern"))
        .args(["run", "hi", "--output-format", "jsonl"])
        .current_dir(dir.path())
        .env("TERN_HOME", home)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", server.url())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server.wait_for_requests(1, Duration::from_secs(30)).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    child.wait().await.unwrap();
    ms
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    println!("time from `tern run` to its first model request, median of {RUNS}\n");
    println!("| {:<48} | {:>10} |", "servers", "first req");
    let mut rows = Vec::new();
    // Built-ins only.
    let mut v = Vec::new();
    for _ in 0..RUNS {
        let home = tempfile::tempdir().unwrap();
        config(home.path(), None);
        v.push(first_request_ms(home.path()).await);
    }
    rows.push(("built-in servers", median(v)));
    // A 5 s server, nothing remembered: the grace (2 s) applies.
    let mut v = Vec::new();
    for _ in 0..RUNS {
        let home = tempfile::tempdir().unwrap();
        config(home.path(), Some(5_000));
        v.push(first_request_ms(home.path()).await);
    }
    rows.push(("+ a server taking 5 s, first time (grace 2 s)", median(v)));
    // The same server, its tools remembered from the run before.
    let home = tempfile::tempdir().unwrap();
    config(home.path(), Some(0));
    first_request_ms(home.path()).await;
    config(home.path(), Some(5_000));
    let mut v = Vec::new();
    for _ in 0..RUNS {
        v.push(first_request_ms(home.path()).await);
    }
    rows.push(("+ a server taking 5 s, tools remembered", median(v)));
    for (label, ms) in &rows {
        println!("| {label:<48} | {ms:>7.1} ms |");
    }
    println!(
        "\nwith remembered tools the slow server adds {:+.1} ms (goal: within 50 ms)",
        rows[2].1 - rows[0].1
    );
}
