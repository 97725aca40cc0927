//! Hooks at the points issue 19 lists that `hooks.rs` does not cover: a `PreToolUse` hook's
//! JSON `permissionDecision` of `deny` and `ask` (headless and at the terminal), `Notification`
//! while an approval waits, and `PreCompact` with trigger `manual` from `/compact` — each a
//! Claude Code-style script run by the real `tern` against the mock model.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;

use super::hooks::{audit_hooks, script, shell_call, with_hooks};
use super::repl::drive_with;
use super::run::tool_results;

/// A PreToolUse hook answering with Claude Code's JSON (`hookSpecificOutput`), exit 0.
fn decision_hook(decision: &str, reason: &str) -> String {
    format!(
        "#!/usr/bin/env bash\ncat > /dev/null\necho '{}'\n",
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }})
    )
}

#[tokio::test]
async fn a_json_deny_refuses_an_allowed_call_and_its_reason_reaches_the_model() {
    let env = RunEnv::new().await;
    let hook = script(
        &env,
        "deny.sh",
        &decision_hook("deny", "no writes during the freeze"),
    );
    with_hooks(
        &env,
        &format!("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{hook}\"\n"),
    );
    shell_call(&env, "toolu_w", "echo x > made.txt");
    env.answer("Understood.");
    let out = env
        .run(&[
            "run",
            "write it",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(!env.dir.path().join("made.txt").exists(), "the call ran");
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("a PreToolUse hook blocked it: no writes during the freeze"),
        "{text}"
    );
    let events = env.events();
    let decided = of_type(&events, "permission_decided");
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["decision"], "deny");
    assert_eq!(decided[0]["rule"], "hook:PreToolUse");
    assert_eq!(decided[0]["asked"], false);
    let audit = audit_hooks(&env);
    // The audit's word for a hook that stops a call, whether by exit 2 or JSON.
    assert_eq!(audit[0]["decision"], "block", "{audit:?}");
    assert_eq!(audit[0]["exit_code"], 0, "{audit:?}");
}

#[tokio::test]
async fn a_json_ask_turns_an_allowed_call_into_a_question_that_headless_refuses() {
    let env = RunEnv::new().await;
    let hook = script(
        &env,
        "ask.sh",
        &decision_hook("ask", "a person should confirm writes"),
    );
    let notify = script(
        &env,
        "notify.sh",
        "#!/usr/bin/env bash\ncat > \"$CLAUDE_PROJECT_DIR/notify.json\"\n",
    );
    with_hooks(
        &env,
        &format!(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{hook}\"\n\
             [[hooks.Notification]]\ncommand = \"{notify}\"\n"
        ),
    );
    shell_call(&env, "toolu_w", "echo x > made.txt");
    env.answer("I could not.");
    let out = env
        .run(&[
            "run",
            "write it",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(!env.dir.path().join("made.txt").exists(), "the call ran");
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    // The rule allowed it; the hook's ask made it a question; nobody can answer headless.
    assert!(
        text.contains("`shell__run` needs approval (a person should confirm writes)"),
        "{text}"
    );
    let events = env.events();
    let decided = of_type(&events, "permission_decided");
    assert_eq!(decided[0]["decision"], "deny", "{decided:?}");
    assert_eq!(decided[0]["rule"], "headless:deny", "{decided:?}");
    assert_eq!(decided[0]["asked"], true, "{decided:?}");
    // Nobody was asked, so nobody is told "tern needs your permission": no Notification.
    assert!(
        !env.dir.path().join("notify.json").exists(),
        "Notification ran in a headless run"
    );
    assert!(
        audit_hooks(&env)
            .iter()
            .all(|h| h["event"] != "Notification"),
        "{:?}",
        audit_hooks(&env)
    );
}

/// Records its input in the project (`NAME.json`), then a marker saying it finished.
fn recorder(env: &RunEnv, name: &str) -> String {
    script(
        env,
        &format!("{name}.sh"),
        &format!(
            "#!/usr/bin/env bash\ncat > \"$CLAUDE_PROJECT_DIR/{name}.json\"\n\
             printf done > \"$CLAUDE_PROJECT_DIR/{name}.done\"\n"
        ),
    )
}

fn read_json(env: &RunEnv, file: &str) -> Value {
    let text = std::fs::read_to_string(env.dir.path().join(file))
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}: {text}"))
}

#[tokio::test]
async fn at_the_terminal_an_ask_is_asked_notification_runs_while_it_waits_and_compact_is_manual() {
    let env = RunEnv::new().await;
    let ask = script(
        &env,
        "ask.sh",
        &decision_hook("ask", "a person should confirm writes"),
    );
    let notify = recorder(&env, "notification");
    let compact = recorder(&env, "precompact");
    env.add_servers(&format!(
        "[mcp_servers.shell]\nrequired = true\n[permissions]\nallow = [\"shell__run\"]\n\
         [[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{ask}\"\n\
         [[hooks.Notification]]\ncommand = \"{notify}\"\n\
         [[hooks.PreCompact]]\ncommand = \"{compact}\"\n"
    ));
    shell_call(&env, "toolu_w", "echo hi > made.txt");
    env.answer("Wrote it.");
    env.server.respond_when(
        |r| r.body.windows(12).any(|w| w == b"tern:compact"),
        |_| {
            AnthropicTurn::new()
                .text(&["Goal: write made.txt. Done."])
                .finish("end_turn")
        },
    );
    let script = json!([
        {"expect": "tern> "},
        {"send": "write made.txt\r"},
        {"expect": "Esc cancels the turn"},
        {"screen": "a person should confirm writes", "hold": 1.0},
        // The question waits; the Notification hook has run beside it, the call has not.
        {"file": "notification.done", "equals": "done"},
        {"file": "made.txt", "equals": null},
        {"send": "1"},
        {"expect": "Wrote it."},
        {"expect": "tern> "},
        {"send": "/compact keep the file names\r"},
        {"expect": "[context manual"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("made.txt")).unwrap(),
        "hi\n"
    );
    let note = read_json(&env, "notification.json");
    assert_eq!(note["hook_event_name"], "Notification");
    assert_eq!(
        note["message"],
        "tern needs your permission to use shell__run"
    );
    let pre = read_json(&env, "precompact.json");
    assert_eq!(pre["hook_event_name"], "PreCompact");
    assert_eq!(pre["trigger"], "manual");
    assert_eq!(pre["custom_instructions"], "keep the file names");
    assert_eq!(pre["session_id"], note["session_id"]);
}
