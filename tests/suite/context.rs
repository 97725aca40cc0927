//! Long sessions against a provider with a real context limit: the mock counts every request,
//! refuses one that is too long with the provider's own error, checks that tool calls and
//! results pair up, and serves cached prefixes — and `tern run` must finish anyway.

use std::time::Duration;

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{
    MockResponse, RecordedRequest,
    responses::ResponsesTurn,
    script::{AnthropicTurn, OpenAiTurn},
    simulate::Api,
};

const GOAL: &str = "read every chapter and report the last word";

/// A project with `n` chapter files of about 5 000 tokens each (20 kB of text).
fn chapters(env: &RunEnv, n: usize) {
    for i in 0..n {
        let text: String = (0..2_500)
            .map(|j| format!("ch{i}w{j} "))
            .collect::<Vec<_>>()
            .join("")
            + &format!("\nlast word of chapter {i}\n");
        std::fs::write(env.dir.path().join(format!("ch{i}.txt")), text).unwrap();
    }
}

fn is_summary(request: &RecordedRequest) -> bool {
    request.body.windows(12).any(|w| w == b"tern:compact")
}

/// Summaries are answered outside the script: they are not turns of the session.
fn answer_summaries(env: &RunEnv, api: Api) {
    env.server.respond_when(is_summary, move |_| match api {
        Api::Anthropic => AnthropicTurn::new()
            .text(&["Goal: read every chapter. Files read: the early chapters."])
            .finish("end_turn"),
        Api::Openai => OpenAiTurn::new()
            .text(&["Goal: read every chapter. Files read: the early chapters."])
            .finish("stop"),
        Api::Responses => ResponsesTurn::new()
            .message(
                "msg_summary",
                &["Goal: read every chapter. Files read: the early chapters."],
            )
            .completed(),
    });
}

