//! Big-output benchmark (issue 13): 1 GiB streamed by `shell__run` (`yes | head -c 1G`) in a
//! real `tern run`, against the scripted mock model. Prints the peak RSS (VmHWM) of the host
//! and of the shell server it started, what reached the model, and how long the call took
//! next to the producer alone (`> /dev/null`), the producer with a reader process that keeps
//! nothing (`| cat > /dev/null`), writing the stream to a file, and `cat`ting that file to another.
//! Not a timed test: prints a table.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench big_output`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use tern_e2e::release_bin;

use serde_json::Value;
use tern_model::mock::{MockModelServer, script::AnthropicTurn};

const COMMAND: &str = "yes | head -c 1G";
const RUNS: usize = 3;

/// Children of every thread of `pid` (a child belongs to the thread that spawned it).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|t| {
            std::fs::read_to_string(t.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

struct Measured {
    host_kib: u64,
    server_kib: u64,
    call_ms: u64,
    model_chars: usize,
}

/// One `tern run` whose model calls `shell__run(COMMAND)` once, sampled every 5 ms.
async fn run_once() -> Measured {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n[mcp_servers.fs]\nenabled = false\n",
    )
    .unwrap();
    let model = MockModelServer::start().await.unwrap();
    let args = serde_json::json!({ "command": COMMAND }).to_string();
    model.enqueue(
        AnthropicTurn::new()
            .tool_use("t_flood", "shell__run", &[&args])
            .finish("tool_use"),
    );
    model.enqueue(AnthropicTurn::new().text(&["done"]).finish("end_turn"));
    let mut child = tokio::process::Command::new(release_bin("tern"))
        .args(["run", "flood", "--mode", "yolo", "--output-format", "jsonl"])
        .current_dir(dir.path())
        .env("TERN_HOME", home.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", model.url())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut peaks: BTreeMap<u32, (u64, String)> = BTreeMap::new();
    loop {
        for p in std::iter::once(pid).chain(children(pid)) {
            if let Some(kib) = tern_e2e::proc_status_kib(p, "VmHWM") {
                // Read each time: a child first seen between fork and exec still has
                // tern's command line.
                let entry = peaks.entry(p).or_default();
                entry.0 = entry.0.max(kib);
                entry.1 = cmdline(p);
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let host_kib = peaks.get(&pid).map_or(0, |p| p.0);
    let server_kib = peaks
        .iter()
        .filter(|(p, (_, cmd))| **p != pid && cmd.contains("shell"))
        .map(|(_, (kib, _))| *kib)
        .max()
        .expect("no shell server seen among tern's children");
    let finished = tool_call_finished(home.path());
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the run made both model requests");
    Measured {
        host_kib,
        server_kib,
        call_ms: finished["duration_ms"].as_u64().unwrap(),
        model_chars: finished["output"].as_str().unwrap().chars().count(),
    }
}

fn tool_call_finished(home: &Path) -> Value {
    let runs = std::fs::read_dir(home.join("runs")).unwrap();
    for run in runs.flatten() {
        let text = std::fs::read_to_string(run.path().join("events.jsonl")).unwrap();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "tool_call_finished" {
                assert_eq!(v["is_error"], false, "{v}");
                return v;
            }
        }
    }
    panic!("no tool_call_finished event");
}

fn shell_ms(script: &str) -> f64 {
    let started = Instant::now();
    let status = std::process::Command::new("sh")
        .args(["-c", script])
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
    started.elapsed().as_secs_f64() * 1000.0
}

fn min(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(f64::INFINITY, f64::min)
}

#[tokio::main]
async fn main() {
    let scratch = tempfile::tempdir().unwrap();
    let a = scratch.path().join("a");
    let b = scratch.path().join("b");
    let to_file = format!("{COMMAND} > {}", a.display());
    let cat = format!("cat {} > {}", a.display(), b.display());
    let null_ms = min((0..RUNS).map(|_| shell_ms(&format!("{COMMAND} > /dev/null"))));
    let reader_ms = min((0..RUNS).map(|_| shell_ms(&format!("{COMMAND} | cat > /dev/null"))));
    let write_ms = min((0..RUNS).map(|_| shell_ms(&to_file)));
    let cat_ms = min((0..RUNS).map(|_| shell_ms(&cat)));
    drop(scratch);

    let mut measured = Vec::new();
    for _ in 0..RUNS {
        measured.push(run_once().await);
    }
    let best = measured.iter().min_by_key(|m| m.call_ms).unwrap();
    let host = measured.iter().map(|m| m.host_kib).max().unwrap();
    let server = measured.iter().map(|m| m.server_kib).max().unwrap();
    println!("1 GiB through `shell__run` in `tern run` (`{COMMAND}`), {RUNS} runs\n");
    println!("| what | value | goal |");
    println!("|---|---:|---|");
    let mib = |kib: u64| kib as f64 / 1024.0;
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "| host (`tern run`) peak RSS, worst run | {:.1} MiB | <= 64 MiB {} |",
        mib(host),
        verdict(mib(host) <= 64.0)
    );
    println!(
        "| shell server peak RSS, worst run | {:.1} MiB | <= 32 MiB {} |",
        mib(server),
        verdict(mib(server) <= 32.0)
    );
    println!(
        "| the call, best run (its `duration_ms`) | {} ms | - |",
        best.call_ms
    );
    println!("| `{COMMAND} > /dev/null` (the producer alone), best | {null_ms:.0} ms | - |");
    println!(
        "| `{COMMAND} | cat > /dev/null` (a reader process that keeps nothing), best | {reader_ms:.0} ms | - |"
    );
    println!("| `{COMMAND} > file`, best | {write_ms:.0} ms | - |");
    println!("| `cat file > file2` (1 GiB), best | {cat_ms:.0} ms | - |");
    println!(
        "| what reached the model | {} chars | capped head + tail |",
        best.model_chars
    );
}
