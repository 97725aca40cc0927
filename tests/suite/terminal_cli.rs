//! Small terminal habits (issue 26): `tern -m NAME` / `--model NAME` at top level reaches the
//! model request, `tern completions bash | head` exits quietly, and `tern run` at a terminal
//! says which `--allow` to pass for a call it did not ask about.

use serde_json::json;
use tokio::io::AsyncReadExt;

use super::repl::drive_with;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

#[tokio::test]
async fn the_model_flag_works_at_top_level_and_after_run() {
    let env = RunEnv::new().await;
    env.answer("From the REPL.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "hi\r"},
        {"expect": "From the REPL."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &["-m", "claude-top-level"]).await;
    env.answer("From run.");
    let out = env.run(&["run", "-m", "claude-short-flag", "go"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let models: Vec<String> = env
        .server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, ["claude-top-level", "claude-short-flag"]);
    // Before a command that takes no model: a usage error that says where it goes.
    let out = env.run(&["-m", "x", "tools"]).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hint: "), "{stderr}");
}

#[tokio::test]
async fn multi_line_input_by_trailing_backslash_alt_enter_and_ctrl_j() {
    let env = RunEnv::new().await;
    env.answer("Four lines.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "one\\\r"},
        {"send": "two\u{1b}\r"},
        {"send": "three\n"},
        {"send": "four\r"},
        {"expect": "Four lines."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1, "one message, sent once");
    let body = requests[0].json();
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains(r"one\ntwo\nthree\nfour"), "{last}");
}

#[tokio::test]
async fn completions_into_a_closed_pipe_exit_quietly() {
    let mut child = tokio::process::Command::new(tern_e2e::bin("tern"))
        .args(["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).await.unwrap();
    // What `head -c 16` does: read a little, then close the pipe.
    drop(stdout);
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// `tern run` never asks, on a terminal too: the refusal says what to pass, and not that a
/// terminal is missing (there is one).
#[tokio::test]
async fn a_headless_run_on_a_terminal_says_which_allow_to_pass() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_rm", "shell__run", &[r#"{"command":"rm -rf build"}"#])
            .finish("tool_use"),
    );
    env.answer("I was not allowed to.");
    let script = json!([
        {"expect": "I was not allowed to."},
    ]);
    let report = drive_with(&env, &script, &["run", "clean up"]).await;
    let output = report["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("--allow 'shell__run(rm -rf build)'"),
        "{output}"
    );
    assert!(!output.contains("without a terminal"), "{output}");
    // The model was told the same.
    let result = env.server.requests()[1].json()["messages"].to_string();
    assert!(result.contains("a headless run asks nobody"), "{result}");
}
