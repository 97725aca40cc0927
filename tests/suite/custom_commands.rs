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
