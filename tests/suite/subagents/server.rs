//! `tern serve agent` under another MCP client: the official Python SDK hands it goals, with
//! its own roots, and gets the answer, the report, progress — and can cancel; SIGTERM ends it
//! cleanly.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};
use tern_e2e::{
    bin, dep,
    run_env::{CANARY, RunEnv},
    workspace_root,
};
use tern_model::mock::script::AnthropicTurn;

use super::{messages, only, runs, system_of, tools_of};

/// Runs `tests/interop/agent_client.py` with `plan` against `tern ARGS` started in `cwd`, with
/// the environment of `env` (its `$TERN_HOME`, and the mock model as the Anthropic API).
async fn agent_client(env: &RunEnv, plan: Value, args: &[&str], cwd: &Path) -> Value {
    let out = tokio::process::Command::new(dep("venv/bin/python"))
        .arg(workspace_root().join("tests/interop/agent_client.py"))
        .arg(plan.to_string())
        .arg("--")
        .arg(bin("tern"))
        .args(args)
        .current_dir(cwd)
        .env("TERN_HOME", env.home.path())
        .env("ANTHROPIC_API_KEY", CANARY)
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TERN_LOG")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the Python client did not finish in 120 s")
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn the_python_sdk_hands_tern_a_goal_and_gets_the_answer_the_report_and_progress() {
    let env = RunEnv::new().await;
    let project = env.dir.path().canonicalize().unwrap();
    std::fs::write(project.join("notes.txt"), "one\nthe needle\nthree\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("t_grep", "fs__grep", &[r#"{"pattern":"needle"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("t_read", "fs__read_file", &[r#"{"path":"notes.txt"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(100, 0, 0)
            .text(&["The needle is in notes.txt:2."])
            .finish("end_turn"),
    );
    // The server runs elsewhere: where it works comes from the client's roots.
    let elsewhere = tempfile::tempdir().unwrap();
    let report = agent_client(
        &env,
        json!({"roots": [project], "calls": [
            {"arguments": {"goal": "Where is the needle?", "profile": "explore"}},
            {"arguments": {"goal": "Look around.", "cwd": "/"}},
            {"arguments": {"goal": "Look around.", "profile": "nope"}},
        ]}),
        &["serve", "agent"],
        elsewhere.path(),
    )
    .await;

    // What the client sees of the tool: profiles in the description, honest annotations,
    // the declared output.
    assert_eq!(report["server_info"]["name"], "tern-agent", "{report}");
    let tools = report["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    let run = &tools[0];
    assert_eq!(run["name"], "run");
    assert_eq!(run["annotations"]["readOnlyHint"], true, "{run}");
    assert_eq!(run["annotations"]["destructiveHint"], false, "{run}");
    let description = run["description"].as_str().unwrap();
    assert!(
        description.contains("- explore: Read-only investigation")
            && description.contains("- review: Read-only code review")
            && description.contains("read-only"),
        "{description}"
    );
    assert_eq!(
        run["inputSchema"]["properties"]["profile"]["enum"],
        json!(["explore", "review"])
    );
    assert!(
        run["outputSchema"]["required"]
            .as_array()
            .unwrap()
            .contains(&json!("run_id")),
        "{run}"
    );

    // The answer, the report, the tokens.
    let call = &report["calls"][0];
    let result = &call["result"];
    assert_ne!(result["isError"], true, "{result}");
    let structured = &result["structuredContent"];
    let run_id = structured["run_id"].as_str().unwrap();
    assert!(
        text(result).starts_with("The needle is in notes.txt:2.\n\n[sub-agent run ")
            && text(result).contains(run_id),
        "{result}"
    );
    assert_eq!(structured["status"], "success");
    assert_eq!(structured["answer"], "The needle is in notes.txt:2.");
    assert_eq!(structured["profile"], "explore");
    assert_eq!(structured["steps"], 3);
    assert_eq!(structured["cwd"], project.to_string_lossy().as_ref());
    let usage = &result["_meta"]["tern/usage"];
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cost_usd",
    ] {
        assert_eq!(usage[key], structured[key], "{key}: {result}");
    }

    // One progress notification per tool call, naming the step and the tool.
    let progress = call["progress"].as_array().unwrap();
    assert_eq!(progress.len(), 2, "{progress:?}");
    assert!(
        progress[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("step 1: fs__grep "),
        "{progress:?}"
    );
    assert!(
        progress[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("step 2: fs__read_file "),
        "{progress:?}"
    );
    assert!(progress[1]["progress"].as_f64() > progress[0]["progress"].as_f64());

    // The sub-run is an ordinary run: its events, in the client's root, its totals reported.
    let all = runs(env.home.path());
    assert_eq!(all.len(), 1, "the refused calls started no run");
    let (id, events) = &all[0];
    assert_eq!(id, run_id);
    let started = only(events, "run_started");
    assert_eq!(started["cwd"], project.to_string_lossy().as_ref());
    assert!(started.get("parent_run_id").is_none(), "{started}");
    let finished = only(events, "run_finished");
    assert_eq!(finished["status"], "success");
    // Its tools worked in the client's root, not where the server was started.
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(results.len(), 2);
    for (r, found) in results.iter().zip([
        format!("{}/notes.txt", project.display()),
        "the needle".to_string(),
    ]) {
        assert_eq!(r["is_error"], false, "{r}");
        assert!(r["output"].as_str().unwrap().contains(&found), "{r}");
    }
    let own: u64 = events
        .iter()
        .filter(|e| e["type"] == "model_response")
        .map(|e| e["input_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(structured["input_tokens"], own);
    assert_eq!(structured["input_tokens"], finished["input_tokens"]);
    assert_eq!(structured["cost_usd"], finished["cost_usd"]);

    // The profile shaped the run: its instructions, only its tools.
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(messages(&requests[0]), 1);
    assert!(
        system_of(&requests[0]).contains("You are a sub-agent started to investigate"),
        "{}",
        system_of(&requests[0])
    );
    let mut offered = tools_of(&requests[0]);
    offered.sort();
    assert_eq!(
        offered,
        ["fs__glob", "fs__grep", "fs__list_dir", "fs__read_file"]
    );

    // Refusals a model can act on, before any run starts.
    let outside = &report["calls"][1]["result"];
    assert_eq!(outside["isError"], true);
    assert!(
        text(outside).contains("is outside the roots this server may work in"),
        "{outside}"
    );
    let unknown = &report["calls"][2]["result"];
    assert_eq!(unknown["isError"], true);
    assert!(
        text(unknown).contains("no agent profile `nope` (profiles: explore, review)"),
        "{unknown}"
    );
}

#[tokio::test]
async fn cancelling_the_call_stops_the_sub_agent_its_servers_and_its_commands() {
    let env = RunEnv::new().await;
    let project = env.dir.path().canonicalize().unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("t_sleep", "shell__run", &[r#"{"command":"sleep 314159"}"#])
            .finish("tool_use"),
    );
    let root = project.to_string_lossy().into_owned();
    let elsewhere = tempfile::tempdir().unwrap();
    // Not read-only: this server's sub-runs ask, and the rule the server was given (as for any
    // tern command) allows the command; asks would be denials.
    let report = agent_client(
        &env,
        json!({"roots": null, "marker": root, "calls": [
            {"arguments": {"goal": "Wait a long time."}, "cancel_after_progress": true,
             "wait_for_process": "sleep 314159"},
        ]}),
        &[
            "serve",
            "agent",
            "--root",
            &root,
            "--mode",
            "default",
            "--allow",
            "shell__run(sleep *)",
        ],
        elsewhere.path(),
    )
    .await;
    assert_eq!(report["tools"][0]["annotations"]["readOnlyHint"], false);
    let call = &report["calls"][0];
    assert_eq!(call["cancelled"], true, "{call}");
    assert!(
        call["children_running"].as_u64().unwrap() >= 1,
        "the sub-run's servers were running: {call}"
    );
    assert_eq!(
        call["children_after"], 0,
        "no server of the sub-run is left: {call}"
    );
    assert_eq!(
        call["process_after"], 0,
        "the sub-run's command was killed: {call}"
    );
    let all = runs(env.home.path());
    assert_eq!(all.len(), 1);
    let (_, events) = &all[0];
    assert_eq!(only(events, "run_started")["cwd"], root.as_str());
    let decided = only(events, "permission_decided");
    assert_eq!(decided["decision"], "allow", "{decided}");
    let sleep = only(events, "tool_call_finished");
    assert_eq!(sleep["is_error"], true, "{sleep}");
    assert_eq!(sleep["error_type"], "cancelled", "{sleep}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished", "{last}");
    assert_eq!(last["status"], "cancelled", "{last}");
}

#[tokio::test]
async fn a_sub_run_stops_at_its_token_budget_and_at_the_steps_the_call_allows() {
    let env = RunEnv::new().await;
    let project = env.dir.path().canonicalize().unwrap();
    // Each scripted model turn reports 10 prompt and 42 output tokens.
    for id in ["t1", "t2", "t3"] {
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use(id, "fs__list_dir", &["{}"])
                .finish("tool_use"),
        );
    }
    let root = project.to_string_lossy().into_owned();
    let report = agent_client(
        &env,
        json!({"roots": null, "calls": [
            {"arguments": {"goal": "Keep looking."}},
            {"arguments": {"goal": "Look once.", "max_steps": 1}},
        ]}),
        &["serve", "agent", "--root", &root, "--token-budget", "60"],
        &project,
    )
    .await;
    let budget = &report["calls"][0]["result"];
    assert_eq!(budget["isError"], true, "{budget}");
    let structured = &budget["structuredContent"];
    assert_eq!(structured["status"], "token_budget", "{budget}");
    assert_eq!(structured["steps"], 2);
    assert_eq!(
        structured["error"],
        "stopped after using 104 tokens of its token budget of 60"
    );
    assert!(
        text(budget).starts_with("The sub-agent stopped without an answer (token_budget)"),
        "{budget}"
    );
    let steps = &report["calls"][1]["result"];
    assert_eq!(steps["isError"], true, "{steps}");
    assert_eq!(steps["structuredContent"]["status"], "max_steps", "{steps}");
    assert_eq!(steps["structuredContent"]["steps"], 1);
    assert_eq!(env.server.model_requests().len(), 3);
    // Both runs wrote their end, with the reason.
    let all = runs(env.home.path());
    assert_eq!(all.len(), 2);
    let ends: Vec<(String, String)> = all
        .iter()
        .map(|(_, e)| {
            let f = only(e, "run_finished");
            (
                f["status"].as_str().unwrap().to_string(),
                f["error"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert!(
        ends.contains(&(
            "error".into(),
            "stopped after using 104 tokens of its token budget of 60".into()
        )),
        "{ends:?}"
    );
    assert!(ends.iter().any(|(s, _)| s == "max_steps"), "{ends:?}");
}

/// SIGTERM to `tern serve agent` (a client shutting it down) ends it cleanly: the running
/// sub-run is cancelled, writes its `run_finished`, and leaves no server or command behind.
#[tokio::test]
async fn sigterm_to_the_agent_server_cancels_its_runs_and_leaves_nothing_behind() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let env = RunEnv::new().await;
    let project = env.dir.path().canonicalize().unwrap();
    // The command line of `sleep` as /proc shows it is `sleep\0271828`: it is looked for by
    // its argument.
    let marker = "271828";
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "t_sleep",
                "shell__run",
                &[&json!({"command": "sleep 271828"}).to_string()],
            )
            .finish("tool_use"),
    );
    let root = project.to_string_lossy().into_owned();
    let mut server = tokio::process::Command::new(bin("tern"))
        .args(["serve", "agent", "--root", &root, "--mode", "default"])
        .args(["--allow", "shell__run(sleep *)"])
        .current_dir(&project)
        .env("TERN_HOME", env.home.path())
        .env("ANTHROPIC_API_KEY", CANARY)
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap()).lines();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "run", "arguments": {"goal": "Wait a long time."}}}),
    ] {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    let first = stdout.next_line().await.unwrap().unwrap();
    assert!(first.contains("\"id\":1"), "{first}");
    let started = std::time::Instant::now();
    while tern_e2e::run_env::pids_with(marker).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the sub-run's command never started: {:?}",
            runs(env.home.path())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = server.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), server.wait())
        .await
        .expect("the agent server did not exit within 30 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let started = std::time::Instant::now();
    while !tern_e2e::run_env::pids_with(marker).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sub-run's command outlived the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all = runs(env.home.path());
    assert_eq!(all.len(), 1);
    let (_, events) = &all[0];
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished", "{last}");
    assert_eq!(last["status"], "cancelled", "{last}");
    drop(stdin);
}
