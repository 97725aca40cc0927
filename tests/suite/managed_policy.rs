//! The managed policy end to end (issue 19, item 5): an administrator's file
//! (`TERN_MANAGED_CONFIG` stands in for `/etc/tern/managed.toml`) that the real `tern` obeys
//! over every layer and flag, against the mock model and real tool servers.

use std::process::Output;

use tern_e2e::bin;
use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::script::AnthropicTurn;

use super::run::tool_results;

/// Writes the policy next to the run's home (outside the project) and returns its path.
fn policy(env: &RunEnv, text: &str) -> String {
    let path = env.home.path().join("managed.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn run_under(env: &RunEnv, policy: &str, args: &[&str]) -> Output {
    let mut cmd = env.command(args);
    cmd.env("TERN_MANAGED_CONFIG", policy);
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("tern did not finish in 120 s")
        .unwrap()
}

fn shell_call(env: &RunEnv, command: &str) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_1",
                "shell__run",
                &[&serde_json::json!({ "command": command }).to_string()],
            )
            .finish("tool_use"),
    );
}

/// A stdio server that leaves a mark when it is started, then is the test server.
fn marking_server(env: &RunEnv, name: &str) -> (String, std::path::PathBuf) {
    let mark = env.dir.path().join(format!("{name}.started"));
    let script = env.home.path().join(format!("{name}.sh"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}'\n",
            mark.display(),
            bin("tern-test-server").display()
        ),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    (
        format!(
            "[mcp_servers.{name}]\ncommand = \"{}\"\nstartup_timeout_sec = 60\n",
            script.display()
        ),
        mark,
    )
}

#[tokio::test]
async fn a_denied_server_is_not_started_and_mcp_list_and_doctor_say_why() {
    let env = RunEnv::new().await;
    let (github, github_mark) = marking_server(&env, "github");
    let (notes, notes_mark) = marking_server(&env, "notes");
    env.add_servers(&format!("{github}{notes}"));
    let file = policy(&env, "[policy]\ndenied_servers = [\"github\"]\n");

    let out = run_under(&env, &file, &["mcp", "list"]).await;
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("github "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("blocked"), "{text}");
    assert!(
        text.contains(&format!(
            "blocked by managed policy ({file}:2:19: denied_servers \"github\")"
        )),
        "{text}"
    );
    assert!(!github_mark.exists(), "the denied server was started");
    assert!(notes_mark.exists(), "the other server was not started");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notice: server `github` not started: blocked by managed policy"),
        "{stderr}"
    );

    // JSON: the blocked server with its reason, after the started ones.
    let out = run_under(&env, &file, &["mcp", "list", "--json"]).await;
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let blocked = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "github")
        .unwrap();
    assert_eq!(blocked["state"], "blocked");
    assert!(
        blocked["reason"]
            .as_str()
            .unwrap()
            .contains("denied_servers"),
        "{blocked}"
    );

    // Doctor lists it; asked about it by name, it says why instead of "no such server".
    let out = run_under(&env, &file, &["mcp", "doctor"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("github [blocked] not started"), "{text}");
    let out = run_under(&env, &file, &["mcp", "doctor", "github"]).await;
    assert_exit(&out, 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("server `github` is not started: blocked by managed policy"),
        "{stderr}"
    );
    assert!(!github_mark.exists());

    // A run never starts it either, and its tools are not offered.
    std::fs::remove_file(&notes_mark).unwrap();
    env.answer("done");
    let out = run_under(&env, &file, &["run", "hello"]).await;
    assert_exit(&out, 0);
    assert!(!github_mark.exists());
    let tools = env.server.requests()[0].json()["tools"].to_string();
    assert!(tools.contains("notes__"), "{tools}");
    assert!(!tools.contains("github__"), "{tools}");
}

#[tokio::test]
async fn an_allow_list_admits_only_the_servers_it_names() {
    let env = RunEnv::new().await;
    let (github, github_mark) = marking_server(&env, "github");
    let (notes, notes_mark) = marking_server(&env, "notes");
    env.add_servers(&format!("{github}{notes}"));
    let file = policy(&env, "[policy]\nallowed_servers = [\"notes\", \"fs\"]\n");
    let out = run_under(&env, &file, &["mcp", "list"]).await;
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("allowed_servers does not list \"github\""),
        "{text}"
    );
    assert!(
        text.contains("allowed_servers does not list \"shell\""),
        "{text}"
    );
    assert!(!github_mark.exists());
    assert!(notes_mark.exists());
}

#[tokio::test]
async fn a_forced_deny_rule_beats_a_users_allow() {
    let env = RunEnv::new().await;
    let file = policy(&env, "[policy]\ndeny = [\"shell__run(touch *)\"]\n");
    shell_call(&env, "touch planted.txt");
    env.answer("I could not.");
    let out = run_under(
        &env,
        &file,
        &["--allow", "shell__run", "--mode", "yolo", "run", "plant it"],
    )
    .await;
    assert_exit(&out, 0);
    assert!(!env.dir.path().join("planted.txt").exists());
    let results = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &results[0];
    assert!(*is_error, "{text}");
    assert!(text.contains("permission denied"), "{text}");
    assert!(
        text.contains("denied by rule `shell__run(touch *)`"),
        "the policy's rule is named: {text}"
    );

    // Without the policy the same call runs: the test can fail.
    let env = RunEnv::new().await;
    shell_call(&env, "touch planted.txt");
    env.answer("done");
    let out = env.run(&["--allow", "shell__run", "run", "plant it"]).await;
    assert_exit(&out, 0);
    assert!(env.dir.path().join("planted.txt").exists());
}

