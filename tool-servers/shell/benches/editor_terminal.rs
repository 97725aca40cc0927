//! `cargo bench -p tern-shell --bench editor_terminal`: what showing a command in the editor's
//! terminal (`--editor-socket`, issue 21 item 4) costs per call over tern-shell spawning it
//! itself. A stand-in editor on the socket does what an ACP editor does with `terminal/create`
//! (spawn the program it is given, read its output, report the exit), so the extra cost measured
//! is tern-shell's side: the plan file, the runner's start (a second process, the kernel probe
//! and its own sandbox) and the report. Goal: ≤ 50 ms at p50 (a person watching the terminal
//! does not notice it). Prints one table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const CALLS: usize = 60;
const WARMUP: usize = 5;
const GOAL: Duration = Duration::from_millis(50);

/// Answers every connection on `socket` as an editor would `terminal/create`.
fn stand_in_editor(listener: UnixListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            let mut line = String::new();
            BufReader::new(&stream).read_line(&mut line).unwrap();
            let run: Value = serde_json::from_str(&line).unwrap();
            let args: Vec<String> = serde_json::from_value(run["args"].clone()).unwrap();
            let mut child = std::process::Command::new(run["command"].as_str().unwrap())
                .args(&args)
                .current_dir(run["cwd"].as_str().unwrap())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = &stream;
            writeln!(out, "{}", json!({"created": {"terminal_id": "t"}})).unwrap();
            let mut shown = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut shown)
                .unwrap();
            let code = child.wait().unwrap().code();
            let exited = json!({"exited": {"exit_code": code, "signal": null, "output": shown, "truncated": false}});
            writeln!(out, "{exited}").unwrap();
        }
    });
}

async fn start(dir: &std::path::Path, extra: &[&str]) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-shell"));
    cmd.arg("--root").arg(dir).args(extra);
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

async fn latencies(client: &RunningService<RoleClient, ()>) -> Vec<Duration> {
    let params = CallToolRequestParams::new("run")
        .with_arguments(json!({"command": "true"}).as_object().unwrap().clone());
    let mut times = Vec::new();
    for i in 0..WARMUP + CALLS {
        let t = Instant::now();
        let r = client.peer().call_tool(params.clone()).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
        if i >= WARMUP {
            times.push(t.elapsed());
        }
    }
    times.sort();
    times
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("terminal.sock");
        stand_in_editor(UnixListener::bind(&socket).unwrap());
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let plain = start(&root, &[]).await;
        let shown = start(&root, &["--editor-socket", socket.to_str().unwrap()]).await;
        let alone = latencies(&plain).await;
        let terminal = latencies(&shown).await;
        let extra = percentile(&terminal, 0.5).saturating_sub(percentile(&alone, 0.5));
        println!("| `true` through `run` ({CALLS} calls) | p50 | p99 |");
        println!("|---|---:|---:|");
        for (name, t) in [
            ("tern-shell spawns it", &alone),
            ("in the editor's terminal", &terminal),
        ] {
            println!(
                "| {name} | {:.1} ms | {:.1} ms |",
                percentile(t, 0.5).as_secs_f64() * 1000.0,
                percentile(t, 0.99).as_secs_f64() * 1000.0
            );
        }
        println!(
            "\nthe editor's terminal adds {:.1} ms at p50 (goal ≤ {} ms): {}",
            extra.as_secs_f64() * 1000.0,
            GOAL.as_millis(),
            if extra <= GOAL { "met" } else { "MISSED" }
        );
    });
}
