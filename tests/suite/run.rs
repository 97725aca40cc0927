//! `tern run` end to end: the real binary, the real built-in tool servers, and a
//! local mock model server speaking Anthropic's SSE format (and OpenAI's once). What happens
//! when something goes wrong is in `run_faults.rs`.

use serde_json::Value;
use tern_e2e::run_env::{CANARY, RunEnv, all_files, assert_exit, of_type};
use tern_model::mock::{
    RecordedRequest,
    script::{AnthropicTurn, OpenAiTurn},
};

pub(super) fn tool_results(req: &RecordedRequest) -> Vec<(String, String, bool)> {
    let body = req.json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .filter_map(|x| x["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                other => other.to_string(),
            };
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                text,
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_regression_sample_reads_edits_tests_and_summarizes() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("lib.txt"), "name = tern\nanswer = 41\n").unwrap();
    std::fs::write(
        dir.join("check.sh"),
        "if grep -q 'answer = 42' lib.txt; then echo '1 passed'; else echo '1 failed'; exit 1; fi\n",
    )
    .unwrap();
    std::fs::write(dir.join("AGENTS.md"), "Run `sh check.sh` to test.\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Let me ", "look."])
            .tool_use("toolu_1", "fs__read_file", &["{\"path\":", "\"lib.txt\"}"])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_2",
                "fs__edit_file",
                &[r#"{"path":"lib.txt","old_string":"answer = 41","new_string":"answer = 42"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_3", "shell__run", &[r#"{"command":"sh check.sh"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(100, 80, 0)
            .text(&["Fixed: `answer` is now 42 and ", "the tests pass."])
            .finish("end_turn"),
    );
    let out = env
        .run(&[
            "run",
            "fix the answer",
            "--output-format",
            "jsonl",
            "--mode",
            "accept-edits",
            "--allow",
            "shell__run(sh check.sh)",
        ])
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The file changed as asked.
    assert_eq!(
        std::fs::read_to_string(dir.join("lib.txt")).unwrap(),
        "name = tern\nanswer = 42\n"
    );

    // stdout in jsonl mode is only JSON lines, and they are the events.
    let printed: Vec<Value> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))
        })
        .collect();
    let events = env.events();
    assert_eq!(printed, events, "stdout carries exactly the events");

    // One session id threads run_started → run_finished; seq is gap-free.
    assert_eq!(events.first().unwrap()["type"], "run_started");
    assert_eq!(events.last().unwrap()["type"], "run_finished");
    let session = events[0]["session_id"].as_str().unwrap();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["session_id"], session);
        assert_eq!(e["run_id"], events[0]["run_id"]);
        assert_eq!(e["seq"], (i + 1) as u64);
    }
    let finished = events.last().unwrap();
    assert_eq!(finished["status"], "success");
    assert_eq!(finished["steps"], 4);
    assert!(
        finished["answer"]
            .as_str()
            .unwrap()
            .contains("the tests pass")
    );

    // The trace contains the diff and the test output.
    let calls = of_type(&events, "tool_call_finished");
    assert_eq!(calls.len(), 3);
    let edit = calls.iter().find(|c| c["tool"] == "fs__edit_file").unwrap();
    let diff = edit["diff"].as_str().unwrap();
    assert!(
        diff.contains("-answer = 41") && diff.contains("+answer = 42"),
        "{diff}"
    );
    let test = calls.iter().find(|c| c["tool"] == "shell__run").unwrap();
    assert!(
        test["output"].as_str().unwrap().contains("1 passed"),
        "{test}"
    );
    assert!(calls.iter().all(|c| c["is_error"] == false), "{calls:?}");
    let decisions = of_type(&events, "permission_decided");
    assert_eq!(decisions.len(), 3);

    // What tern sent: the project rules, and each result paired with its call.
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    let system = requests[0].json()["system"].to_string();
    assert!(system.contains("Run `sh check.sh` to test."), "{system}");
    for (req, id, needle) in [
        (&requests[1], "toolu_1", "answer = 41"),
        (&requests[2], "toolu_2", "+answer = 42"),
        (&requests[3], "toolu_3", "1 passed"),
    ] {
        let results = tool_results(req);
        assert_eq!(results.len(), 1, "{results:?}");
        assert_eq!(results[0].0, id);
        assert!(results[0].1.contains(needle), "{id}: {}", results[0].1);
        assert!(!results[0].2);
    }
    // Stable prefix: the system prompt and tools are the same on every request.
    let first = requests[0].json();
    for r in &requests[1..] {
        assert_eq!(r.json()["system"], first["system"]);
        assert_eq!(r.json()["tools"], first["tools"]);
    }

    // The canary key never reaches a file tern wrote.
    for f in all_files(env.home.path()) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(!text.contains(CANARY), "canary leaked into {}", f.display());
    }
}

