//! The model's thinking as an engine event (`thinking_delta`): the real `tern` against the mock
//! model speaking each provider's wire shape for it — Anthropic `thinking_delta`s, a Chat
//! Completions `reasoning_content` stream (DeepSeek / llama.cpp / vLLM), a Responses reasoning
//! summary. Thinking is shown (JSONL, the terminal folded or in full) and never becomes the
//! answer or part of the next request.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{
    RecordedRequest,
    responses::ResponsesTurn,
    script::{AnthropicTurn, OpenAiTurn},
};

const THOUGHT: [&str; 3] = [
    "The user wants ",
    "the file read;\n",
    "fs__read_file it is.",
];

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout not JSONL ({e}): {l}")))
        .collect()
}

/// What the run's thinking events said, joined, from stdout and from the events file (both).
fn thinking(events: &[Value]) -> String {
    of_type(events, "thinking_delta")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect()
}

/// Checks one provider's run: thinking reached the JSONL stream and the events file in order
/// before the answer, and neither the answer, the model_response text nor any later request
/// carries it.
fn check(out: &std::process::Output, env: &RunEnv, answer: &str, sent: &[RecordedRequest]) {
    assert_exit(out, 0);
    let stdout = jsonl(&out.stdout);
    let joined = THOUGHT.concat();
    assert_eq!(thinking(&stdout), joined, "stdout JSONL");
    let events = env.events();
    assert_eq!(thinking(&events), joined, "events file");
    assert_eq!(of_type(&events, "thinking_delta").len(), THOUGHT.len());
    let first_thought = events.iter().position(|e| e["type"] == "thinking_delta");
    let first_text = events.iter().position(|e| e["type"] == "text_delta");
    assert!(
        first_thought < first_text,
        "thinking streams before the answer"
    );
    for response in of_type(&events, "model_response") {
        let text = response["text"].as_str().unwrap_or_default();
        assert!(!text.contains("fs__read_file it is"), "{text}");
    }
    let finished = events.last().unwrap();
    assert_eq!(finished["answer"], answer);
    for request in sent {
        let body = String::from_utf8_lossy(&request.body);
        assert!(
            !body.contains("fs__read_file it is"),
            "thinking sent back: {body}"
        );
    }
}

#[tokio::test]
async fn thinking_is_an_event_on_every_provider_and_never_part_of_the_answer() {
    // Anthropic: a thinking block, then a tool call; the second request must not carry it.
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .thinking(&THOUGHT)
            .text(&["Reading."])
            .tool_use("toolu_1", "fs__read_file", &[r#"{"path":"a.txt"}"#])
            .finish("tool_use"),
    );
    env.answer("It says alpha.");
    let out = env
        .run(&["run", "read a.txt", "--output-format", "jsonl"])
        .await;
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    check(&out, &env, "It says alpha.", &sent);

    // OpenAI Chat Completions from a compatible server: `delta.reasoning_content`.
    let env = RunEnv::new().await;
    env.server.enqueue(
        OpenAiTurn::new()
            .reasoning_content(&THOUGHT)
            .text(&["Done."])
            .finish("stop"),
    );
    let mut cmd = env.command(&["run", "hi", "--output-format", "jsonl"]);
    cmd.args(["--provider", "openai", "--model", "deepseek-reasoner"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()));
    let out = cmd.output().await.unwrap();
    check(&out, &env, "Done.", &env.server.model_requests());

    // OpenAI Responses: a reasoning summary streamed as `reasoning_summary_text.delta`s.
    let env = RunEnv::new().await;
    env.add_servers("wire_api = \"responses\"\n");
    env.server.enqueue(
        ResponsesTurn::new()
            .reasoning_summary("rs_1", "gAAAA-opaque", &THOUGHT)
            .message("msg_1", &["Done."])
            .completed(),
    );
    let mut cmd = env.command(&["run", "hi", "--output-format", "jsonl"]);
    cmd.args(["--provider", "openai", "--model", "gpt-5"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-test-responses-0123456789")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()));
    let out = cmd.output().await.unwrap();
    check(&out, &env, "Done.", &env.server.model_requests());
}

#[tokio::test]
async fn headless_text_output_folds_thinking_to_one_dim_line() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .thinking(&THOUGHT)
            .text(&["The answer."])
            .finish("end_turn"),
    );
    let out = env.run(&["run", "hi"]).await;
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("✻ thinking… 9 word(s)\n"), "{stdout}");
    assert!(!stdout.contains("fs__read_file it is"), "folded: {stdout}");
    let folded = stdout.find("✻ thinking…").unwrap();
    assert!(stdout[folded..].contains("The answer."), "{stdout}");
}

#[tokio::test]
async fn the_repl_folds_thinking_and_slash_thinking_shows_it_in_full() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .thinking(&THOUGHT)
            .text(&["First answer."])
            .finish("end_turn"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .thinking(&["Second ", "thought, in full."])
            .text(&["Second answer."])
            .finish("end_turn"),
    );
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "one\r"},
        {"expect": "(/thinking shows it)"},
        {"expect": "First answer."},
        {"expect": "tern> "},
        {"send": "/thinking\r"},
        {"expect": "thinking is shown in full from now on"},
        {"expect": "fs__read_file it is."},
        {"expect": "tern> "},
        {"send": "two\r"},
        {"expect": "thought, in full."},
        {"expect": "Second answer."},
        {"expect": "tern> "},
        {"send": "/thinking\r"},
        {"expect": "thinking is folded to one line again"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let output = report["output"].as_str().unwrap_or_default().to_string();
    // Folded on the first turn: the thought's words appear only after `/thinking`.
    let toggled = output.find("thinking is shown in full").unwrap();
    assert!(
        !output[..toggled].contains("fs__read_file it is"),
        "{output}"
    );
    assert!(
        output[..toggled].contains("✻ thinking… 9 word(s)"),
        "{output}"
    );
    // The second turn streamed it under a heading, not folded.
    let second = output.find("thought, in full.").unwrap();
    assert!(output[toggled..second].contains("✻ thinking"), "{output}");
    assert!(!output[toggled..].contains("4 word(s)"), "{output}");
    // Thinking is never sent back to the model.
    for request in env.server.model_requests() {
        assert!(!String::from_utf8_lossy(&request.body).contains("in full."));
    }
}
