//! What `shell__run` of `true` costs per call in a real `tern run`, with the
//! checkpoint before the turn (`[checkpoints]`) and the OS sandbox each on and off
//! (issue 24, "Benchmark": checkpoint + sandbox together per call).
//!
//! Each run is one turn of [`CALLS`] model steps, each one call. The first call of a turn
//! waits for the turn's checkpoint (and for the shell server to be up), so the time from the
//! model's first request (the mock answers it at once with the call) to its second is the
//! first call as the user sees it: the checkpoint's remainder (incremental,
//! nothing changed: each setup keeps its `TERN_HOME`), the gateway, the sandboxed spawn. A
//! 300-file workspace; the later calls are a step each (model answer parsed, gateway,
//! sandboxed spawn, result sent). Runs of the four setups interleaved, medians over [`RUNS`]
//! runs. Not a timed test: prints a table.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench
//! checkpoint_sandbox` (`TERN_BENCH_BINS=target/debug` measures the debug binaries).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tern_e2e::{median, workspace_root};
use tern_model::mock::{MockModelServer, script::AnthropicTurn};

const RUNS: usize = 5;

fn tern() -> PathBuf {
    let dir = std::env::var("TERN_BENCH_BINS").unwrap_or_else(|_| "target/release".into());
    let p = workspace_root().join(dir).join("tern");
    assert!(
        p.exists(),
        "{} missing: run `cargo build --release --workspace --bins` first",
        p.display()
    );
    p
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..10 {
        let sub = dir.path().join(format!("src{d}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..30 {
            std::fs::write(
                sub.join(format!("f{f}.rs")),
                format!("// file {d}/{f}\n").repeat(40),
            )
            .unwrap();
        }
    }
    dir
}

/// Calls in one run, one per model step.
const CALLS: usize = 11;

/// One `tern run` of [`CALLS`] sequential `shell__run true` steps: milliseconds of the first
/// call (from the model's first request to its second) and of each later one.
async fn call_ms(project: &Path, home: &Path, checkpoints: bool, sandbox: &str) -> (f64, Vec<f64>) {
    std::fs::write(
        home.join("config.toml"),
        format!("[mcp_servers.web]\nenabled = false\n[checkpoints]\nenabled = {checkpoints}\n"),
    )
    .unwrap();
    let server = MockModelServer::start().await.unwrap();
    for i in 0..CALLS {
        server.enqueue(
            AnthropicTurn::new()
                .tool_use(&format!("t{i}"), "shell__run", &[r#"{"command":"true"}"#])
                .finish("tool_use"),
        );
    }
    server.enqueue(AnthropicTurn::new().text(&["done"]).finish("end_turn"));
    let mut child = tokio::process::Command::new(tern())
        .args([
            "run",
            "go",
            "--output-format",
            "jsonl",
            "--allow",
            "shell__run",
        ])
        .args(["--sandbox", sandbox])
        .current_dir(project)
        .env("TERN_HOME", home)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", server.url())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut arrived = Vec::new();
    for n in 1..=CALLS + 1 {
        assert!(server.wait_for_requests(n, Duration::from_secs(60)).await >= n);
        arrived.push(Instant::now());
    }
    assert!(child.wait().await.unwrap().success());
    let ms: Vec<f64> = arrived
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
        .collect();
    (ms[0], ms[1..].to_vec())
}

#[tokio::main]
async fn main() {
    let project = workspace();
    let setups = [
        (false, "full-access"),
        (false, "workspace-write"),
        (true, "full-access"),
        (true, "workspace-write"),
    ];
    let mut firsts: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
    let mut laters: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
    // One TERN_HOME per setup, kept: after the warm-up run (the store's `git init` and first,
    // full checkpoint) each checkpoint is the incremental one of a turn with nothing changed.
    let homes: Vec<tempfile::TempDir> = setups
        .iter()
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    for ((checkpoints, sandbox), home) in setups.iter().zip(&homes) {
        call_ms(project.path(), home.path(), *checkpoints, sandbox).await;
    }
    for _ in 0..RUNS {
        for (i, ((checkpoints, sandbox), home)) in setups.iter().zip(&homes).enumerate() {
            let (first, later) = call_ms(project.path(), home.path(), *checkpoints, sandbox).await;
            firsts[i].push(first);
            laters[i].extend(later);
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n## first `shell__run true` of a turn in `tern run`, 300-file workspace, median of {RUNS} \
         (load average {})\n",
        load.split_whitespace().next().unwrap_or("?")
    );
    println!(
        "| checkpoints | sandbox | first call of the turn ms | added | later calls ms | added |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    let base_first = median(firsts[0].clone());
    let base_later = median(laters[0].clone());
    for (((checkpoints, sandbox), first), later) in setups.iter().zip(firsts).zip(laters) {
        let (f, l) = (median(first), median(later));
        println!(
            "| {} | {sandbox} | {f:.2} | {:+.2} | {l:.2} | {:+.2} |",
            if *checkpoints { "on" } else { "off" },
            f - base_first,
            l - base_later
        );
    }
}
