//! `tern run` when something goes wrong: step limits, repeated and cut-off calls, denials, model
//! errors, Ctrl-C, a server crashing mid-run or failing to start — the run says what happened
//! and always finishes.

use std::time::Duration;

use serde_json::json;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type, pids_with};
use tern_model::mock::{MockResponse, script::AnthropicTurn};

use super::run::tool_results;

#[tokio::test]
async fn max_steps_ends_the_run_with_exit_1() {
    let env = RunEnv::new().await;
    for i in 0..2 {
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use(
                    &format!("toolu_{i}"),
                    "fs__list_dir",
                    &[&format!("{{\"path\":\".\",\"n\":{i}}}")],
                )
                .finish("tool_use"),
        );
    }
    let out = env
        .run(&[
            "run",
            "loop",
            "--max-steps",
            "2",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_eq!(out.status.code(), Some(1));
    let events = env.events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["status"], "max_steps");
    assert_eq!(last["steps"], 2);
    assert_eq!(env.server.requests().len(), 2);
}

#[tokio::test]
async fn the_same_call_three_times_gets_an_error_instead_of_running() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "a\n").unwrap();
    for i in 0..3 {
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use(
                    &format!("toolu_{i}"),
                    "fs__read_file",
                    &[r#"{"path":"a.txt"}"#],
                )
                .finish("tool_use"),
        );
    }
    env.server
        .enqueue(AnthropicTurn::new().text(&["ok"]).finish("end_turn"));
    let out = env
        .run(&["run", "read a", "--output-format", "jsonl"])
        .await;
    assert_eq!(out.status.code(), Some(0));
    let events = env.events();
    let calls = of_type(&events, "tool_call_finished");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["is_error"], false);
    assert_eq!(calls[1]["is_error"], false);
    assert_eq!(calls[2]["is_error"], true);
    assert_eq!(calls[2]["error_type"], "repeated_call");
    // Only two calls reached the gateway (and so the audit log).
    assert_eq!(of_type(&events, "audit").len(), 2);
    let results = tool_results(&env.server.requests()[3]);
    assert!(results[0].1.contains("3 times in a row"), "{results:?}");
    assert!(results[0].2);
}

#[tokio::test]
async fn a_tool_call_cut_by_max_tokens_is_not_run_and_the_model_is_told() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Writing the file."])
            .tool_use_unfinished(
                "toolu_cut",
                "fs__write_file",
                &[r#"{"path":"x.txt","content":"par"#],
            )
            .finish("max_tokens"),
    );
    env.answer("I will stop here.");
    let out = env
        .run(&[
            "run",
            "write x",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !env.dir.path().join("x.txt").exists(),
        "a truncated call must not run"
    );
    let events = env.events();
    assert!(of_type(&events, "tool_call_started").is_empty());
    let second = env.server.requests()[1].json();
    let text = second["messages"].to_string();
    assert!(text.contains("was not run"), "{text}");
    assert!(
        !text.contains("toolu_cut\",\"name"),
        "no tool_use for the cut call: {text}"
    );
}

#[tokio::test]
async fn a_denied_call_in_headless_mode_says_which_allow_rule_would_permit_it() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_rm", "shell__run", &[r#"{"command":"rm -rf build"}"#])
            .finish("tool_use"),
    );
    env.answer("I was not allowed to.");
    let out = env.run(&["run", "clean", "--output-format", "jsonl"]).await;
    assert_eq!(out.status.code(), Some(0));
    let events = env.events();
    let call = of_type(&events, "tool_call_finished")[0].clone();
    assert_eq!(call["is_error"], true);
    assert_eq!(call["error_type"], "denied");
    let decision = of_type(&events, "permission_decided")[0].clone();
    assert_eq!(decision["decision"], "deny");
    let results = tool_results(&env.server.requests()[1]);
    assert!(results[0].1.contains("--allow"), "{results:?}");
    assert!(results[0].2);
}

