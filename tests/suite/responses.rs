//! `tern run` on OpenAI's Responses API (`[model] wire_api = "responses"`, issue 23 item 2): the
//! real binary and built-in servers against the mock's `/v1/responses`, which streams the
//! documented event sequence (`tern_model::mock::responses`). Text, a tool call, parallel calls,
//! reasoning items carried to the next request, and a refusal for length.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{
    RecordedRequest,
    responses::{ResponsesTurn, overflow_error},
};

/// A RunEnv whose `[model]` speaks the Responses API (plus `extra` model keys).
async fn env_with(extra: &str) -> RunEnv {
    let env = RunEnv::new().await;
    env.add_servers(&format!("wire_api = \"responses\"\n{extra}"));
    env
}

async fn run(env: &RunEnv, args: &[&str]) -> std::process::Output {
    let mut out = env.command(args);
    out.args(["--provider", "openai", "--model", "gpt-5"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-test-responses-0123456789")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()));
    tokio::time::timeout(std::time::Duration::from_secs(120), out.output())
        .await
        .expect("tern run did not finish in 120 s")
        .unwrap()
}

fn input(req: &RecordedRequest) -> Vec<Value> {
    req.json()["input"].as_array().cloned().unwrap_or_default()
}

fn outputs(req: &RecordedRequest) -> Vec<(String, String)> {
    input(req)
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| {
            (
                i["call_id"].as_str().unwrap_or_default().to_owned(),
                i["output"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_text_answer_over_responses_is_a_success() {
    let env = env_with("").await;
    env.server.enqueue(
        ResponsesTurn::with_usage(1200, 1024, 7)
            .message("msg_1", &["Hello ", "from Responses."])
            .completed(),
    );
    let out = run(&env, &["run", "say hello", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/responses");
    assert_eq!(
        sent[0].header("authorization"),
        Some("Bearer sk-test-responses-0123456789")
    );
    let body = sent[0].json();
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert!(body["instructions"].as_str().unwrap().contains("tern"));
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "function" && t["name"] == "fs__read_file")
    );
    let events = env.events();
    let finished = events.last().unwrap();
    assert_eq!(finished["status"], "success");
    assert_eq!(finished["answer"], "Hello from Responses.");
    let response = &of_type(&events, "model_response")[0];
    assert_eq!(response["cache_read_tokens"], 1024);
    assert_eq!(response["input_tokens"], 176);
}

#[tokio::test]
async fn a_tool_call_runs_and_its_output_goes_back_as_function_call_output() {
    let env = env_with("").await;
    std::fs::write(env.dir.path().join("notes.txt"), "the answer is 42\n").unwrap();
    env.server.enqueue(
        ResponsesTurn::new()
            .function_call(
                "fc_1",
                "call_read",
                "fs__read_file",
                &["{\"path\":", "\"notes.txt\"}"],
            )
            .completed(),
    );
    env.server.enqueue(
        ResponsesTurn::new()
            .message("msg_2", &["It is 42."])
            .completed(),
    );
    let out = run(&env, &["run", "what is the answer?"]).await;
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("It is 42."));
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let items = input(&sent[1]);
    let call = items
        .iter()
        .find(|i| i["type"] == "function_call")
        .expect("the call is echoed back");
    assert_eq!(call["call_id"], "call_read");
    assert_eq!(call["name"], "fs__read_file");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"path": "notes.txt"})
    );
    let results = outputs(&sent[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_read");
    assert!(
        results[0].1.contains("the answer is 42"),
        "{}",
        results[0].1
    );
}

#[tokio::test]
async fn parallel_calls_each_get_their_output_in_call_order() {
    let env = env_with("").await;
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.dir.path().join("b.txt"), "bravo\n").unwrap();
    env.server.enqueue(
        ResponsesTurn::new()
            .function_call("fc_a", "call_a", "fs__read_file", &["{\"path\":\"a.txt\"}"])
            .function_call("fc_b", "call_b", "fs__read_file", &["{\"path\":\"b.txt\"}"])
            .completed(),
    );
    env.server.enqueue(
        ResponsesTurn::new()
            .message("m", &["Both read."])
            .completed(),
    );
    let out = run(&env, &["run", "read both", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    let results = outputs(&sent[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "call_a");
    assert!(results[0].1.contains("alpha"));
    assert_eq!(results[1].0, "call_b");
    assert!(results[1].1.contains("bravo"));
    // Both calls come before both outputs (the model's turn, then the results).
    let kinds: Vec<String> = input(&sent[1])
        .iter()
        .map(|i| i["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    let tail: Vec<&str> = kinds
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert_eq!(of_type(&env.events(), "tool_call_finished").len(), 2);
}

#[tokio::test]
async fn reasoning_items_are_sent_back_before_the_calls_they_led_to() {
    let env = env_with("").await;
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    env.server.enqueue(
        ResponsesTurn::new()
            .reasoning("rs_1", "gAAAAB-encrypted-reasoning-1")
            .function_call("fc_a", "call_a", "fs__read_file", &["{\"path\":\"a.txt\"}"])
            .completed(),
    );
    env.server.enqueue(
        ResponsesTurn::new()
            .reasoning("rs_2", "gAAAAB-encrypted-reasoning-2")
            .message("m", &["Read it."])
            .completed(),
    );
    env.server.enqueue(
        ResponsesTurn::new()
            .message("m2", &["Still here."])
            .completed(),
    );
    let out = run(&env, &["run", "read a.txt", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let items = input(&sent[1]);
    let at = |t: &str| items.iter().position(|i| i["type"] == t).unwrap();
    let reasoning = &items[at("reasoning")];
    assert_eq!(
        reasoning["encrypted_content"],
        "gAAAAB-encrypted-reasoning-1"
    );
    assert!(reasoning.get("id").is_none(), "{reasoning}");
    assert!(at("reasoning") < at("function_call"));
    assert!(at("function_call") < at("function_call_output"));

    // The session keeps them: continuing it sends both turns' reasoning back.
    let out = run(&env, &["run", "and now?", "--continue"]).await;
    assert_exit(&out, 0);
    let last = env.server.model_requests().pop().unwrap();
    let text = String::from_utf8_lossy(&last.body).into_owned();
    assert!(text.contains("gAAAAB-encrypted-reasoning-1"), "{text}");
    assert!(text.contains("gAAAAB-encrypted-reasoning-2"), "{text}");
}

#[tokio::test]
async fn a_refusal_for_length_cuts_the_newest_result_and_the_retry_succeeds() {
    let env = env_with("").await;
    // A result far larger than the rest of the request; OpenAI's refusal names no numbers.
    let big: String = (0..4000)
        .map(|i| format!("line {i} of a long log\n"))
        .collect();
    std::fs::write(env.dir.path().join("big.log"), &big).unwrap();
    env.add_servers("wire_api = \"responses\"\n[mcp_servers.fs]\nmax_output_chars = 200000\n");
    env.server.enqueue(
        ResponsesTurn::new()
            .function_call(
                "fc_1",
                "call_big",
                "fs__read_file",
                &["{\"path\":\"big.log\"}"],
            )
            .completed(),
    );
    env.server.enqueue(overflow_error());
    env.server.enqueue(
        ResponsesTurn::new()
            .message("m", &["The log is long."])
            .completed(),
    );
    let out = run(
        &env,
        &["run", "summarize big.log", "--output-format", "jsonl"],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 3, "the refused step is sent again once");
    let (refused, retried) = (&sent[1], &sent[2]);
    assert!(
        retried.body.len() < refused.body.len() * 3 / 4,
        "the retry is not shorter: {} vs {} bytes",
        retried.body.len(),
        refused.body.len()
    );
    let result = &outputs(retried)[0].1;
    assert!(result.contains("line 0 of a long log"), "head kept");
    assert!(result.contains("line 3999 of a long log"), "tail kept");
    assert!(
        result.contains("cut to fit the model's context window"),
        "{result}"
    );
    // The whole of it is saved in the run's spill directory, outside the workspace: the model's
    // tools cannot read it, so its path is not offered (issue 26, item 7).
    assert!(result.contains("your tools cannot read it"), "{result}");
    assert!(!result.contains("/spill/"), "{result}");
    let run = std::fs::read_dir(env.home.path().join("runs"))
        .unwrap()
        .flatten()
        .find(|d| d.path().join("spill").is_dir())
        .expect("a run with a spill directory");
    let spilled: String = std::fs::read_dir(run.path().join("spill"))
        .unwrap()
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap())
        .collect();
    assert!(spilled.contains("line 2000 of a long log"));
    assert_eq!(env.events().last().unwrap()["status"], "success");
}
