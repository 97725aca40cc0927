//! Hooks behaving as Claude Code's do where its hooks reference says how
//! (<https://code.claude.com/docs/en/hooks>): the matching hooks of one event run in parallel
//! and an identical command runs once; `continue: false` from `PostToolUse` stops the run with
//! its `stopReason`; a `PreToolUse` hook's `additionalContext` reaches the model next to the
//! tool result.

use tern_e2e::run_env::{RunEnv, assert_exit, of_type};

use super::hooks::{audit_hooks, script, shell_call, with_hooks};
use super::run::tool_results;

/// Waits (up to 5 s) for the other hook's marker: run one after the other, the first of the
/// two would give up and exit 1; run together, both see the other's marker and exit 0.
const MEET: &str = r#"#!/usr/bin/env bash
me=$1; other=$2
cat > /dev/null
echo ran >> "$CLAUDE_PROJECT_DIR/$me.count"
touch "$CLAUDE_PROJECT_DIR/$me.started"
for _ in $(seq 50); do
  [ -f "$CLAUDE_PROJECT_DIR/$other.started" ] && exit 0
  sleep 0.1
done
echo "never met $other" >&2
exit 1
"#;

#[tokio::test]
async fn matching_hooks_run_in_parallel_and_an_identical_command_runs_once() {
    let env = RunEnv::new().await;
    let meet = script(&env, "meet.sh", MEET);
    // `a` twice (as if configured at two layers), `b` once.
    with_hooks(
        &env,
        &format!(
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{meet} a b\"\n\
             [[hooks.PreToolUse]]\nmatcher = \"shell__run\"\ncommand = \"{meet} b a\"\n\
             [[hooks.PreToolUse]]\nmatcher = \"*\"\ncommand = \"{meet} a b\"\n"
        ),
    );
    shell_call(&env, "toolu_1", "echo hello");
    env.answer("done");
    let out = env
        .run(&["run", "say hello", "--allow", "shell__run"])
        .await;
    assert_exit(&out, 0);
    let count = |who: &str| {
        std::fs::read_to_string(env.dir.path().join(format!("{who}.count")))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(count("a"), 1, "the identical command ran once");
    assert_eq!(count("b"), 1);
    let audit = audit_hooks(&env);
    assert_eq!(audit.len(), 2, "{audit:?}");
    for line in &audit {
        assert_eq!(line["exit_code"], 0, "each met the other: {line}");
    }
    let results = tool_results(&env.server.requests()[1]);
    assert!(!results[0].2, "{results:?}");
}

#[tokio::test]
async fn post_tool_use_continue_false_stops_the_run_with_its_stop_reason() {
    let env = RunEnv::new().await;
    let stop = script(
        &env,
        "stop.sh",
        "#!/usr/bin/env bash\ncat > /dev/null\n\
         echo '{\"continue\": false, \"stopReason\": \"the build broke; fix it by hand\", \
         \"decision\": \"block\", \"reason\": \"ignored\"}'\n",
    );
    with_hooks(
        &env,
        &format!("[[hooks.PostToolUse]]\nmatcher = \"Bash\"\ncommand = \"{stop}\"\n"),
    );
    shell_call(&env, "toolu_1", "touch built.txt");
    env.answer("never asked for");
    let out = env
        .run(&[
            "run",
            "build it",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 1);
    assert!(env.dir.path().join("built.txt").is_file(), "the call ran");
    assert_eq!(
        env.server.model_requests().len(),
        1,
        "no request after the hook stopped the run"
    );
    let events = env.events();
    let finished = of_type(&events, "run_finished");
    assert_eq!(finished[0]["status"], "error");
    assert!(
        finished[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("a PostToolUse hook stopped the run: the build broke; fix it by hand"),
        "{finished:?}"
    );
    assert_eq!(audit_hooks(&env)[0]["decision"], "stop");
}

#[tokio::test]
async fn a_pre_tool_use_hooks_additional_context_reaches_the_model_with_the_result() {
    let env = RunEnv::new().await;
    let context = script(
        &env,
        "context.py",
        "#!/usr/bin/env python3\nimport json, sys\njson.load(sys.stdin)\n\
         print(json.dumps({\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \
         \"additionalContext\": \"The deployment target is staging.\"}}))\n",
    );
    with_hooks(
        &env,
        &format!("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{context}\"\n"),
    );
    shell_call(&env, "toolu_1", "echo deploying");
    env.answer("ok");
    let out = env.run(&["run", "deploy", "--allow", "shell__run"]).await;
    assert_exit(&out, 0);
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    assert!(
        text.contains("deploying")
            && text.contains("[PreToolUse hook] The deployment target is staging."),
        "{text}"
    );
}
