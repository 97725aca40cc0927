//! Custom slash commands from markdown files (issue 19, item 3), through `tern run "/NAME
//! args"`: `$ARGUMENTS` and `$1…` filled in, the project's folders only once it is trusted,
//! the user's `$TERN_HOME/commands` always.

use tern_e2e::run_env::{RunEnv, assert_exit};

fn first_user_text(env: &RunEnv, request: usize) -> String {
    env.server.requests()[request].json()["messages"][0].to_string()
}

#[tokio::test]
async fn a_command_file_expands_with_its_arguments_and_a_projects_needs_trust() {
    let env = RunEnv::new().await;
    let project = env.dir.path().join(".claude/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("fix-issue.md"),
        "---\ndescription: Fix a GitHub issue\nargument-hint: [number] [priority]\n---\n\
         Fix issue #$1 (priority $2). Context: $ARGUMENTS\n",
    )
    .unwrap();
    let user = env.home.path().join("commands");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("review.md"),
        "Review the diff of $ARGUMENTS strictly.",
    )
    .unwrap();
    std::fs::create_dir_all(env.dir.path().join(".tern")).unwrap();
    std::fs::write(env.dir.path().join(".tern/config.toml"), "").unwrap();

    env.answer("ok");
    assert_exit(&env.run(&["run", "/review src/lib.rs"]).await, 0);
    let text = first_user_text(&env, 0);
    assert!(
        text.contains("Review the diff of src/lib.rs strictly."),
        "{text}"
    );

    // Untrusted: the project's command is not a command; the line goes as typed.
    env.answer("ok");
    assert_exit(&env.run(&["run", "/fix-issue 123 high"]).await, 0);
    let text = first_user_text(&env, 1);
    assert!(
        text.contains("/fix-issue 123 high") && !text.contains("Fix issue #"),
        "{text}"
    );

    assert_exit(&env.run(&["trust"]).await, 0);
    env.answer("ok");
    assert_exit(&env.run(&["run", "/fix-issue 123 high"]).await, 0);
    let text = first_user_text(&env, 2);
    assert!(
        text.contains("Fix issue #123 (priority high). Context: 123 high"),
        "{text}"
    );
}

/// In the REPL: `/help` lists the command with its hint, description and source, and
/// `/NAME args` sends the expansion (never the slash line) to the model.
#[tokio::test]
async fn the_repl_lists_custom_commands_in_help_and_sends_their_expansion() {
    let env = RunEnv::new().await;
    let user = env.home.path().join("commands");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("changelog.md"),
        "---\ndescription: Draft a changelog entry\nargument-hint: [version]\n---\n\
         Draft the changelog entry for version $1.\n",
    )
    .unwrap();
    env.answer("Drafted.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/help\r"},
        {"expect": "Custom commands:"},
        {"expect": "Draft a changelog entry (user)"},
        {"expect": "tern> "},
        {"send": "/changelog 2.1.0\r"},
        {"expect": "Drafted."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert!(
        report["output"]
            .to_string()
            .contains("/changelog [version]"),
        "{}",
        report["output"]
    );
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].json()["messages"].to_string();
    assert!(
        sent.contains("Draft the changelog entry for version 2.1.0."),
        "{sent}"
    );
    assert!(!sent.contains("/changelog"), "{sent}");
}

fn shell_call(env: &RunEnv, id: &str, command: &str) {
    env.server.enqueue(
        tern_model::mock::script::AnthropicTurn::new()
            .tool_use(
                id,
                "shell__run",
                &[&serde_json::json!({ "command": command }).to_string()],
            )
            .finish("tool_use"),
    );
}

fn user_command(env: &RunEnv, name: &str, text: &str) -> std::path::PathBuf {
    let dir = env.home.path().join("commands");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.md"));
    std::fs::write(&path, text).unwrap();
    path
}

fn decided(env: &RunEnv) -> Vec<serde_json::Value> {
    tern_e2e::run_env::of_type(&env.events(), "permission_decided")
        .into_iter()
        .cloned()
        .collect()
}