#[tokio::test]
async fn yolo_is_refused_with_a_hint() {
    let env = RunEnv::new().await;
    let file = policy(&env, "[policy]\nallow_yolo = false\n");
    let out = run_under(&env, &file, &["--mode", "yolo", "run", "anything"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--mode yolo is not allowed"), "{stderr}");
    assert!(stderr.contains(&format!("({file}:2:")), "{stderr}");
    assert!(
        stderr.contains("hint: use `--mode accept-edits`"),
        "{stderr}"
    );
    assert!(
        env.server.requests().is_empty(),
        "no model request was made"
    );
    // Another mode runs.
    env.answer("done");
    let out = run_under(&env, &file, &["--mode", "accept-edits", "run", "x"]).await;
    assert_exit(&out, 0);
}

#[tokio::test]
async fn the_sandbox_minimum_holds_against_the_flag() {
    let env = RunEnv::new().await;
    let file = policy(&env, "[policy]\nsandbox = \"read-only\"\n");
    shell_call(&env, "touch planted.txt");
    env.answer("done");
    let out = run_under(
        &env,
        &file,
        &[
            "--mode",
            "yolo",
            "run",
            "--sandbox",
            "full-access",
            "plant it",
        ],
    )
    .await;
    assert_exit(&out, 0);
    assert!(
        !env.dir.path().join("planted.txt").exists(),
        "the shell ran outside the policy's sandbox"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox full-access lowered to read-only"),
        "{stderr}"
    );
    // Without the policy the flag opens it: the test can fail.
    let env = RunEnv::new().await;
    shell_call(&env, "touch planted.txt");
    env.answer("done");
    let out = env
        .run(&[
            "--mode",
            "yolo",
            "run",
            "--sandbox",
            "full-access",
            "plant it",
        ])
        .await;
    assert_exit(&out, 0);
    assert!(env.dir.path().join("planted.txt").exists());
}

#[tokio::test]
async fn a_broken_policy_stops_tern() {
    let env = RunEnv::new().await;
    let file = policy(&env, "[policy]\ndenied_server = [\"github\"]\n");
    let out = run_under(&env, &file, &["mcp", "list"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{file}:2:")), "{stderr}");
    assert!(
        stderr.contains("did you mean `denied_servers`?"),
        "{stderr}"
    );
}

/// A hook's `allow` answers an ask of the user's rules, never one of the policy's: that prompt
/// is the administrator's, and headless nobody answers it.
#[tokio::test]
async fn a_hooks_allow_does_not_answer_the_policys_ask() {
    let hook = tempfile::tempdir().unwrap();
    let script = hook.path().join("allow.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat >/dev/null\nprintf '%s' '{\"hookSpecificOutput\":{\"hookEventName\":\
         \"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n",
    )
    .unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    let hooks = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = \"{}\"\n",
        script.display()
    );
    // The user's own ask: the hook answers it and the command runs (the test can fail).
    let env = RunEnv::new().await;
    env.add_servers(&hooks);
    shell_call(&env, "touch planted.txt");
    env.answer("done");
    let out = env.run(&["--ask", "shell__run", "run", "plant it"]).await;
    assert_exit(&out, 0);
    assert!(env.dir.path().join("planted.txt").exists());

    // The same ask from the policy: the hook's allow does not pass it.
    let env = RunEnv::new().await;
    env.add_servers(&hooks);
    let file = policy(&env, "[policy]\nask = [\"shell__run\"]\n");
    shell_call(&env, "touch planted.txt");
    env.answer("done");
    let out = run_under(&env, &file, &["run", "plant it"]).await;
    assert_exit(&out, 0);
    assert!(!env.dir.path().join("planted.txt").exists());
    let results = tool_results(&env.server.requests()[1]);
    assert!(results[0].2, "{:?}", results[0]);
}

/// `allowed_plugins`: a plugin the policy does not list cannot be added, and one enabled before
/// the policy said so stays installed but adds nothing (its server is not started) until the
/// policy lists it — with a notice naming the policy line.
#[tokio::test]
async fn a_plugin_outside_allowed_plugins_is_refused_and_an_enabled_one_adds_nothing() {
    let env = RunEnv::new().await;
    let repos = tempfile::tempdir().unwrap();
    let corp = super::plugins::plugin_repo(repos.path(), "corp-tools", "claude");
    let other = super::plugins::plugin_repo(repos.path(), "stray", "codex");
    let path = policy(&env, "[policy]\nallowed_plugins = [\"corp-*\"]\n");

    // Installed before there was a policy.
    let out = env
        .run(&[
            "plugin",
            "add",
            &format!("file://{}", other.display()),
            "--yes",
        ])
        .await;
    assert_exit(&out, 0);

    let out = run_under(
        &env,
        &path,
        &[
            "plugin",
            "add",
            &format!("file://{}", corp.display()),
            "--yes",
        ],
    )
    .await;
    assert_exit(&out, 0);

    let again = super::plugins::plugin_repo(repos.path(), "stray2", "claude");
    let out = run_under(
        &env,
        &path,
        &[
            "plugin",
            "add",
            &format!("file://{}", again.display()),
            "--yes",
        ],
    )
    .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("plugin `stray2` may not be enabled")
            && err.contains("allowed_plugins does not list \"stray2\"")
            && err.contains("hint:"),
        "{err}"
    );
    assert!(
        !env.home.path().join("plugins/stray2@1.2.0").exists(),
        "nothing installed"
    );

    let out = run_under(&env, &path, &["mcp", "list"]).await;
    assert_exit(&out, 0);
    let listed = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(listed.contains("corp-tools-srv "), "{listed}");
    assert!(!listed.contains("stray-srv "), "{listed}");
    assert!(
        err.contains("plugin `stray` not loaded: blocked by managed policy"),
        "{err}"
    );

    // The control: without the policy the earlier plugin's server is back.
    let out = env.run(&["mcp", "list"]).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("stray-srv "),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