fn read_turn(api: Api, i: usize) -> MockResponse {
    let args = format!(r#"{{"path":"ch{i}.txt"}}"#);
    match api {
        Api::Anthropic => AnthropicTurn::new()
            .text(&[&format!("Reading chapter {i}.")])
            .tool_use(&format!("toolu_{i}"), "fs__read_file", &[&args])
            .finish("tool_use"),
        Api::Openai => OpenAiTurn::new()
            .text(&[&format!("Reading chapter {i}.")])
            .tool_call(0, &format!("call_{i}"), "fs__read_file", &[&args])
            .finish("tool_calls"),
        Api::Responses => ResponsesTurn::new()
            .message(&format!("msg_{i}"), &[&format!("Reading chapter {i}.")])
            .function_call(
                &format!("fc_{i}"),
                &format!("call_{i}"),
                "fs__read_file",
                &[&args],
            )
            .completed(),
    }
}

fn final_turn(api: Api) -> MockResponse {
    match api {
        Api::Anthropic => AnthropicTurn::new()
            .text(&["The last word is chapter 39."])
            .finish("end_turn"),
        Api::Openai => OpenAiTurn::new()
            .text(&["The last word is chapter 39."])
            .finish("stop"),
        Api::Responses => ResponsesTurn::new()
            .message("msg_last", &["The last word is chapter 39."])
            .completed(),
    }
}

/// `tern run` on `api`'s path, with the window tern is told about.
async fn run(env: &RunEnv, api: Api, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    if api != Api::Anthropic {
        cmd.env_remove("ANTHROPIC_API_KEY")
            .env("OPENAI_BASE_URL", env.server.url())
            .args(["--provider", "openai", "--model", "gpt-4o"]);
    }
    if api == Api::Responses {
        cmd.args(["-c", "model.wire_api=responses"]);
    }
    tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("tern run did not finish")
        .unwrap()
}

fn last_request_text(env: &RunEnv) -> String {
    let requests: Vec<RecordedRequest> = env
        .server
        .model_requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect();
    String::from_utf8_lossy(&requests.last().unwrap().body).into_owned()
}

async fn a_long_session_finishes_inside_the_window(api: Api) {
    let env = RunEnv::new().await;
    env.server.simulate(api, 40_000);
    answer_summaries(&env, api);
    chapters(&env, 40);
    for i in 0..40 {
        env.server.enqueue(read_turn(api, i));
    }
    env.server.enqueue(final_turn(api));
    let out = run(
        &env,
        api,
        &[
            "run",
            GOAL,
            "--max-steps",
            "60",
            "--output-format",
            "jsonl",
            "-c",
            "model.context_window=40000",
            "-c",
            "model.max_tokens=4096",
        ],
    )
    .await;
    assert_exit(&out, 0);
    let sim = env.server.simulation().unwrap();
    assert!(
        sim.overflows <= 1,
        "{} requests were refused",
        sim.overflows
    );
    assert!(sim.peak_prompt + 4096 <= 40_000, "peak {}", sim.peak_prompt);
    assert_eq!(env.server.pending(), 0, "every scripted turn was served");
    let turns = env
        .server
        .model_requests()
        .iter()
        .filter(|r| !is_summary(r))
        .count() as u64;
    assert_eq!(turns, 41 + sim.overflows, "each turn served exactly once");
    assert!(last_request_text(&env).contains(GOAL), "the goal was lost");
    let events = env.events();
    let finished = events.last().unwrap();
    assert_eq!(finished["status"], "success");
    assert!(finished["answer"].as_str().unwrap().contains("chapter 39"));
    assert!(!of_type(&events, "compaction").is_empty());
}

#[tokio::test]
async fn a_40_step_session_under_a_40k_window_finishes_on_the_anthropic_path() {
    a_long_session_finishes_inside_the_window(Api::Anthropic).await;
}

#[tokio::test]
async fn a_40_step_session_under_a_40k_window_finishes_on_the_openai_path() {
    a_long_session_finishes_inside_the_window(Api::Openai).await;
}

#[tokio::test]
async fn a_40_step_session_under_a_40k_window_finishes_on_the_responses_path() {
    a_long_session_finishes_inside_the_window(Api::Responses).await;
}

#[tokio::test]
async fn a_request_refused_as_too_long_is_compacted_and_retried_once() {
    let env = RunEnv::new().await;
    // tern believes the window is 200k (the model family's); the provider allows 20k.
    env.server.simulate(Api::Anthropic, 20_000);
    answer_summaries(&env, Api::Anthropic);
    chapters(&env, 4);
    for i in 0..4 {
        env.server.enqueue(read_turn(Api::Anthropic, i));
    }
    env.server.enqueue(final_turn(Api::Anthropic));
    let out = run(
        &env,
        Api::Anthropic,
        &["run", GOAL, "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let sim = env.server.simulation().unwrap();
    assert_eq!(sim.overflows, 1);
    let events = env.events();
    let compactions = of_type(&events, "compaction");
    assert!(
        compactions.iter().any(|c| c["reason"] == "overflow"),
        "{compactions:?}"
    );
    // Each tool call ran once: the refused request's step was sent again, not re-run.
    assert_eq!(of_type(&events, "tool_call_finished").len(), 4);
    assert_eq!(env.server.pending(), 0);
}

/// A finished run that read 12 chapters (~60k tokens) through a 30k window.
async fn twelve_chapters_in_a_30k_window() -> RunEnv {
    twelve_chapters_in_a_30k_window_with("").await
}

/// [`twelve_chapters_in_a_30k_window`] with `extra` in the user's config.
async fn twelve_chapters_in_a_30k_window_with(extra: &str) -> RunEnv {
    let env = RunEnv::new().await;
    env.add_servers(extra);
    env.server.simulate(Api::Anthropic, 30_000);
    answer_summaries(&env, Api::Anthropic);
    chapters(&env, 12);
    for i in 0..12 {
        env.server.enqueue(read_turn(Api::Anthropic, i));
    }
    env.server.enqueue(final_turn(Api::Anthropic));
    let out = run(
        &env,
        Api::Anthropic,
        &[
            "run",
            GOAL,
            "--output-format",
            "jsonl",
            "-c",
            "model.context_window=30000",
            "-c",
            "model.max_tokens=2048",
        ],
    )
    .await;
    assert_exit(&out, 0);
    env
}

#[tokio::test]
async fn the_cached_prefix_still_hits_after_a_compaction() {
    let env = twelve_chapters_in_a_30k_window().await;
    let events = env.events();
    let first_compaction = events
        .iter()
        .position(|e| e["type"] == "compaction")
        .expect("no compaction happened");
    let next = events[first_compaction..]
        .iter()
        .find(|e| e["type"] == "model_response")
        .expect("no request after the compaction");
    assert!(
        next["cache_read_tokens"].as_u64().unwrap() > 0,
        "the system prompt and tools should still be cached: {next}"
    );
}

#[tokio::test]
async fn continuing_a_compacted_session_starts_from_the_compacted_state() {
    let env = twelve_chapters_in_a_30k_window().await;
    assert!(!of_type(&env.events(), "compaction").is_empty());

    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Chapter 0 was read early on."])
            .finish("end_turn"),
    );
    let out = run(
        &env,
        Api::Anthropic,
        &[
            "run",
            "--continue",
            "which chapter came first?",
            "-c",
            "model.context_window=30000",
            "-c",
            "model.max_tokens=2048",
        ],
    )
    .await;
    assert_exit(&out, 0);
    let body: Value = env.server.model_requests().last().unwrap().json();
    let sent = body["messages"].to_string();
    assert!(sent.contains("which chapter came first?"));
    assert!(sent.contains(GOAL), "the goal survives");
    // Chapter 0's text was elided in the first run; the resumed session does not bring it back.
    assert!(
        !sent.contains("ch0w1500 "),
        "the raw history came back on resume"
    );
    assert!(sent.contains("output elided") || sent.contains("Summary of the work so far"));
}

#[tokio::test]
async fn a_local_servers_reported_window_is_the_budget() {
    let env = RunEnv::new().await;
    // vLLM answers GET /models with the window it was started with.
    env.server.respond_when(
        |r| r.method == "GET" && r.path.ends_with("/models"),
        |_| {
            MockResponse::json(
                200,
                &serde_json::json!({"object": "list", "data": [
                    {"id": "local-model", "object": "model", "max_model_len": 8192}]}),
            )
        },
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["hello"]).finish("stop"));
    let out = env
        .command(&[
            "run",
            "hi",
            "--provider",
            "openai",
            "--model",
            "local-model",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_BASE_URL", env.server.url())
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let finished = env
        .events()
        .into_iter()
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["context_window"], 8192);
    // ollama (named: its port is not 11434 here): the model's num_ctx setting wins over its
    // native context length.
    let env = RunEnv::new().await;
    env.add_servers("server = \"ollama\"\n");
    env.server.respond_when(
        |r| r.path.ends_with("/api/show"),
        |_| {
            MockResponse::json(
                200,
                &serde_json::json!({"parameters": "num_ctx 16384\nstop \"<|im_end|>\"",
                    "model_info": {"qwen2.context_length": 32768}}),
            )
        },
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["hello"]).finish("stop"));
    let out = env
        .command(&[
            "run",
            "hi",
            "--provider",
            "openai",
            "--model",
            "qwen2.5-coder:7b",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()))
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let finished = env
        .events()
        .into_iter()
        .find(|e| e["type"] == "turn_finished")
        .unwrap();
    assert_eq!(finished["context_window"], 16384);
}

/// Claude Code's `PreCompact` hook runs before the loop compacts by itself too, with trigger
/// `auto` (issue 19, item 1; `/compact` sends `manual`).
#[tokio::test]
async fn a_pre_compact_hook_runs_before_an_automatic_compaction_with_trigger_auto() {
    let log = tempfile::tempdir().unwrap();
    let seen = log.path().join("pre-compact.jsonl");
    let hook = format!(
        "[[hooks.PreCompact]]\ncommand = \"cat >> '{}'; echo >> '{}'\"\n",
        seen.display(),
        seen.display()
    );
    let env = twelve_chapters_in_a_30k_window_with(&hook).await;
    let compactions = of_type(&env.events(), "compaction").len();
    assert!(compactions > 0, "no compaction happened");
    let text = std::fs::read_to_string(&seen).expect("the PreCompact hook never ran");
    let inputs: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!inputs.is_empty());
    for input in &inputs {
        assert_eq!(input["hook_event_name"], "PreCompact");
        assert_eq!(input["trigger"], "auto", "{input}");
        assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    }
}