/// A command's `allowed-tools` (Claude Code's `Bash(touch:*)`) lets its turn's shell call run
/// headless without `--allow`, recorded under the command file's line; the same call outside
/// the command is denied; a deny rule still wins inside it.
#[tokio::test]
async fn allowed_tools_let_the_commands_calls_run_and_never_beat_a_deny_rule() {
    let env = RunEnv::new().await;
    let file = user_command(
        &env,
        "mark",
        "---\ndescription: Leave a marker\nallowed-tools: Bash(touch:*), Read\n---\nTouch $1.\n",
    );
    shell_call(&env, "toolu_one", "touch one.txt");
    env.answer("Marked.");
    let out = env.run(&["run", "/mark one.txt"]).await;
    assert_exit(&out, 0);
    assert!(
        env.dir.path().join("one.txt").is_file(),
        "the command's call ran"
    );
    let d = decided(&env);
    assert_eq!(d[0]["decision"], "allow", "{d:?}");
    assert_eq!(
        d[0]["rule"],
        format!("{}:3", file.display()),
        "allowed by the command's line"
    );

    // The same call, not through the command: headless asks become denials.
    shell_call(&env, "toolu_two", "touch two.txt");
    env.answer("Could not.");
    assert_exit(&env.run(&["run", "touch two.txt"]).await, 0);
    assert!(!env.dir.path().join("two.txt").exists());
    assert_eq!(decided(&env)[0]["decision"], "deny");
    let results = super::run::tool_results(&env.server.requests()[3]);
    assert!(results[0].2, "{results:?}");

    // A deny rule outranks the command's allowance.
    shell_call(&env, "toolu_three", "touch three.txt");
    env.answer("Denied.");
    let out = env
        .run(&[
            "run",
            "/mark three.txt",
            "--deny",
            "shell__run(touch three.txt)",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(!env.dir.path().join("three.txt").exists());
    let d = decided(&env);
    assert_eq!(d[0]["decision"], "deny", "{d:?}");
    assert_eq!(d[0]["rule"], "--deny:1", "{d:?}");
}

/// `model:` that cannot be used is an error naming the file, line and key, with a hint, before
/// anything reaches the model; so is an `allowed-tools` entry tern cannot read.
#[tokio::test]
async fn a_blank_or_invalid_model_or_tool_is_a_clear_error_and_nothing_runs() {
    let env = RunEnv::new().await;
    let blank = user_command(&env, "blank", "---\ndescription: x\nmodel:\n---\nGo.\n");
    let out = env.run(&["run", "/blank"]).await;
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3: model: is empty", blank.display())) && err.contains("hint:"),
        "{err}"
    );
    let spaced = user_command(&env, "spaced", "---\nmodel: claude sonnet\n---\nGo.\n");
    let out = env.run(&["run", "/spaced"]).await;
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2: model:", spaced.display()))
            && err.contains("`claude sonnet` is not a model name"),
        "{err}"
    );
    let typo = user_command(
        &env,
        "typo",
        "---\nallowed-tools:\n  - Read\n  - Bsh(git status:*)\n---\nGo.\n",
    );
    let out = env.run(&["run", "/typo"]).await;
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2: allowed-tools:", typo.display()))
            && err.contains("unknown tool `Bsh`")
            && err.contains("hint:"),
        "{err}"
    );
    assert!(env.server.model_requests().is_empty(), "nothing was sent");
}

/// In the REPL: a command's `model` is used for its turn only, and its `allowed-tools` let its
/// shell call run without an approval prompt; the next turn is back on the session's model.
#[tokio::test]
async fn the_repl_runs_a_commands_turn_on_its_model_then_returns_to_the_sessions() {
    let env = RunEnv::new().await;
    user_command(
        &env,
        "quick",
        "---\nmodel: claude-haiku-4-5\nallowed-tools: Bash(touch:*)\n---\nTouch $1.\n",
    );
    shell_call(&env, "toolu_q", "touch quick.txt");
    env.answer("Touched.");
    env.answer("Plain answer.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/quick quick.txt\r"},
        {"expect": "Touched."},
        {"expect": "tern> "},
        {"send": "and now?\r"},
        {"expect": "Plain answer."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert!(env.dir.path().join("quick.txt").is_file(), "ran unasked");
    let models: Vec<String> = env
        .server
        .model_requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models.len(), 3, "{models:?}");
    assert_eq!(models[0], "claude-haiku-4-5");
    assert_eq!(models[1], "claude-haiku-4-5", "the whole turn");
    assert_ne!(models[2], "claude-haiku-4-5", "the next turn: {models:?}");
}
