//! Local OpenAI-compatible servers as they really behave (issue 23 item 3): their own overflow
//! bodies, their window endpoints, answers cut by `max_tokens`, sampling settings, a stream that
//! goes silent. The real `tern` against the mock speaking Chat Completions.

use std::time::{Duration, Instant};

use serde_json::json;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{MockResponse, script::OpenAiTurn};

pub(super) async fn run(env: &RunEnv, model: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    cmd.args(["--provider", "openai", "--model", model])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()));
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("tern run did not finish in 120 s")
        .unwrap()
}

pub(super) fn probes(env: &RunEnv) -> Vec<String> {
    env.server
        .requests()
        .iter()
        .filter(|r| !r.path.ends_with("/chat/completions"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// llama.cpp's own overflow body (provider-wire/llamacpp_observed_errors.json), for a prompt of
/// `prompt` tokens in a `n_ctx` window.
fn llamacpp_overflow(prompt: u64, n_ctx: u64) -> MockResponse {
    MockResponse::json(
        400,
        &json!({"error": {"code": 400, "message": format!("request ({prompt} tokens) exceeds the \
            available context size ({n_ctx} tokens), try increasing it"),
            "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx}}),
    )
}

/// One local server refusing a request as longer than its window, in its own words.
struct Overflow {
    /// `[model] server`.
    server: &'static str,
    /// Its refusal of the request that carries the big tool result.
    refusal: MockResponse,
    /// Its answer to its own settings endpoint (`path` suffix, response); `None`: not found, so
    /// only the refusal can teach the window.
    settings: Option<(&'static str, MockResponse)>,
    /// The window the run is budgeted against after the refusal.
    window: u64,
    /// The settings endpoint asked (only the server's own).
    probes: &'static [&'static str],
    /// The retry's size as a share of the refused request's, at most: a refusal naming a window
    /// about half the refused prompt allows half; one naming none makes tern halve its own
    /// token estimate of the request, which leaves the JSON around the text out.
    retry_share: f64,
}

/// The recovery every local server's overflow goes through: the model reads a 3000-line log,
/// the server refuses the request carrying it, tern learns what the refusal says, cuts the
/// newest result (head + tail) and the retry succeeds; the refused request is never sent again
/// unchanged.
async fn overflow_is_recovered(case: Overflow) {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "server = \"{}\"\n[mcp_servers.fs]\nmax_output_chars = 200000\n",
        case.server
    ));
    if let Some((path, answer)) = case.settings {
        env.server
            .respond_when(move |r| r.path.ends_with(path), move |_| answer.clone());
    }
    let big: String = (0..3000)
        .map(|i| format!("entry {i}: some build output\n"))
        .collect();
    std::fs::write(env.dir.path().join("build.log"), &big).unwrap();
    env.server.enqueue(
        OpenAiTurn::new()
            .tool_call(0, "call_1", "fs__read_file", &[r#"{"path":"build.log"}"#])
            .finish("tool_calls"),
    );
    env.server.enqueue(case.refusal);
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&["It is a build log."])
            .finish("stop"),
    );
    let out = run(
        &env,
        "qwen2.5-coder-1.5b",
        &["run", "what is build.log?", "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 3, "{}", case.server);
    assert_ne!(
        sent[1].body, sent[2].body,
        "{}: the refused request was sent again unchanged",
        case.server
    );
    assert!(
        (sent[2].body.len() as f64) < sent[1].body.len() as f64 * case.retry_share,
        "{}: the newest result was not cut enough ({} → {} bytes)",
        case.server,
        sent[1].body.len(),
        sent[2].body.len()
    );
    // Cut to head and tail, with what was left out and that it was cut for the window (the
    // whole is kept in a file outside the workspace, which the model is told it cannot read).
    let retry = String::from_utf8_lossy(&sent[2].body);
    for kept in [
        "entry 0: some build output",
        "entry 2999: some build output",
        "this result was cut to fit the model's context window",
        "characters omitted; the full output had",
    ] {
        assert!(
            retry.contains(kept),
            "{}: the retry lacks `{kept}`",
            case.server
        );
    }
    let events = env.events();
    // The window learned from the refusal (or, when it names none, the one the server's
    // settings gave) is the budget from then on.
    let finished = of_type(&events, "turn_finished");
    assert_eq!(
        finished.last().unwrap()["context_window"],
        case.window,
        "{}",
        case.server
    );
    assert!(
        of_type(&events, "notice").iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("did not fit the context window")),
        "{}: {events:?}",
        case.server
    );
    assert_eq!(probes(&env), case.probes, "{}", case.server);
}

#[tokio::test]
async fn llamacpps_overflow_teaches_the_window_and_the_newest_result_is_cut_before_the_retry() {
    overflow_is_recovered(Overflow {
        server: "llamacpp",
        refusal: llamacpp_overflow(30_000, 16_384),
        settings: None,
        window: 16_384,
        probes: &["GET /props"],
        retry_share: 0.5,
    })
    .await;
}

/// vLLM's refusals (`vllm/entrypoints/openai/serving_engine.py`, `_validate_input`, as typed in
/// `host/model/src/error.rs`): the older envelope (`{"object": "error", …}` at the top level)
/// with the older sentence, and the newer `{"error": {…}}` with the input-only sentence. Both
/// name the window (`max_model_len`) and the prompt's tokens.
#[tokio::test]
async fn vllms_overflow_teaches_the_window_and_the_newest_result_is_cut_before_the_retry() {
    overflow_is_recovered(Overflow {
        server: "vllm",
        refusal: MockResponse::json(
            400,
            &json!({"object": "error", "message": "This model's maximum context length is 16384 \
                tokens. However, you requested 38192 tokens (30000 in the messages, 8192 in the \
                completion). Please reduce the length of the messages or completion.",
                "type": "BadRequestError", "param": null, "code": 400}),
        ),
        settings: None,
        window: 16_384,
        probes: &["GET /v1/models"],
        retry_share: 0.5,
    })
    .await;
    overflow_is_recovered(Overflow {
        server: "vllm",
        refusal: MockResponse::json(
            400,
            &json!({"error": {"message": "This model's maximum context length is 12288 tokens. \
                However, your request has 30000 input tokens. Please reduce the length of the \
                input messages.", "type": "BadRequestError", "param": null, "code": 400}}),
        ),
        settings: None,
        window: 12_288,
        probes: &["GET /v1/models"],
        retry_share: 0.5,
    })
    .await;
}

/// ollama's refusal through its OpenAI-compatible endpoint: the runner's `errorInputTooLong`
/// ("the input length exceeds the context length", HTTP 400) rewrapped by
/// `openai/openai.go` (`BaseWriter.writeError` → `NewError(500, …)`, so `type` is `api_error`
/// while the status stays the runner's). It names no numbers, so the window stays the one
/// `POST /api/show` gave — here the model's own `context_length`, as ollama reports it when no
/// `num_ctx` is set, while the server really runs a smaller one (ollama's default) — and the
/// newest result is cut to half of what was refused.
#[tokio::test]
async fn ollamas_overflow_without_numbers_still_cuts_the_newest_result_before_the_retry() {
    overflow_is_recovered(Overflow {
        server: "ollama",
        refusal: MockResponse::json(
            400,
            &json!({"error": {"message": "the input length exceeds the context length",
                "type": "api_error", "param": null, "code": null}}),
        ),
        settings: Some((
            "/api/show",
            MockResponse::json(
                200,
                &json!({"modelfile": "FROM qwen2.5-coder:1.5b", "parameters": "stop \"<|im_end|>\"",
                    "details": {"format": "gguf", "family": "qwen2", "parameter_size": "1.5B",
                        "quantization_level": "Q4_K_M"},
                    "model_info": {"general.architecture": "qwen2",
                        "qwen2.context_length": 32768, "qwen2.embedding_length": 1536},
                    "capabilities": ["completion", "tools"]}),
            ),
        )),
        window: 32_768,
        probes: &["POST /api/show"],
        retry_share: 0.75,
    })
    .await;
}

#[tokio::test]
async fn a_request_that_cannot_be_shortened_is_not_sent_again() {
    let env = RunEnv::new().await;
    env.add_servers("server = \"llamacpp\"\n");
    env.server.enqueue(llamacpp_overflow(5_257, 3_072));
    env.server
        .enqueue(OpenAiTurn::new().text(&["never"]).finish("stop"));
    let out = run(&env, "tiny", &["run", "hi"]).await;
    assert_exit(&out, 1);
    assert_eq!(env.server.model_requests().len(), 1, "sent again unchanged");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("exceeds the available context size"),
        "{said}"
    );
    assert!(said.contains("hint:"), "{said}");
}

#[tokio::test]
async fn a_text_answer_cut_by_max_tokens_is_continued_and_then_succeeds() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&["The first half, "])
            .finish("length"),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["and the rest."]).finish("stop"));
    let out = run(
        &env,
        "local",
        &["run", "explain", "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let messages = sent[1].json()["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"].as_str().unwrap().contains("cut off"),
        "{last}"
    );
    let finished = env.events().pop().unwrap();
    assert_eq!(finished["status"], "success");
    assert_eq!(finished["answer"], "The first half, and the rest.");
}

#[tokio::test]
async fn an_answer_still_cut_after_the_continuations_ends_the_run_truncated() {
    let env = RunEnv::new().await;
    for _ in 0..3 {
        env.server
            .enqueue(OpenAiTurn::new().text(&["more and more "]).finish("length"));
    }
    let out = run(&env, "local", &["run", "explain"]).await;
    assert_exit(&out, 1);
    assert_eq!(env.server.model_requests().len(), 3);
    let finished = env.events().pop().unwrap();
    assert_eq!(finished["status"], "truncated");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("max_tokens"), "{said}");
}

