//! Hooks around the session (issue 19, item 1): UserPromptSubmit and SessionStart adding context
//! (and a prompt blocked), `tern hooks import` of a Claude Code settings block, and the session
//! hooks seeing start-up, `/clear` and how the session ended. Tool hooks: `hooks.rs`.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};

use super::hooks::{DENY_RM, script, shell_call, with_hooks};
use super::run::tool_results;

#[tokio::test]
async fn user_prompt_submit_and_session_start_add_context_and_a_prompt_can_be_blocked() {
    let env = RunEnv::new().await;
    let gate = script(
        &env,
        "gate.sh",
        r#"#!/usr/bin/env bash
input=$(cat)
case "$input" in
  *secret*) echo "prompts about secrets are blocked" >&2; exit 2 ;;
esac
echo "The release is on Friday."
"#,
    );
    with_hooks(
        &env,
        &format!(
            "[[hooks.UserPromptSubmit]]\ncommand = \"{gate}\"\n\
             [[hooks.SessionStart]]\ncommand = \"echo This project uses pnpm.\"\n"
        ),
    );
    env.answer("noted");
    let out = env
        .run(&["run", "when is it?", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let body = env.server.requests()[0].json();
    let first = body["messages"][0].to_string();
    assert!(
        first.contains("when is it?") && first.contains("The release is on Friday."),
        "{first}"
    );
    assert!(
        body["system"]
            .to_string()
            .contains("This project uses pnpm."),
        "{}",
        body["system"]
    );

    let out = env
        .run(&["run", "tell me the secret", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 1);
    assert_eq!(
        env.server.requests().len(),
        1,
        "a blocked prompt never reaches the model"
    );
    let events = env.events();
    let errors = of_type(&events, "error");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .contains("prompts about secrets are blocked")),
        "{errors:?}"
    );
}

/// A hooks block as Claude Code's documentation writes it, in a project's
/// `.claude/settings.json`, with `$CLAUDE_PROJECT_DIR` in the command.
const CLAUDE_SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm run lint)"]},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/deny-rm.sh",
            "timeout": 10
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {"type": "prompt", "prompt": "Is the task complete?"}
        ]
      }
    ]
  }
}"#;

#[tokio::test]
async fn tern_hooks_import_converts_a_claude_code_settings_block_that_then_works() {
    let env = RunEnv::new().await;
    let claude = env.dir.path().join(".claude");
    std::fs::create_dir_all(claude.join("hooks")).unwrap();
    std::fs::write(claude.join("settings.json"), CLAUDE_SETTINGS).unwrap();
    let deny = claude.join("hooks/deny-rm.sh");
    std::fs::write(&deny, DENY_RM).unwrap();
    let mut perm = std::fs::metadata(&deny).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&deny, perm).unwrap();

    let out = env.run(&["hooks", "import", ".claude/settings.json"]).await;
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("imported 1 hook(s)"), "{stdout}");
    assert!(
        stdout.contains("type \"prompt\""),
        "the prompt hook is reported skipped: {stdout}"
    );
    assert!(stdout.contains("tern trust"), "{stdout}");
    let config = std::fs::read_to_string(env.dir.path().join(".tern/config.toml")).unwrap();
    let table: toml::Table = toml::from_str(&config).unwrap();
    let hook = &table["hooks"]["PreToolUse"][0];
    assert_eq!(hook["matcher"].as_str(), Some("Bash"));
    assert_eq!(hook["timeout_sec"].as_float(), Some(10.0));

    assert_exit(&env.run(&["trust"]).await, 0);
    let out = env.run(&["hooks", "list"]).await;
    assert_exit(&out, 0);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("PreToolUse") && listing.contains("[Bash]"),
        "{listing}"
    );
    assert!(listing.contains(".tern/config.toml:"), "{listing}");

    // The imported hook guards shell__run exactly as it guarded Bash.
    std::fs::create_dir(env.dir.path().join("build")).unwrap();
    shell_call(&env, "toolu_rm", "rm -rf build");
    env.answer("ok");
    let out = env
        .run(&[
            "run",
            "clean",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(env.dir.path().join("build").is_dir());
    let results = tool_results(&env.server.requests()[1]);
    assert!(results[0].1.contains("rm is not allowed"), "{results:?}");
}

/// Logs every session hook's input and, for `SessionStart`, adds a context line naming the
/// source (so the test sees which block is in the system prompt).
const SESSION_LOG: &str = r#"#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "sessions.jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
if data["hook_event_name"] == "SessionStart":
    print("session context from " + data["source"])
"#;

fn session_hooks(env: &RunEnv) {
    let hook = script(env, "session-log.py", SESSION_LOG);
    with_hooks(
        env,
        &format!(
            "[[hooks.SessionStart]]\ncommand = \"{hook}\"\n\
             [[hooks.SessionEnd]]\ncommand = \"{hook}\"\n"
        ),
    );
}

fn session_log(env: &RunEnv) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(env.dir.path().join("sessions.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            let what = if v["hook_event_name"] == "SessionStart" {
                v["source"].as_str().unwrap_or_default().to_string()
            } else {
                v["reason"].as_str().unwrap_or_default().to_string()
            };
            (
                v["hook_event_name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                what,
                v["session_id"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Claude Code's session events: a headless run ends with reason `other`; in the REPL `/clear`
/// ends the session (reason `clear`) and starts a new one (source `clear`) whose context
/// replaces the old one's, and leaving the REPL is `prompt_input_exit`.
#[tokio::test]
async fn session_hooks_see_startup_clear_and_how_the_session_ended() {
    let env = RunEnv::new().await;
    session_hooks(&env);
    env.answer("Hi.");
    let out = env.run(&["run", "hello"]).await;
    assert_exit(&out, 0);
    let log = session_log(&env);
    let kinds: Vec<_> = log
        .iter()
        .map(|(e, w, _)| (e.as_str(), w.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [("SessionStart", "startup"), ("SessionEnd", "other")]
    );
    std::fs::remove_file(env.dir.path().join("sessions.jsonl")).unwrap();

    env.answer("First.");
    env.answer("Second.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "one\r"},
        {"expect": "First."},
        {"expect": "tern> "},
        {"send": "/clear\r"},
        {"expect": "conversation cleared"},
        {"expect": "tern> "},
        {"send": "two\r"},
        {"expect": "Second."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let log = session_log(&env);
    let kinds: Vec<_> = log
        .iter()
        .map(|(e, w, _)| (e.as_str(), w.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("SessionStart", "startup"),
            ("SessionEnd", "clear"),
            ("SessionStart", "clear"),
            ("SessionEnd", "prompt_input_exit"),
        ]
    );
    // The old session ends under its id, the new one starts and ends under a new one.
    assert_eq!(log[0].2, log[1].2);
    assert_eq!(log[2].2, log[3].2);
    assert_ne!(log[1].2, log[2].2);
    // The new session's context replaced the old one's in the system prompt.
    let requests = env.server.requests();
    let after = requests.last().unwrap().json()["system"].to_string();
    assert!(after.contains("session context from clear"), "{after}");
    assert!(!after.contains("session context from startup"), "{after}");
    let before = requests[requests.len() - 2].json()["system"].to_string();
    assert!(before.contains("session context from startup"), "{before}");
}
