//! The REPL driven through a pseudo-terminal: slash commands are answered by
//! tern without any model request; a normal line streams the model's answer.

use serde_json::{Value, json};
use tern_model::mock::script::AnthropicTurn;

use tern_e2e::run_env::{CANARY, RunEnv};

/// Runs `tern` in a pseudo-terminal through `tests/interop/pty_drive.py`,
/// following `script`; fails with the screen output if an expectation times out.
async fn drive(env: &RunEnv, script: &Value) -> Value {
    drive_with(env, script, &[]).await
}

/// [`drive`] with extra `tern` arguments.
pub(crate) async fn drive_with(env: &RunEnv, script: &Value, args: &[&str]) -> Value {
    drive_with_vars(env, script, args, &[]).await
}

/// [`drive_with`], with `vars` set in tern's environment.
pub(crate) async fn drive_with_vars(
    env: &RunEnv,
    script: &Value,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Value {
    let out = tokio::process::Command::new(tern_e2e::dep("venv/bin/python"))
        .arg(tern_e2e::workspace_root().join("tests/interop/pty_drive.py"))
        .arg(script.to_string())
        .arg("--")
        .arg(tern_e2e::bin("tern"))
        .args(args)
        .current_dir(env.dir.path())
        .env("TERN_HOME", env.home.path())
        .env("ANTHROPIC_API_KEY", CANARY)
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env("TERM", "xterm")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .envs(vars.iter().copied())
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success(),
        "{}\nscreen:\n{}\noutput:\n{}",
        report["error"],
        report["screen"].as_str().unwrap_or(""),
        report["output"]
    );
    report
}

#[tokio::test]
async fn slash_commands_never_reach_the_model_and_a_line_streams_an_answer() {
    let env = RunEnv::new().await;
    // `/tools` is typed at the first prompt, which does not wait for optional servers: on a
    // loaded machine fs could still be starting.
    env.add_servers("[mcp_servers.fs]\nrequired = true\n");
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Hello ", "from the ", "model."])
            .finish("end_turn"),
    );
    let script = json!([
        {"expect": "tern> "},
        {"send": "/help\r"},
        {"expect": "/cost"},
        {"expect": "tern> "},
        {"send": "/tools\r"},
        {"expect": "fs__read_file"},
        {"expect": "tern> "},
        {"send": "say hi\r"},
        {"expect": "Hello from the model."},
        {"expect": "tern> "},
        {"send": "/cost\r"},
        {"expect": "total: 1 model call(s)"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive(&env, &script).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1, "only the normal line reaches the model");
    let body = requests[0].json();
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains("say hi"), "{last}");
    assert!(!body["messages"].to_string().contains("/help"));
    // The session was recorded, and a run finished.
    let events = env.events();
    assert_eq!(events.last().unwrap()["type"], "run_finished");
}

#[tokio::test]
async fn mcp_prompts_expand_and_approvals_are_asked_inline() {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.ts]\ncommand = {:?}\nrequired = true\n",
        tern_e2e::bin("tern-test-server").to_string_lossy()
    ));
    // Turn 1 (from the prompt): the model asks to run a command that needs approval.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_sh",
                "shell__run",
                &[r#"{"command":"echo approved > mark.txt"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Greeted and marked.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "/help\r"},
        {"expect": "/ts:greet name"},
        {"expect": "tern> "},
        {"send": "/ts:greet Ada\r"},
        {"expect": "Esc cancels the turn"},
        // The call waits for the answer: the question must stay on screen (the spinner of
        // the waiting call must not draw over it).
        {"screen": "don't ask again for: `shell__run(echo approved > mark.txt)`", "hold": 1.5},
        {"screen": "2. Yes, and don't ask again in this project (.tern/config.toml)"},
        {"screen": "› 1. Yes"},
        // Enter takes the highlighted default.
        {"send": "\r"},
        {"expect": "Greeted and marked."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive(&env, &script).await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json()["messages"].to_string();
    assert!(first.contains("Please greet Ada warmly."), "{first}");
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("mark.txt"))
            .unwrap()
            .trim(),
        "approved"
    );
    let events = env.events();
    let decision = events
        .iter()
        .find(|e| e["type"] == "permission_decided")
        .unwrap();
    assert_eq!(decision["decision"], "allow");
    assert_eq!(decision["rule"], "user:once");
}

