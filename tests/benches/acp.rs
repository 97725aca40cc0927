//! `tern acp` against `tern run` (issue 21): the same one-line prompt, the same mock model and
//! built-in servers, timed from launching the process to the first streamed text (ACP: the
//! first `agent_message_chunk`, after `initialize`, `session/new` and `session/prompt`; `tern
//! run`: the first `text_delta` on its JSONL stdout), and the CPU the whole process tree used
//! for the turn (this process's `cutime + cstime`, which count waited-for children and theirs).
//! Not a timed test: prints a table of medians with the goals marked.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench acp`
//! (`TERN_BENCH_PROFILE=debug` measures the debug build instead, e.g. on a machine without a
//! release build; the table says which).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tern_e2e::{children_cpu_ms, median, release_bin, workspace_root};
use tern_model::mock::{MockModelServer, script::AnthropicTurn};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const RUNS: usize = 7;

fn profile() -> String {
    std::env::var("TERN_BENCH_PROFILE").unwrap_or_else(|_| "release".into())
}

fn binary(name: &str) -> PathBuf {
    match profile().as_str() {
        "release" => release_bin(name),
        other => workspace_root().join("target").join(other).join(name),
    }
}

struct Sample {
    /// Launch → first streamed text.
    first_text_ms: f64,
    /// ACP only: `initialize` sent → first chunk.
    from_initialize_ms: Option<f64>,
    cpu_ms: f64,
}

fn setup() -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n[mcp_servers.lsp]\nenabled = false\n",
    )
    .unwrap();
    (home, tempfile::tempdir().unwrap())
}

fn command(
    name_args: &[&str],
    home: &std::path::Path,
    dir: &std::path::Path,
    url: &str,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(binary("tern"));
    cmd.args(name_args)
        .current_dir(dir)
        .env("TERN_HOME", home)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
        .env("ANTHROPIC_BASE_URL", url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    cmd
}

async fn via_run(server: &MockModelServer) -> Sample {
    let (home, dir) = setup();
    server.enqueue(
        AnthropicTurn::new()
            .text(&["hello ", "there"])
            .finish("end_turn"),
    );
    let cpu0 = children_cpu_ms();
    let started = Instant::now();
    let mut child = command(
        &["run", "say hello", "--output-format", "jsonl"],
        home.path(),
        dir.path(),
        &server.url(),
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut first = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        if first.is_none() && line.contains("\"text_delta\"") {
            first = Some(started.elapsed());
        }
    }
    child.wait().await.unwrap();
    Sample {
        first_text_ms: first.expect("no text_delta").as_secs_f64() * 1000.0,
        from_initialize_ms: None,
        cpu_ms: children_cpu_ms() - cpu0,
    }
}

async fn via_acp(server: &MockModelServer) -> Sample {
    let (home, dir) = setup();
    server.enqueue(
        AnthropicTurn::new()
            .text(&["hello ", "there"])
            .finish("end_turn"),
    );
    let cpu0 = children_cpu_ms();
    let started = Instant::now();
    let mut child = command(&["acp"], home.path(), dir.path(), &server.url())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    async fn until(
        lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("tern acp closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if pred(&v) {
                return v;
            }
        }
    }
    let send = |v: Value| format!("{v}\n");
    let init_at = started.elapsed();
    stdin
        .write_all(send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).as_bytes())
        .await
        .unwrap();
    until(&mut lines, |v| v["id"] == 1).await;
    stdin
        .write_all(send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": dir.path(), "mcpServers": []}})).as_bytes())
        .await
        .unwrap();
    let created = until(&mut lines, |v| v["id"] == 2).await;
    let sid = created["result"]["sessionId"].clone();
    stdin
        .write_all(send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "say hello"}]}})).as_bytes())
        .await
        .unwrap();
    until(&mut lines, |v| {
        v["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    })
    .await;
    let first = started.elapsed();
    until(&mut lines, |v| v["id"] == 3).await;
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    Sample {
        first_text_ms: first.as_secs_f64() * 1000.0,
        from_initialize_ms: Some((first - init_at).as_secs_f64() * 1000.0),
        cpu_ms: children_cpu_ms() - cpu0,
    }
}

#[tokio::main]
async fn main() {
    let server = MockModelServer::start().await.unwrap();
    let (mut run, mut acp) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        run.push(via_run(&server).await);
        acp.push(via_acp(&server).await);
    }
    let med = |v: &[Sample], f: fn(&Sample) -> f64| median(v.iter().map(f).collect());
    let (run_first, acp_first) = (
        med(&run, |s| s.first_text_ms),
        med(&acp, |s| s.first_text_ms),
    );
    let acp_init = med(&acp, |s| s.from_initialize_ms.unwrap_or(0.0));
    let (run_cpu, acp_cpu) = (med(&run, |s| s.cpu_ms), med(&acp, |s| s.cpu_ms));
    println!(
        "one prompt, mock model, built-in servers; median of {RUNS} ({} build)\n",
        profile()
    );
    println!(
        "| {:<12} | {:>22} | {:>26} | {:>14} |",
        "driver", "launch → first text", "initialize → first chunk", "CPU (process tree)"
    );
    println!("|{:-<14}|{:->24}|{:->28}|{:->16}|", "", "", "", "");
    println!(
        "| {:<12} | {:>19.1} ms | {:>26} | {:>11.0} ms |",
        "tern run", run_first, "—", run_cpu
    );
    println!(
        "| {:<12} | {:>19.1} ms | {:>23.1} ms | {:>11.0} ms |",
        "tern acp", acp_first, acp_init, acp_cpu
    );
    let added = acp_first - run_first;
    let cpu_ratio = if run_cpu > 0.0 {
        acp_cpu / run_cpu - 1.0
    } else {
        0.0
    };
    println!(
        "\nACP adds {added:+.1} ms to the first text (goal: ≤ 5 ms): {}",
        if added <= 5.0 { "met" } else { "MISSED" }
    );
    println!(
        "ACP adds {:+.0} % CPU per turn (goal: ≤ 10 %): {}",
        cpu_ratio * 100.0,
        if cpu_ratio <= 0.10 { "met" } else { "MISSED" }
    );
}
