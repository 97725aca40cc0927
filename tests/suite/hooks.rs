//! Hooks end to end (issue 19, item 1): Claude Code-style hook scripts (bash and Python) run
//! by the real `tern` around real tool servers, against the mock model. What the model sees
//! is asserted on the requests it received; what the hooks saw, on the files they wrote.

use std::time::{Duration, Instant};

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type, pids_with};
use tern_model::mock::script::AnthropicTurn;

use super::run::tool_results;

/// Writes an executable script into the project and returns its path.
pub(super) fn script(env: &RunEnv, name: &str, body: &str) -> String {
    let dir = env.dir.path().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    let mut perm = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&path, perm).unwrap();
    path.display().to_string()
}

/// The user's config with `hooks` (TOML) added.
pub(super) fn with_hooks(env: &RunEnv, hooks: &str) {
    env.add_servers(hooks);
}

pub(super) fn shell_call(env: &RunEnv, id: &str, command: &str) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                id,
                "shell__run",
                &[&serde_json::json!({ "command": command }).to_string()],
            )
            .finish("tool_use"),
    );
}

pub(super) fn audit_hooks(env: &RunEnv) -> Vec<Value> {
    let text = std::fs::read_to_string(env.home.path().join("audit.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "hook")
        .collect()
}

pub(super) const DENY_RM: &str = r#"#!/usr/bin/env bash
# A Claude Code PreToolUse hook: refuse rm, let everything else through.
input=$(cat)
printf '%s' "$input" > "$CLAUDE_PROJECT_DIR/seen.json"
if printf '%s' "$input" | grep -q '"command":"rm '; then
  echo "rm is not allowed in this project; move files to trash/ instead" >&2
  exit 2
fi
exit 0
"#;

#[tokio::test]
async fn a_pre_tool_use_hook_denies_rm_with_exit_2_and_the_model_reads_its_stderr() {
    let env = RunEnv::new().await;
    let hook = script(&env, "deny-rm.sh", DENY_RM);
    with_hooks(
        &env,
        &format!("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{hook}\"\n"),
    );
    std::fs::create_dir(env.dir.path().join("build")).unwrap();
    shell_call(&env, "toolu_rm", "rm -rf build");
    env.answer("I will not delete it.");
    let out = env
        .run(&[
            "run",
            "clean up",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(env.dir.path().join("build").is_dir(), "the hook blocked rm");
    let requests = env.server.requests();
    let results = tool_results(&requests[1]);
    let (_, text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("rm is not allowed in this project; move files to trash/ instead"),
        "the model sees the hook's stderr: {text}"
    );
    // Claude Code's input, on stdin.
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(env.dir.path().join("seen.json")).unwrap())
            .unwrap();
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["tool_name"], "shell__run");
    assert_eq!(seen["tool_input"]["command"], "rm -rf build");
    assert_eq!(seen["tool_use_id"], "toolu_rm");
    let session = seen["session_id"].as_str().unwrap();
    assert!(
        seen["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("sessions/{session}.jsonl")),
        "{seen}"
    );
    assert_eq!(
        std::path::Path::new(seen["cwd"].as_str().unwrap()),
        env.dir.path().canonicalize().unwrap()
    );
    // An event and an audit line, with decision and exit code.
    let events = env.events();
    let runs = of_type(&events, "hook_run");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["decision"], "block");
    assert_eq!(runs[0]["exit_code"], 2);
    let decided = of_type(&events, "permission_decided");
    assert_eq!(decided[0]["decision"], "deny");
    assert_eq!(decided[0]["rule"], "hook:PreToolUse");
    let audit = audit_hooks(&env);
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["event"], "PreToolUse");
    assert_eq!(audit[0]["decision"], "block");
    assert_eq!(audit[0]["exit_code"], 2);
    assert!(audit[0]["duration_ms"].is_u64());
}

const REWRITE: &str = r#"#!/usr/bin/env python3
# A Claude Code PreToolUse hook in Python: answer the prompt and pin the command.
import json, sys
data = json.load(sys.stdin)
command = data["tool_input"]["command"]
print(json.dumps({
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": "rewritten by policy",
        "updatedInput": {"command": command.replace("original", "rewritten")},
    }
}))
"#;