#[tokio::test]
async fn ctrl_c_cancels_the_running_turn_and_twice_at_the_prompt_exits() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_slow", "shell__run", &[r#"{"command":"sleep 120"}"#])
            .finish("tool_use"),
    );
    let script = json!([
        {"expect": "tern> "},
        {"send": "wait for it\r"},
        {"expect": "(sleep 120)"},
        {"expect": "elapsed"},
        {"send": "\u{3}"},
        {"expect": "(cancelled)"},
        {"expect": "tern> "},
        {"send": "\u{3}"},
        {"expect": "Ctrl-C again to exit"},
        {"send": "\u{3}"},
    ]);
    let started = std::time::Instant::now();
    let report = drive_with(&env, &script, &["--mode", "yolo"]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let events = env.events();
    let call = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .expect("the cancelled call still gets its result");
    assert_eq!(call["is_error"], true);
    assert_eq!(call["error_type"], "cancelled");
    assert_eq!(events.last().unwrap()["type"], "run_finished");
    // Only one model request: the cancelled turn did not go on.
    assert_eq!(env.server.requests().len(), 1);
}

#[tokio::test]
async fn context_shows_where_the_window_goes_and_compact_summarizes_with_a_focus() {
    let env = RunEnv::new().await;
    let big: String = (0..3_000).map(|i| format!("word{i} ")).collect();
    std::fs::write(env.dir.path().join("big.txt"), big).unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r", "fs__read_file", &[r#"{"path":"big.txt"}"#])
            .finish("tool_use"),
    );
    env.answer("Read it.");
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r2", "fs__list_dir", &["{}"])
            .finish("tool_use"),
    );
    env.answer("Listed it.");
    env.server.respond_when(
        |r| r.body.windows(12).any(|w| w == b"tern:compact"),
        |_| {
            AnthropicTurn::new()
                .text(&["Goal: read big.txt. Files read: big.txt."])
                .finish("end_turn")
        },
    );
    let script = json!([
        {"expect": "tern> "},
        {"send": "read big.txt\r"},
        {"expect": "Read it."},
        {"expect": "tern> "},
        {"send": "now list the directory\r"},
        {"expect": "Listed it."},
        {"expect": "tern> "},
        {"send": "/context\r"},
        {"expect": "reserved for the answer"},
        {"expect": "window: 200.0k tokens"},
        {"expect": "tern> "},
        {"send": "/compact the word list\r"},
        {"expect": "[context manual"},
        {"expect": "free"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive(&env, &script).await;
    let output = report["output"].as_str().unwrap();
    assert!(output.contains("tool output"), "{output}");
    let summary = env
        .server
        .requests()
        .into_iter()
        .find(|r| r.body.windows(12).any(|w| w == b"tern:compact"))
        .expect("no summary was asked for");
    let asked = String::from_utf8_lossy(&summary.body).into_owned();
    assert!(
        asked.contains("Pay particular attention to: the word list"),
        "{asked}"
    );
    let events = env.events();
    let compactions: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert!(compactions.iter().all(|c| c["reason"] == "manual"));
    assert!(
        compactions.iter().any(|c| c["stage"] == "summarize"),
        "{compactions:?}"
    );
    // The session holds the compacted state.
    let sessions = env.home.path().join("sessions");
    // The transcript, not the todo list, the turn log or the meta file kept beside it.
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("no transcript saved");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.lines().last().unwrap().starts_with("{\"compacted\":"),
        "{text}"
    );
}
