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