#[tokio::test]
async fn a_failed_window_probe_is_retried_then_said_once() {
    let env = RunEnv::new().await;
    // The server answers no settings endpoint: one more try, then the assumption is said.
    env.server
        .enqueue(OpenAiTurn::new().text(&["ok"]).finish("stop"));
    let out = run(
        &env,
        "qwen2.5-coder:1.5b",
        &["run", "hi", "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let notices: Vec<String> = of_type(&env.events(), "notice")
        .iter()
        .filter_map(|n| n["message"].as_str().map(str::to_owned))
        .filter(|m| m.contains("context window unknown"))
        .collect();
    assert_eq!(
        notices,
        ["context window unknown: assuming 32768; set [model] context_window"]
    );
    // Generic probes only (no ollama POST to a server that is not ollama).
    assert_eq!(probes(&env), ["GET /v1/models", "GET /props"]);

    // ollama, named: its endpoint only; unreachable (5xx) is asked twice.
    let env = RunEnv::new().await;
    env.add_servers("server = \"ollama\"\n");
    env.server.respond_when(
        |r| r.path.ends_with("/api/show"),
        |_| MockResponse::json(503, &json!({"error": "loading model"})),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["ok"]).finish("stop"));
    let out = run(&env, "qwen2.5-coder:1.5b", &["run", "hi"]).await;
    assert_exit(&out, 0);
    assert_eq!(probes(&env), ["POST /api/show", "POST /api/show"]);
}

#[tokio::test]
async fn temperature_top_p_and_seed_are_sent_when_set() {
    let env = RunEnv::new().await;
    env.add_servers("temperature = 0.2\ntop_p = 0.9\nseed = 7\n");
    env.server
        .enqueue(OpenAiTurn::new().text(&["ok"]).finish("stop"));
    let out = run(&env, "local", &["run", "hi"]).await;
    assert_exit(&out, 0);
    let body = env.server.model_requests()[0].json();
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["seed"], 7);

    // Out of range: a config error before anything starts.
    let env = RunEnv::new().await;
    env.add_servers("temperature = 3.5\n");
    let out = run(&env, "local", &["run", "hi"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("temperature"), "{stderr}");
    assert!(env.server.model_requests().is_empty());
}

#[tokio::test]
async fn a_stream_silent_past_stream_idle_timeout_sec_is_cut_and_retried() {
    let env = RunEnv::new().await;
    env.add_servers("stream_idle_timeout_sec = 1\n");
    // The first answer starts, then says nothing for 30 s.
    env.server.enqueue(
        MockResponse::sse_chunks(OpenAiTurn::new().text(&["thinking"]).finish_events("stop"))
            .delay_between(Duration::from_secs(30)),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["done"]).finish("stop"));
    let started = Instant::now();
    let out = run(&env, "local", &["run", "hi", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let events = env.events();
    let retries = of_type(&events, "model_retry");
    assert_eq!(retries.len(), 1, "{events:?}");
    assert_eq!(events.last().unwrap()["answer"], "done");
}

#[tokio::test]
async fn a_tool_call_written_as_fenced_json_runs_and_the_history_stays_valid() {
    let env = RunEnv::new().await;
    env.server
        .simulate(tern_model::mock::simulate::Api::Openai, 200_000);
    std::fs::write(env.dir.path().join("hello.txt"), "hello from the file\n").unwrap();
    // What Qwen2.5-Coder-1.5B wrote through llama-server: the call as text, no tool_calls.
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&[
                "```json\n{\"name\": \"fs__read_file\", ",
                "\"arguments\": {\"path\": \"hello.txt\"}}\n```",
            ])
            .finish("stop"),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["It says hello."]).finish("stop"));
    let out = run(
        &env,
        "qwen2.5-coder-1.5b",
        &["run", "read hello.txt", "--output-format", "jsonl"],
    )
    .await;
    assert_exit(&out, 0);
    let events = env.events();
    let calls = of_type(&events, "tool_call_finished");
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0]["tool"], "fs__read_file");
    assert_eq!(calls[0]["is_error"], false);
    // The next request pairs a real tool call with its result (the simulated server checks).
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let messages = sent[1].json()["messages"].as_array().unwrap().clone();
    let assistant = &messages[messages.len() - 2];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "fs__read_file"
    );
    let tool = messages.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("hello from the file")
    );
    assert_eq!(events.last().unwrap()["answer"], "It says hello.");

    // JSON inside prose is an answer, not a call.
    let env = RunEnv::new().await;
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&["Call it like this:\n```json\n{\"name\": \"fs__read_file\", \"arguments\": {}}\n```"])
            .finish("stop"),
    );
    let out = run(&env, "local", &["run", "how?", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    assert!(of_type(&env.events(), "tool_call_finished").is_empty());
}

/// The same model under llama.cpp's stock template (the README's recipe as written) wrote its
/// edit as an XML-like element, not JSON: the run must edit the file, not end with that text as
/// its answer (it did, exit 0, before `<function …>` elements were read).
#[tokio::test]
async fn a_tool_call_written_as_a_function_element_runs() {
    let env = RunEnv::new().await;
    env.server
        .simulate(tern_model::mock::simulate::Api::Openai, 200_000);
    std::fs::write(
        env.dir.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    // Verbatim from the real run (only the path made relative).
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&[
                "<tools>\n  <function name=\"fs__edit_file\" arguments='{\"path\": \"calc.py\", ",
                "\"old_string\": \"return a - b\", \"new_string\": \"return a + b\"}'/>\n</tools>",
            ])
            .finish("stop"),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["Fixed."]).finish("stop"));
    let out = run(
        &env,
        "qwen2.5-coder-1.5b-instruct",
        &[
            "run",
            "fix add",
            "--mode",
            "accept-edits",
            "--output-format",
            "jsonl",
        ],
    )
    .await;
    assert_exit(&out, 0);
    let events = env.events();
    let calls = of_type(&events, "tool_call_finished");
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(calls[0]["tool"], "fs__edit_file");
    assert_eq!(calls[0]["is_error"], false, "{:?}", calls[0]);
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2, "the edit's result went back to the model");
    assert_eq!(events.last().unwrap()["answer"], "Fixed.");
}

#[tokio::test]
async fn with_tool_calls_text_the_format_is_taught_and_no_native_tools_are_sent() {
    let env = RunEnv::new().await;
    env.add_servers("tool_calls = \"text\"\n");
    std::fs::write(env.dir.path().join("hello.txt"), "hello from the file\n").unwrap();
    env.server.enqueue(
        OpenAiTurn::new()
            .text(&["I will read it.\n```json\n{\"name\": \"fs__read_file\", \"arguments\": {\"path\": \"hello.txt\"}}\n```"])
            .finish("stop"),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["It says hello."]).finish("stop"));
    let out = run(&env, "plain-model", &["run", "read hello.txt"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    for r in &sent {
        let body = r.json();
        assert!(body.get("tools").is_none(), "{body}");
        let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
        assert!(system.contains("# Calling tools"), "{system}");
        assert!(system.contains("fs__read_file"));
    }
    let text = String::from_utf8_lossy(&sent[1].body).into_owned();
    assert!(!text.contains("tool_calls"), "{text}");
    assert!(!text.contains("\"role\":\"tool\""), "{text}");
    assert!(text.contains("Result of tool call"), "{text}");
    assert!(text.contains("hello from the file"), "{text}");
}
