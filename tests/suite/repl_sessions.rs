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