#[tokio::test]
async fn a_pre_tool_use_hook_rewrites_tool_input_and_its_allow_never_beats_a_deny_rule() {
    let env = RunEnv::new().await;
    let hook = script(&env, "rewrite.py", REWRITE);
    with_hooks(
        &env,
        &format!("[[hooks.PreToolUse]]\nmatcher = \"shell__*\"\ncommand = \"{hook}\"\n"),
    );
    // No rule allows shell__run: headless, it would be denied; the hook's allow answers it.
    shell_call(&env, "toolu_1", "echo original");
    env.answer("ok");
    let out = env
        .run(&["run", "say it", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(
        text.contains("rewritten") && !text.contains("original"),
        "{text}"
    );

    // The rewrite is judged by the rules again: a deny rule on the new command stands.
    shell_call(&env, "toolu_2", "echo original");
    env.answer("ok");
    let out = env
        .run(&[
            "run",
            "say it",
            "--deny",
            "shell__run(echo rewritten*)",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[3]);
    let (_, text, is_error) = &results[0];
    assert!(*is_error && text.contains("permission denied"), "{text}");

    // A call a deny rule names is denied before any hook runs.
    shell_call(&env, "toolu_3", "echo original");
    env.answer("ok");
    let out = env
        .run(&[
            "run",
            "say it",
            "--deny",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[5]);
    assert!(results[0].2, "{results:?}");
    assert!(
        of_type(&env.events(), "hook_run").is_empty(),
        "no hook runs for a call the rules deny"
    );
}

#[tokio::test]
async fn a_post_tool_use_hook_adds_context_for_the_model() {
    let env = RunEnv::new().await;
    let hook = script(
        &env,
        "context.sh",
        r#"#!/usr/bin/env bash
input=$(cat)
case "$input" in
  *'"tool_response"'*) ;;
  *) echo "no tool_response" >&2; exit 1 ;;
esac
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"notes.txt is generated: edit notes.in instead"}}'
"#,
    );
    with_hooks(
        &env,
        &format!("[[hooks.PostToolUse]]\nmatcher = \"Read\"\ncommand = \"{hook}\"\n"),
    );
    std::fs::write(env.dir.path().join("notes.txt"), "hello\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r", "fs__read_file", &[r#"{"path":"notes.txt"}"#])
            .finish("tool_use"),
    );
    env.answer("done");
    let out = env
        .run(&["run", "read it", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(text.contains("hello"), "{text}");
    assert!(
        text.contains("[PostToolUse hook] notes.txt is generated: edit notes.in instead"),
        "{text}"
    );
}

const STOP_ONCE: &str = r#"#!/usr/bin/env python3
# Send the model back once to run the tests; let it stop the second time.
import json, sys
data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "Run the tests before you finish."}))
"#;

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_once() {
    let env = RunEnv::new().await;
    let hook = script(&env, "stop.py", STOP_ONCE);
    with_hooks(&env, &format!("[[hooks.Stop]]\ncommand = \"{hook}\"\n"));
    env.answer("Done.");
    env.answer("Tests pass. Done.");
    let out = env
        .run(&["run", "fix it", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2, "exactly one more turn");
    let body = requests[1].json();
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains("Run the tests before you finish."), "{last}");
    let events = env.events();
    let finished = of_type(&events, "run_finished");
    assert_eq!(finished[0]["answer"], "Tests pass. Done.");
    let runs = of_type(&events, "hook_run");
    let decisions: Vec<&str> = runs
        .iter()
        .map(|r| r["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["block", "continue"]);
}

#[tokio::test]
async fn a_hanging_hook_is_killed_at_its_timeout_and_blocks_only_when_fail_closed() {
    let env = RunEnv::new().await;
    // The hook forks a child that would outlive it: the whole group goes.
    let hook = script(
        &env,
        "hang.sh",
        "#!/usr/bin/env bash\nsleep 31.4159 &\nsleep 31.4159\n",
    );
    with_hooks(
        &env,
        &format!("[[hooks.PreToolUse]]\ncommand = \"{hook}\"\ntimeout_sec = 1\n"),
    );
    shell_call(&env, "toolu_1", "echo went-ahead");
    env.answer("ok");
    let started = Instant::now();
    let out = env
        .run(&[
            "run",
            "go",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let results = tool_results(&env.server.requests()[1]);
    assert!(
        !results[0].2 && results[0].1.contains("went-ahead"),
        "{results:?}"
    );
    let events = env.events();
    let runs = of_type(&events, "hook_run");
    assert_eq!(runs[0]["timed_out"], true, "{runs:?}");
    assert_eq!(runs[0]["decision"], "error");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pids_with("31.4159").is_empty(),
        "the hook's group was killed"
    );

    // fail_closed: the same hang blocks the call.
    with_hooks(
        &env,
        &format!(
            "[[hooks.PreToolUse]]\ncommand = \"{hook}\"\ntimeout_sec = 1\nfail_closed = true\n"
        ),
    );
    shell_call(&env, "toolu_2", "echo went-ahead");
    env.answer("ok");
    let out = env
        .run(&[
            "run",
            "go",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[3]);
    assert!(results[0].2, "{results:?}");
    assert!(results[0].1.contains("timed out"), "{results:?}");
}

#[tokio::test]
async fn an_untrusted_projects_hooks_do_not_run_until_it_is_trusted() {
    let env = RunEnv::new().await;
    let tern_dir = env.dir.path().join(".tern");
    std::fs::create_dir_all(&tern_dir).unwrap();
    std::fs::write(
        tern_dir.join("config.toml"),
        "[[hooks.UserPromptSubmit]]\ncommand = \"touch \\\"$CLAUDE_PROJECT_DIR/hook-ran\\\"\"\n",
    )
    .unwrap();
    env.answer("hi");
    let out = env.run(&["run", "hello", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    assert!(
        !env.dir.path().join("hook-ran").exists(),
        "an untrusted project's hook ran"
    );
    assert!(of_type(&env.events(), "hook_run").is_empty());

    assert_exit(&env.run(&["trust"]).await, 0);
    env.answer("hi");
    let out = env.run(&["run", "hello", "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);
    assert!(
        env.dir.path().join("hook-ran").exists(),
        "a trusted project's hook runs"
    );
}
