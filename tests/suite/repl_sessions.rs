//! Sessions belong to a project (issue 26, item 2): `--continue` (and `tern resume` without an
//! id, which uses the same lookup) continue the newest session of *this* directory, never
//! another project's; with none here, a clear error and a hint.

use std::process::Output;

use tern_e2e::run_env::RunEnv;

async fn run_in(env: &RunEnv, dir: &std::path::Path, args: &[&str]) -> Output {
    env.command(args).current_dir(dir).output().await.unwrap()
}

/// Every request's messages, as JSON text.
fn sent(env: &RunEnv) -> Vec<String> {
    env.server
        .requests()
        .iter()
        .map(|r| r.json()["messages"].to_string())
        .collect()
}

#[tokio::test]
async fn continue_picks_the_newest_session_of_this_directory_only() {
    let env = RunEnv::new().await;
    let a = env.dir.path().to_path_buf();
    let b = tempfile::tempdir().unwrap();
    // Nothing saved in B yet (and A has nothing either): a clear error, no model request.
    let out = run_in(&env, b.path(), &["run", "--continue", "go on"]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no saved session of this project"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");
    assert!(env.server.requests().is_empty());

    env.answer("Hello A.");
    let out = run_in(&env, &a, &["run", "project A goal"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // B is newer, but it is another project: A's --continue must not pick it.
    env.answer("Hello B.");
    let out = run_in(&env, b.path(), &["run", "project B goal"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    env.answer("Again A.");
    let out = run_in(&env, &a, &["run", "--continue", "more in A"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.answer("Again B.");
    let out = run_in(&env, b.path(), &["run", "--continue", "more in B"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let sent = sent(&env);
    assert_eq!(sent.len(), 4);
    assert!(
        sent[2].contains("project A goal") && sent[2].contains("more in A"),
        "{}",
        sent[2]
    );
    assert!(!sent[2].contains("project B goal"), "{}", sent[2]);
    assert!(
        sent[3].contains("project B goal") && sent[3].contains("more in B"),
        "{}",
        sent[3]
    );
    assert!(!sent[3].contains("project A goal"), "{}", sent[3]);
}

/// A REPL run in `tern runs` shows its first message as the goal, `tern trace` shows every
/// message typed, and events after `/clear` carry the new session's id.
#[tokio::test]
async fn repl_runs_show_their_messages_and_clear_starts_a_new_session_in_the_events() {
    let env = RunEnv::new().await;
    env.answer("First answer.");
    env.answer("Second answer.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "fix the flaky login test\r"},
        {"expect": "First answer."},
        {"expect": "tern> "},
        {"send": "/clear\r"},
        {"expect": "conversation cleared (new session "},
        {"expect": "tern> "},
        {"send": "now the docs\r"},
        {"expect": "Second answer."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    let output = report["output"].as_str().unwrap_or("");
    let new_id = output
        .split("new session ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the new session id on screen")
        .to_string();

    let events = env.events();
    let messages: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "user_message")
        .map(|e| {
            (
                e["text"].as_str().unwrap_or(""),
                e["session_id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0].0, "fix the flaky login test");
    assert_eq!(messages[1].0, "now the docs");
    let old_id = events[0]["session_id"].as_str().unwrap().to_string();
    assert_ne!(old_id, new_id);
    assert_eq!(messages[0].1, old_id);
    assert_eq!(messages[1].1, new_id, "the turn after /clear");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["session_id"], new_id.as_str());
    // The new session is where the second turn was saved.
    let saved = env
        .home
        .path()
        .join("sessions")
        .join(format!("{new_id}.jsonl"));
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(
        text.contains("now the docs") && !text.contains("flaky"),
        "{text}"
    );

    let out = env.run(&["runs"]).await;
    let runs = String::from_utf8_lossy(&out.stdout);
    assert!(runs.contains("fix the flaky login test"), "{runs}");
    assert!(!runs.contains("(interactive)"), "{runs}");
    let run_id = events[0]["run_id"].as_str().unwrap();
    let out = env.run(&["trace", run_id]).await;
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(
        trace.contains("user: \"fix the flaky login test\""),
        "{trace}"
    );
    assert!(trace.contains("user: \"now the docs\""), "{trace}");
}

/// `tern resume` on a terminal lists this project's sessions, newest first, with their age,
/// turns, cost and first message; ↓ Enter resumes the second. `--all` lists every project's,
/// and Esc leaves without resuming (and without asking the model anything).
#[tokio::test]
async fn resume_on_a_terminal_picks_among_this_projects_sessions() {
    let env = RunEnv::new().await;
    let b = tempfile::tempdir().unwrap();
    for (dir, goal) in [
        (env.dir.path(), "older goal of A"),
        (env.dir.path(), "newer goal of A"),
        (b.path(), "the goal of B"),
    ] {
        env.answer("Done.");
        let out = run_in(&env, dir, &["run", goal]).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    env.answer("Continued the older one.");
    let script = serde_json::json!([
        {"expect": "Resume which session of"},
        {"expect": "Esc leaves without resuming"},
        {"screen": "›  1.", "hold": 0.3},
        {"send": "\u{1b}[B"},
        {"screen": "›  2.", "hold": 0.3},
        {"send": "\r"},
        {"expect": "tern> "},
        {"send": "go on\r"},
        {"expect": "Continued the older one."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["resume"]).await;
    let output = report["output"].as_str().unwrap_or("");
    let newer = output.find("newer goal of A").expect("newer listed");
    let older = output.find("older goal of A").expect("older listed");
    assert!(newer < older, "newest first: {output}");
    assert!(
        !output.contains("the goal of B"),
        "another project's: {output}"
    );
    assert!(output.contains("1 turn"), "{output}");
    assert!(output.contains(" s ago"), "{output}");
    let requests = sent(&env);
    let last = requests.last().unwrap();
    assert!(
        last.contains("older goal of A") && last.contains("go on"),
        "{last}"
    );
    assert!(!last.contains("newer goal of A"), "{last}");

    let before = env.server.requests().len();
    let script = serde_json::json!([
        {"expect": "Resume which session? (every project)"},
        {"expect": "Esc leaves without resuming"},
        {"send": "\u{1b}"},
        {"expect": "(not resumed)"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["resume", "--all"]).await;
    let output = report["output"].as_str().unwrap_or("");
    assert!(output.contains("the goal of B"), "{output}");
    assert!(output.contains(&b.path().display().to_string()), "{output}");
    assert_eq!(report["status"], 0, "{output}");
    assert_eq!(env.server.requests().len(), before, "nothing sent");
}
