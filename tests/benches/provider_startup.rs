//! First-request benchmark by provider (issue 23 item 6, issue 25 item 4): milliseconds from
//! launching `tern run` (built-in servers) to the mock receiving its first model request, and the
//! CPU the whole run took, for `--provider anthropic`, `--provider openai` (Chat Completions, a
//! local base URL) and `openai` with `wire_api = "responses"`. Goal: openai within 10 % of
//! anthropic. Not a timed test: prints a table of medians.
//!
//! A second table reports the CPU a turn costs on each path (issue 23's "CPU per turn on the
//! Responses path vs chat", no goal): the process tree's CPU for a run of 1 + 20 steps (each a
//! `fs__read_file` call and its result) less that of a 1-step run, over 20.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench
//! provider_startup` (`TERN_BENCH_PROFILE=debug` measures the debug binaries instead;
//! `TERN_BENCH_OPENAI_MODEL` picks the openai model, default `gpt-4o`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tern_e2e::{children_cpu_ms, median};
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

/// Extra steps of the CPU-per-turn runs.
const STEPS: usize = 20;

/// The answer of one step: a tool call (`call` = Some(i)) or the final text.
fn turn(api: Api, call: Option<usize>) -> MockResponse {
    let args = r#"{"path":"notes.txt"}"#;
    match (api, call) {
        (Api::Anthropic, Some(i)) => AnthropicTurn::new()
            .text(&["Reading."])
            .tool_use(&format!("toolu_{i}"), "fs__read_file", &[args])
            .finish("tool_use"),
        (Api::Chat, Some(i)) => OpenAiTurn::new()
            .text(&["Reading."])
            .tool_call(0, &format!("call_{i}"), "fs__read_file", &[args])
            .finish("tool_calls"),
        (Api::Responses, Some(i)) => ResponsesTurn::new()
            .message(&format!("m{i}"), &["Reading."])
            .function_call(
                &format!("fc_{i}"),
                &format!("call_{i}"),
                "fs__read_file",
                &[args],
            )
            .completed(),
        (Api::Anthropic, None) => AnthropicTurn::new().text(&["ok"]).finish("end_turn"),
        (Api::Chat, None) => OpenAiTurn::new().text(&["ok"]).finish("stop"),
        (Api::Responses, None) => ResponsesTurn::new().message("m", &["ok"]).completed(),
    }
}

/// (ms to the first model request, CPU ms of the whole run) for a run of `1 + calls` steps.
async fn once(api: Api) -> (f64, f64) {
    run(api, 0).await
}

async fn run(api: Api, calls: usize) -> (f64, f64) {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config =
        String::from("[mcp_servers.web]\nenabled = false\n[mcp_servers.lsp]\nenabled = false\n");
    if api == Api::Responses {
        config.push_str("[model]\nwire_api = \"responses\"\n");
    }
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "a line of notes for the model to read\n".repeat(40),
    )
    .unwrap();
    let server = MockModelServer::start().await.unwrap();
    for i in 0..calls {
        server.enqueue(turn(api, Some(i)));
    }
    server.enqueue(turn(api, None));
    let mut cmd = tokio::process::Command::new(bin("tern"));
    cmd.args([
        "run",
        "hi",
        "--output-format",
        "jsonl",
        "--allow",
        "fs__read_file",
    ])
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

    println!(
        "\nCPU per turn (process tree: tern and its servers), (run of 1 + {STEPS} steps − run of \
         1 step) / {STEPS}, median of {RUNS}; report, no goal\n"
    );
    println!("| {:<36} | {:>14} |", "provider", "CPU per turn");
    println!("|{:-<38}|{:->16}|", "", "");
    for (label, api) in rows {
        let mut per = Vec::new();
        for _ in 0..RUNS {
            let (_, short) = run(api, 0).await;
            let (_, long) = run(api, STEPS).await;
            per.push((long - short) / STEPS as f64);
        }
        println!("| {label:<36} | {:>11.2} ms |", median(per));
    }
}
