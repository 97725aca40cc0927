//! First-request benchmark by provider (issue 23 item 6, issue 25 item 4): milliseconds from
//! launching `tern run` (built-in servers) to the mock receiving its first model request, and the
//! CPU the whole run took, for `--provider anthropic`, `--provider openai` (Chat Completions, a
//! local base URL) and `openai` with `wire_api = "responses"`. Goal: openai within 10 % of
//! anthropic. Not a timed test: prints a table of medians.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench
//! provider_startup` (`TERN_BENCH_PROFILE=debug` measures the debug binaries instead;
//! `TERN_BENCH_OPENAI_MODEL` picks the openai model, default `gpt-4o`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tern_e2e::median;
use tern_model::mock::{
    MockModelServer, MockResponse,
    responses::ResponsesTurn,
    script::{AnthropicTurn, OpenAiTurn},
};

const RUNS: usize = 9;

#[derive(Clone, Copy, PartialEq)]
enum Api {
    Anthropic,
    Chat,
    Responses,
}

fn bin(name: &str) -> PathBuf {
    let profile = std::env::var("TERN_BENCH_PROFILE").unwrap_or_else(|_| "release".into());
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join(&profile)
        .join(name);
    assert!(
        p.exists(),
        "{} missing: build the {profile} binaries first",
        p.display()
    );
    p
}

/// CPU seconds of this process's waited-for children so far (`cutime + cstime`, in ticks of
/// 1/100 s as Linux reports them in /proc/self/stat).
fn children_cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command name start at field 3: cutime is field 16, cstime 17.
    let ticks = |i: usize| {
        fields
            .get(i - 3)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(16) + ticks(17)) * 10.0
}

/// (ms to the first model request, CPU ms of the whole run).
async fn once(api: Api) -> (f64, f64) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config =
        String::from("[mcp_servers.web]\nenabled = false\n[mcp_servers.lsp]\nenabled = false\n");
    if api == Api::Responses {
        config.push_str("[model]\nwire_api = \"responses\"\n");
    }
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let server = MockModelServer::start().await.unwrap();
    let answer: MockResponse = match api {
        Api::Anthropic => AnthropicTurn::new().text(&["ok"]).finish("end_turn"),
        Api::Chat => OpenAiTurn::new().text(&["ok"]).finish("stop"),
        Api::Responses => ResponsesTurn::new().message("m", &["ok"]).completed(),
    };
    server.enqueue(answer);
    let mut cmd = tokio::process::Command::new(bin("tern"));
    cmd.args(["run", "hi", "--output-format", "jsonl"])
        .current_dir(dir.path())
        .env("TERN_HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match api {
        Api::Anthropic => {
            cmd.env("ANTHROPIC_API_KEY", "sk-ant-bench-0123456789")
                .env("ANTHROPIC_BASE_URL", server.url());
        }
        Api::Chat | Api::Responses => {
            // `TERN_BENCH_OPENAI_MODEL=local-model` (no public vocabulary) isolates the
            // tokenizer's share.
            let model =
                std::env::var("TERN_BENCH_OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o".into());
            cmd.args(["--provider", "openai", "--model", &model])
                .env("OPENAI_API_KEY", "sk-bench-0123456789")
                .env("OPENAI_BASE_URL", format!("{}/v1", server.url()));
        }
    }
    let cpu_before = children_cpu_ms();
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let _ = server.wait_for_model_request(Duration::from_secs(30)).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    child.wait().await.unwrap();
    (ms, children_cpu_ms() - cpu_before)
}

#[tokio::main]
async fn main() {
    println!("`tern run` to its first model request, built-in servers, median of {RUNS}\n");
    println!(
        "| {:<36} | {:>14} | {:>14} |",
        "provider", "first request", "CPU of the run"
    );
    println!("|{:-<38}|{:->16}|{:->16}|", "", "", "");
    let rows = [
        ("anthropic", Api::Anthropic),
        ("openai (chat completions)", Api::Chat),
        ("openai (responses)", Api::Responses),
    ];
    let mut firsts = Vec::new();
    for (label, api) in rows {
        let mut t = Vec::new();
        let mut c = Vec::new();
        for _ in 0..RUNS {
            let (ms, cpu) = once(api).await;
            t.push(ms);
            c.push(cpu);
        }
        let (t, c) = (median(t), median(c));
        println!("| {label:<36} | {t:>11.1} ms | {c:>11.0} ms |");
        firsts.push(t);
    }
    let ratio = firsts[1] / firsts[0];
    println!(
        "\nopenai's first request takes {:.0} % of anthropic's (goal: within 10 %): {}",
        ratio * 100.0,
        if ratio <= 1.10 { "met" } else { "MISSED" }
    );
}