#[tokio::test]
async fn the_openai_compatible_path_runs_a_tool_and_answers() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("hello.txt"), "hello world\n").unwrap();
    env.server.enqueue(
        OpenAiTurn::new()
            .tool_call(0, "call_1", "fs__read_file", &[r#"{"path":"hello.txt"}"#])
            .finish("tool_calls"),
    );
    env.server
        .enqueue(OpenAiTurn::new().text(&["It says hello."]).finish("stop"));
    let out = env
        .command(&[
            "run",
            "what does hello.txt say?",
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("It says hello."), "{stdout}");
    // A local OpenAI-compatible server is asked for its context window first (vLLM's
    // /models, llama.cpp's /props; ollama's /api/show only when the server is ollama); this one
    // knows none of them.
    let probes: Vec<String> = env
        .server
        .requests()
        .iter()
        .filter(|r| !r.path.ends_with("/chat/completions"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(probes, ["GET /models", "GET /props"]);
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/chat/completions");
    let second = requests[1].json();
    let msgs = second["messages"].as_array().unwrap();
    let tool_msg = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("hello world")
    );
    assert_eq!(second["model"], "local-model");
}

#[tokio::test]
async fn parallel_read_only_calls_each_get_their_paired_result() {
    let env = RunEnv::new().await;
    // The test server's read-only `rendezvous` answers `met` only when both calls are in
    // flight at once: run one after another, the first waits out its 5 s and says `alone`.
    env.add_servers(&format!(
        "[mcp_servers.meet]\ncommand = {:?}\ntrust_annotations = true\n",
        tern_e2e::bin("tern-test-server").to_string_lossy()
    ));
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.dir.path().join("b.txt"), "bravo\n").unwrap();
    let meet = r#"{"group":"g","n":2,"ms":5000}"#;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_a", "fs__read_file", &[r#"{"path":"a.txt"}"#])
            .tool_use("toolu_m1", "meet__rendezvous", &[meet])
            .tool_use("toolu_m2", "meet__rendezvous", &[meet])
            .tool_use("toolu_b", "fs__read_file", &[r#"{"path":"b.txt"}"#])
            .tool_use(
                "toolu_w",
                "fs__write_file",
                &[r#"{"path":"c.txt","content":"charlie"}"#],
            )
            .finish("tool_use"),
    );
    env.server
        .enqueue(AnthropicTurn::new().text(&["done"]).finish("end_turn"));
    let out = env
        .run(&[
            "run",
            "read both",
            "--output-format",
            "jsonl",
            "--mode",
            "accept-edits",
        ])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[1]);
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        ["toolu_a", "toolu_m1", "toolu_m2", "toolu_b", "toolu_w"],
        "results in the model's order"
    );
    assert!(
        results[0].1.contains("alpha") && results[3].1.contains("bravo"),
        "{results:?}"
    );
    assert_eq!(
        (results[1].1.as_str(), results[2].1.as_str()),
        ("met", "met"),
        "the read-only calls did not overlap in time: {results:?}"
    );
    assert!(!results[4].2, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("c.txt")).unwrap(),
        "charlie"
    );
}

#[tokio::test]
async fn continue_resumes_the_latest_session() {
    let env = RunEnv::new().await;
    env.answer("The secret word is heron.");
    let out = env.run(&["run", "remember a secret word"]).await;
    assert_eq!(out.status.code(), Some(0));
    env.answer("It was heron.");
    let out = env.run(&["run", "--continue", "what was the word?"]).await;
    assert_exit(&out, 0);
    let second = env.server.requests()[1].json();
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "{msgs:?}");
    assert!(msgs[1].to_string().contains("heron"));
    assert!(msgs[2].to_string().contains("what was the word?"));
    // Both runs carry the same session id.
    let mut sessions = std::collections::BTreeSet::new();
    for run in std::fs::read_dir(env.home.path().join("runs")).unwrap() {
        let text = std::fs::read_to_string(run.unwrap().path().join("events.jsonl")).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        sessions.insert(first["session_id"].as_str().unwrap().to_string());
    }
    assert_eq!(sessions.len(), 1);
}

#[tokio::test]
async fn a_key_in_the_goal_or_a_tool_output_is_redacted_from_every_file_tern_writes() {
    let env = RunEnv::new().await;
    std::fs::write(
        env.dir.path().join(".env.local"),
        format!("ANTHROPIC_API_KEY={CANARY}\n"),
    )
    .unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_env", "fs__read_file", &[r#"{"path":".env.local"}"#])
            .finish("tool_use"),
    );
    env.answer("Found a key; I will not repeat it.");
    let goal = format!("my key is {CANARY}, check .env.local");
    let out = env.run(&["run", &goal, "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    let files = all_files(env.home.path());
    assert!(files.iter().any(|f| f.ends_with("events.jsonl")));
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "jsonl")
                && f.parent().unwrap().ends_with("sessions"))
    );
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(!text.contains(CANARY), "canary leaked into {}", f.display());
    }
    // The model never saw the key through the tool either.
    let second = env.server.requests()[1].json();
    let results = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(!results.contains(CANARY), "{results}");
}
