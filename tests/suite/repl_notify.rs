//! Notifications in the raw PTY bytes (issue 26, item 5): OSC 9 on a terminal that shows
//! them (here WezTerm, by `TERM_PROGRAM`) when an approval waits and when a turn longer than
//! `[ui] notify_after_sec` ends; nothing with `[ui] notify = false`.

use serde_json::{Value, json};
use tern_model::mock::script::AnthropicTurn;

use tern_e2e::run_env::{CANARY, RunEnv};

/// Runs `tern` in a pseudo-terminal with `TERM_PROGRAM=WezTerm`; returns the raw output.
async fn drive(env: &RunEnv, script: &Value) -> String {
    let out = tokio::process::Command::new(tern_e2e::dep("venv/bin/python"))
        .arg(tern_e2e::workspace_root().join("tests/interop/pty_drive.py"))
        .arg(script.to_string())
        .arg("--")
        .arg(tern_e2e::bin("tern"))
        .current_dir(env.dir.path())
        .env("TERN_HOME", env.home.path())
        .env("ANTHROPIC_API_KEY", CANARY)
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env("TERM", "xterm-256color")
        .env("TERM_PROGRAM", "WezTerm")
        .env_remove("TMUX")
        .env_remove("STY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
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
    report["output"].as_str().unwrap_or_default().to_owned()
}

fn a_write_then_an_answer(env: &RunEnv) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_w",
                "fs__write_file",
                &[r#"{"path":"n.txt","content":"hi\n"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Written.");
}

fn script() -> Value {
    json!([
        {"expect": "tern> "},
        {"send": "write n.txt\r"},
        {"screen": "› 1. Yes"},
        {"send": "\r"},
        {"expect": "Written."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ])
}

const APPROVAL: &str = "\u{1b}]9;tern: approval needed for fs__write_file\u{7}";
const TURN_END: &str = "\u{1b}]9;tern: turn success after ";

#[tokio::test]
async fn an_approval_and_a_long_turn_notify_with_osc_9() {
    let env = RunEnv::new().await;
    // Every turn counts as long.
    env.add_servers("[ui]\nnotify_after_sec = 0\n");
    a_write_then_an_answer(&env);
    let output = drive(&env, &script()).await;
    let asked = output
        .find(APPROVAL)
        .unwrap_or_else(|| panic!("{output:?}"));
    let ended = output
        .find(TURN_END)
        .unwrap_or_else(|| panic!("{output:?}"));
    // The approval rings while the menu waits, the turn's end after the answer.
    assert!(asked < output.find("Written.").unwrap() && asked < ended);
    assert!(output[..asked].contains("1. Yes"));
}

#[tokio::test]
async fn notify_false_rings_for_nothing_and_a_short_turn_does_not_ring() {
    let env = RunEnv::new().await;
    env.add_servers("[ui]\nnotify = false\n");
    a_write_then_an_answer(&env);
    let output = drive(&env, &script()).await;
    assert!(!output.contains("\u{1b}]9;"), "{output:?}");
    assert!(!output.contains('\u{7}'), "{output:?}");

    // On by default, but a turn under the default 10 s threshold does not ring at its end.
    let env = RunEnv::new().await;
    a_write_then_an_answer(&env);
    let output = drive(&env, &script()).await;
    assert!(output.contains(APPROVAL), "{output:?}");
    assert!(!output.contains(TURN_END), "{output:?}");
}
