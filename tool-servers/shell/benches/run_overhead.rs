//! `cargo bench -p tern-shell`: what a `run` call costs, sandbox on and off,
//! and what a 1 GiB flood costs the server. Prints one table.
//!
//! - latency of a trivial `true` call, p50/p99, per sandbox mode (the goal:
//!   the sandbox adds ≤ 5 ms at p50 over `full-access`);
//! - the server's own CPU time per call (utime+stime from /proc, children
//!   excluded), the number to watch when profiling the per-call path;
//! - `yes | head -c 1G` through `run`: wall time against writing the same
//!   stream to a file, and the server's peak RSS (VmHWM; goal ≤ 32 MiB).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

const CALLS: usize = 300;
const WARMUP: usize = 20;

struct Server {
    client: RunningService<RoleClient, ()>,
    pid: u32,
    _dir: tempfile::TempDir,
}

async fn start(mode: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-shell"));
    cmd.arg("--root").arg(dir.path()).args(["--sandbox", mode]);
    let transport = TokioChildProcess::new(cmd).unwrap();
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    Server {
        client,
        pid,
        _dir: dir,
    }
}

impl Server {
    async fn run(&self, command: &str, meta: Option<serde_json::Value>) -> serde_json::Value {
        let mut params = CallToolRequestParams::new("run").with_arguments(
            json!({"command": command, "timeout_sec": 300})
                .as_object()
                .unwrap()
                .clone(),
        );
        if let Some(meta) = meta {
            params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(
                meta.as_object().unwrap().clone(),
            )));
        }
        let r = self.client.peer().call_tool(params).await.unwrap();
        serde_json::to_value(r).unwrap()
    }

    /// utime + stime of the server process, in microseconds.
    fn cpu_us(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap();
        let after = stat.rsplit_once(')').unwrap().1;
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
        ticks * 1_000_000 / clock_ticks()
    }

    fn status_kib(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

fn clock_ticks() -> u64 {
    // USER_HZ is 100 on every Linux configuration that matters.
    100
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

struct Row {
    mode: &'static str,
    p50: Duration,
    p99: Duration,
    cpu_us_per_call: u64,
}

/// All modes' servers run at once and take turns in blocks of `BLOCK`
/// calls, so load from other processes on the machine drifts over all rows
/// alike instead of skewing whichever mode ran last.
async fn latency(modes: [&'static str; 3]) -> Vec<Row> {
    const BLOCK: usize = 20;
    let mut servers = Vec::new();
    for mode in modes {
        let s = start(mode).await;
        for _ in 0..WARMUP {
            s.run("true", None).await;
        }
        servers.push((mode, s, Vec::with_capacity(CALLS), 0u64));
    }
    for _ in 0..CALLS / BLOCK {
        for (_, s, times, cpu) in servers.iter_mut() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let cpu0 = s.cpu_us();
            for _ in 0..BLOCK {
                let t0 = Instant::now();
                let r = s.run("true", None).await;
                times.push(t0.elapsed());
                assert_eq!(r["structuredContent"]["exit_code"], 0, "{r}");
            }
            *cpu += s.cpu_us() - cpu0;
        }
    }
    servers
        .into_iter()
        .map(|(mode, _, mut times, cpu)| {
            times.sort();
            Row {
                mode,
                p50: percentile(&times, 0.5),
                p99: percentile(&times, 0.99),
                cpu_us_per_call: cpu / times.len() as u64,
            }
        })
        .collect()
}

async fn flood(mode: &str) -> (Duration, u64, u64, String) {
    let s = start(mode).await;
    s.run("true", None).await;
    let t0 = Instant::now();
    let r = s
        .run(
            "yes | head -c 1G",
            Some(json!({"tern/limits": {"max_output_chars": 30_000}})),
        )
        .await;
    let wall = t0.elapsed();
    let total = r["structuredContent"]["total_bytes"].as_u64().unwrap();
    assert_eq!(total, 1 << 30, "{}", r["structuredContent"]);
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.len() < 31_000 && text.contains("characters omitted"));
    (
        wall,
        s.status_kib("VmHWM:"),
        total,
        text.lines().last().unwrap_or("").to_string(),
    )
}

fn to_file_baseline() -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg("yes | head -c 1G > out")
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    t0.elapsed()
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let rows = latency(["full-access", "workspace-write", "read-only"]).await;
        let full = &rows[0];
        println!("\n## tern-shell `run` overhead ({CALLS} sequential calls of `true` per mode, modes interleaved in blocks of 20, after {WARMUP} warm-up)\n");
        println!("| sandbox | p50 ms | p99 ms | added p50 ms vs full-access | server CPU µs/call |");
        println!("|---|---|---|---|---|");
        for row in &rows {
            let added = row.p50.as_secs_f64() * 1000.0 - full.p50.as_secs_f64() * 1000.0;
            println!(
                "| {} | {} | {} | {added:+.2} | {} |",
                row.mode,
                ms(row.p50),
                ms(row.p99),
                row.cpu_us_per_call
            );
        }
        // Best of three, alternating, so a noisy neighbour skews both alike.
        let mut baseline = Duration::MAX;
        let mut runs: Vec<(&str, Duration, u64)> = vec![
            ("workspace-write", Duration::MAX, 0),
            ("full-access", Duration::MAX, 0),
        ];
        for _ in 0..3 {
            baseline = baseline.min(to_file_baseline());
            for (mode, best, hwm) in runs.iter_mut() {
                let (wall, peak, _, _) = flood(mode).await;
                *best = (*best).min(wall);
                *hwm = (*hwm).max(peak);
            }
        }
        println!("\n## 1 GiB through `run` (`yes | head -c 1G`, best of 3)\n");
        println!("| what | wall ms | server peak RSS (VmHWM) KiB |");
        println!("|---|---|---|");
        println!("| `yes | head -c 1G > file` (no server) | {} | – |", ms(baseline));
        for (mode, wall, hwm) in runs {
            println!("| through `run`, {mode} | {} | {hwm} |", ms(wall));
        }
    });
}