#[tokio::test]
async fn a_model_error_is_reported_verbatim_and_the_run_still_finishes() {
    let env = RunEnv::new().await;
    env.server.enqueue(MockResponse::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: roles must alternate"}}),
    ).header("request-id", "req_test_123"));
    let out = env.run(&["run", "hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    let events = env.events();
    let last = events.last().unwrap();
    assert_eq!(last["status"], "error");
    let err = last["error"].as_str().unwrap();
    assert!(
        err.contains("messages: roles must alternate") && err.contains("req_test_123"),
        "{err}"
    );
}

/// A refused key (401) says which variable the key came from and which endpoint it went to:
/// the two things to check (issue 26: "401 says which key variable and base URL were used").
#[tokio::test]
async fn a_refused_key_names_the_variable_it_came_from_and_the_endpoint() {
    // Anthropic's 401 body (docs.anthropic.com/en/api/errors).
    let env = RunEnv::new().await;
    env.server.enqueue(MockResponse::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let out = env.run(&["run", "hi"]).await;
    assert_exit(&out, 1);
    let err = env.events().last().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(err.contains("invalid x-api-key"), "{err}");
    assert!(
        err.contains("hint: the key came from ANTHROPIC_API_KEY and was sent to ")
            && err.contains(&env.server.url()),
        "{err}"
    );
    // And the person reading the terminal sees it.
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("hint: the key came from ANTHROPIC_API_KEY"),
        "{shown}"
    );

    // OpenAI's (platform.openai.com/docs/guides/error-codes), the key in a variable of the
    // user's naming.
    let env = RunEnv::new().await;
    env.add_servers("api_key_env = \"MY_PROXY_KEY\"\n");
    env.server.enqueue(MockResponse::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided: sk-…", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
    ));
    let base = format!("{}/v1", env.server.url());
    let mut cmd = env.command(&["run", "hi", "--provider", "openai", "--model", "gpt-4o"]);
    cmd.env_remove("ANTHROPIC_API_KEY")
        .env("MY_PROXY_KEY", "sk-proxy-test")
        .env("OPENAI_BASE_URL", &base);
    let out = cmd.output().await.unwrap();
    assert_exit(&out, 1);
    let err = env.events().last().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&format!(
            "hint: the key came from MY_PROXY_KEY and was sent to {base}"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn ctrl_c_during_a_shell_tool_cancels_it_and_finishes_the_run() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_sleep",
                "shell__run",
                &[r#"{"command":"sleep 314159 & touch started; sleep 271828"}"#],
            )
            .finish("tool_use"),
    );
    let child = env
        .command(&[
            "run",
            "wait a long time",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The command may run in a PID namespace of its own, where `$!` means nothing out here:
    // find its processes by their unusual arguments instead.
    let dir = env.dir.path().to_path_buf();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !(dir.join("started").exists()
        && !pids_with("314159").is_empty()
        && !pids_with("271828").is_empty())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the shell command never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let started = std::time::Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("tern did not exit after Ctrl-C")
        .unwrap();
    assert_exit(&out, 130);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );

    let events = env.events();
    let last = events.last().unwrap();
    assert_eq!(
        last["type"], "run_finished",
        "run_finished is the last line"
    );
    assert_eq!(last["status"], "cancelled");
    let finished = of_type(&events, "tool_call_finished");
    assert_eq!(finished.len(), 1, "exactly one result for the call");
    assert_eq!(finished[0]["is_error"], true);
    // No process of the command is left.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pids_with("314159").is_empty() || !pids_with("271828").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "left behind: background {:?}, foreground {:?}",
            pids_with("314159"),
            pids_with("271828")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_server_crashing_mid_run_gives_an_error_result_and_the_run_goes_on() {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.flaky]\ncommand = {:?}\n",
        tern_e2e::bin("tern-test-server").to_string_lossy()
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_c", "flaky__crash", &["{}"])
            .finish("tool_use"),
    );
    env.answer("The server crashed.");
    let out = env
        .run(&[
            "run",
            "crash it",
            "--output-format",
            "jsonl",
            "--allow",
            "flaky__crash",
        ])
        .await;
    assert_exit(&out, 0);
    let events = env.events();
    let call = of_type(&events, "tool_call_finished")[0].clone();
    assert_eq!(call["is_error"], true);
    assert_eq!(call["error_type"], "server_crashed");
    assert!(
        call["output"].as_str().unwrap().contains("dying mid-call"),
        "{call}"
    );
    assert!(
        of_type(&events, "server_failed")
            .iter()
            .any(|e| e["server"] == "flaky" && e["will_restart"] == true),
        "the crash is reported"
    );
    assert_eq!(events.last().unwrap()["status"], "success");
}

#[tokio::test]
async fn calling_a_tool_of_a_server_that_failed_to_start_says_which_and_why() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.ghost]\ncommand = \"/nonexistent/bin/mcp-ghost\"\n");
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_g", "ghost__lookup", &[r#"{"q":"x"}"#])
            .finish("tool_use"),
    );
    env.answer("The ghost server is down.");
    let out = env
        .run(&["run", "use ghost", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(is_error);
    assert!(
        text.contains("server `ghost` failed to start") && text.contains("mcp-ghost"),
        "{text}"
    );
    assert!(!text.contains("did you mean"), "{text}");
    let events = env.events();
    let finished = of_type(&events, "tool_call_finished");
    assert_eq!(finished[0]["error_type"], "server_unavailable");
}
