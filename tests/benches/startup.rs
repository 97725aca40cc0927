//! Startup benchmark (issue 13): how long `tern run` takes from launch to its first model
//! request, with the built-in servers only, with one more server that takes 5 s to start, and
//! with one whose command fails — each the first time (nothing remembered: a server not up
//! gets the 2 s grace) and once the servers' tools are remembered (`tool-cache.json`). The
//! goal compares like with like: the slow server with its tools remembered against the
//! built-ins with theirs. Not a timed test: prints a table of medians.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench startup`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    path::Path,
    time::{Duration, Instant},
};

use tern_e2e::{median, release_bin};

use tern_model::mock::{MockModelServer, script::AnthropicTurn};

const RUNS: usize = 7;

/// Which extra server a run has besides the built-ins.
#[derive(Clone, Copy)]
enum Extra {
    None,
    /// The test server taking this many milliseconds to start (its delay comes from its
    /// environment, so its command line, which tern remembers tools by, stays the same).
    Slow(u64),
    /// A server whose command exits at once.
    Dead,
}

fn config(home: &Path, extra: Extra) {
    let mut text = String::from("[mcp_servers.web]\nenabled = false\n");
    match extra {
        Extra::None => {}
        Extra::Slow(delay) => text.push_str(&format!(
            "[mcp_servers.slow]\ncommand = {:?}\nenv = {{ TEST_SERVER_SLOW_START_MS = \"{delay}\" }}\nstartup_timeout_sec = 30\n",
            release_bin("tern-test-server").to_string_lossy()
        )),
        Extra::Dead => text.push_str("[mcp_servers.dead]\ncommand = \"false\"\n"),
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

/// Median over [`RUNS`] runs, each in a fresh `TERN_HOME` (nothing remembered).
async fn first_time(extra: Extra) -> f64 {
    let mut v = Vec::new();
    for _ in 0..RUNS {
        let home = tempfile::tempdir().unwrap();
        config(home.path(), extra);
        v.push(first_request_ms(home.path()).await);
    }
    median(v)
}

/// Median over [`RUNS`] runs in one `TERN_HOME` where a run with every server up (the slow
/// one without its delay) has remembered their tools.
async fn remembered(extra: Extra) -> f64 {
    let home = tempfile::tempdir().unwrap();
    let warm = match extra {
        Extra::Slow(_) => Extra::Slow(0),
        other => other,
    };
    config(home.path(), warm);
    first_request_ms(home.path()).await;
    config(home.path(), extra);
    let mut v = Vec::new();
    for _ in 0..RUNS {
        v.push(first_request_ms(home.path()).await);
    }
    median(v)
}

#[tokio::main]
async fn main() {
    println!("time from `tern run` to its first model request, median of {RUNS}\n");
    println!(
        "| {:<44} | {:>12} | {:>15} |",
        "servers", "first time", "tools remembered"
    );
    println!("|{:-<46}|{:->14}|{:->18}|", "", "", "");
    let rows = [
        ("built-in servers (fs, shell)", Extra::None),
        (
            "+ a server taking 5 s to start (grace 2 s)",
            Extra::Slow(5_000),
        ),
        ("+ a server whose command exits at once", Extra::Dead),
    ];
    let mut results = Vec::new();
    for (label, extra) in rows {
        let first = first_time(extra).await;
        let warm = remembered(extra).await;
        println!("| {label:<44} | {first:>9.1} ms | {warm:>13.1} ms |");
        results.push((first, warm));
    }
    let slow_adds = results[1].1 - results[0].1;
    println!(
        "\nwith its tools remembered, the 5 s server adds {slow_adds:+.1} ms to the first request \
         (goal: within 50 ms): {}",
        if slow_adds.abs() <= 50.0 {
            "met"
        } else {
            "MISSED"
        }
    );
}
