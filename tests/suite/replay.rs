//! `tern replay`: a scripted run recorded by `tern run`, re-driven with no model server — the
//! tools re-executed for real — identical from the starting state, divergent from another.

use std::path::Path;

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;

fn write_fixture(dir: &Path) {
    std::fs::write(dir.join("lib.txt"), "name = tern\nanswer = 41\n").unwrap();
    std::fs::write(
        dir.join("check.sh"),
        "if grep -q 'answer = 42' lib.txt; then echo '1 passed'; else echo '1 failed'; exit 1; fi\n",
    )
    .unwrap();
}

/// Records the read → edit → check → answer session in `env.dir`; returns the run id.
async fn record(env: &RunEnv) -> String {
    write_fixture(env.dir.path());
    env.server.enqueue(
        AnthropicTurn::with_usage(1200, 0, 900)
            .text(&["Let me ", "look."])
            .tool_use("toolu_1", "fs__read_file", &[r#"{"path":"lib.txt"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(150, 2100, 0)
            .tool_use(
                "toolu_2",
                "fs__edit_file",
                &[r#"{"path":"lib.txt","old_string":"answer = 41","new_string":"answer = 42"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(160, 2250, 0)
            .tool_use("toolu_3", "shell__run", &[r#"{"command":"sh check.sh"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(120, 2400, 0)
            .text(&["Fixed: `answer` is now 42 and the check passes."])
            .finish("end_turn"),
    );
    let out = env
        .run(&[
            "run",
            "fix the answer",
            "--output-format",
            "jsonl",
            "--mode",
            "accept-edits",
            "--allow",
            "shell__run(sh check.sh)",
        ])
        .await;
    assert_exit(&out, 0);
    env.events()[0]["run_id"].as_str().unwrap().to_string()
}

/// The events that say how a replay went, for failure messages.
fn story(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| {
            let t = e["type"].as_str().unwrap_or("");
            t.starts_with("replay_") || t == "permission_decided" || t == "error"
        })
        .collect()
}

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn a_recorded_run_replays_identically_and_a_changed_file_diverges() {
    let env = RunEnv::new().await;
    let run_id = record(&env).await;
    let requests = env.server.requests().len();

    // From the starting state, with no key and the current config's default mode (the edit and
    // the command would need approval: the recorded decisions answer).
    let start = tempfile::tempdir().unwrap();
    write_fixture(start.path());
    let start_dir = start.path().to_str().unwrap();
    let out = env
        .command(&[
            "replay",
            &run_id,
            "--workspace",
            start_dir,
            "--output-format",
            "jsonl",
        ])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    let events = jsonl(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:#?}\n{}",
        story(&events),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        env.server.requests().len(),
        requests,
        "a replay sends nothing"
    );
    let compared = of_type(&events, "replay_compared");
    assert_eq!(compared.len(), 3, "{compared:#?}");
    for (c, id) in compared.iter().zip(["toolu_1", "toolu_2", "toolu_3"]) {
        assert_eq!(c["call_id"], id);
        assert_eq!(c["verdict"], "identical", "{c}");
    }
    let summary = of_type(&events, "replay_summary");
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0]["recorded_run_id"], run_id.as_str());
    assert_eq!(summary[0]["identical"], 3);
    // The summary comes just before run_finished, which reports the recorded usage again.
    let n = events.len();
    assert_eq!(events[n - 2]["type"], "replay_summary");
    assert_eq!(events[n - 1]["type"], "run_finished");
    assert_eq!(events[n - 1]["status"], "success");
    assert_eq!(events[n - 1]["cache_read_tokens"], 2100 + 2250 + 2400);
    // A scratch copy: the starting directory is untouched; the recorded one was not used.
    assert_eq!(
        std::fs::read_to_string(start.path().join("lib.txt")).unwrap(),
        "name = tern\nanswer = 41\n"
    );

    // A changed fixture: the read shows it, the edit cannot apply, the check fails.
    std::fs::write(start.path().join("lib.txt"), "name = tern\nanswer = 40\n").unwrap();
    let out = env
        .command(&["replay", &run_id, "--workspace", start_dir])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("fs__read_file (toolu_1) DIVERGED from the recording"),
        "{text}"
    );
    assert!(
        text.contains(r#"output line 2: recorded "2\tanswer = 41", replay "2\tanswer = 40""#)
            || text.contains("answer = 40"),
        "{text}"
    );
    assert!(
        text.contains("DIVERGED · 3 recorded tool call(s): 0 identical, 3 diverged"),
        "{text}"
    );

    // In place: the directory itself is changed, as the recorded run changed its own.
    write_fixture(start.path());
    let out = env
        .command(&["replay", &run_id, "--workspace", start_dir, "--in-place"])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(start.path().join("lib.txt")).unwrap(),
        "name = tern\nanswer = 42\n"
    );
}

#[tokio::test]
async fn a_deny_rule_of_the_current_config_wins_over_a_recorded_allow() {
    let env = RunEnv::new().await;
    let run_id = record(&env).await;
    let start = tempfile::tempdir().unwrap();
    write_fixture(start.path());
    let out = env
        .command(&[
            "replay",
            &run_id,
            "--workspace",
            start.path().to_str().unwrap(),
            "--output-format",
            "jsonl",
            "--deny",
            "shell__run",
        ])
        .output()
        .await
        .unwrap();
    let events = jsonl(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{:#?}", story(&events));
    let shell = of_type(&events, "replay_compared")
        .into_iter()
        .find(|c| c["call_id"] == "toolu_3")
        .cloned()
        .unwrap();
    assert_eq!(shell["verdict"], "diverged");
    let differences = shell["differences"].to_string();
    assert!(
        differences.contains("error_type: recorded none, replay denied"),
        "{differences}"
    );
}

#[tokio::test]
async fn what_is_not_a_recording_is_a_usage_error() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("x.jsonl"), "{\"not\": \"an event\"}\n").unwrap();
    let out = env.run(&["replay", "x.jsonl"]).await;
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a tern event"), "{err}");
    let out = env.run(&["replay", "no-such-run"]).await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Round 3: a FIFO in the project hung the replay's copy (and the copy was world-readable).
/// Now the FIFO is skipped with a note, the replay finishes, and the kept copy is 0700.
#[tokio::test]
async fn a_fifo_in_the_project_is_skipped_and_the_copy_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = RunEnv::new().await;
    let run_id = record(&env).await;
    let start = tempfile::tempdir().unwrap();
    write_fixture(start.path());
    let fifo = start.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let start_dir = start.path().to_str().unwrap();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        env.command(&["replay", &run_id, "--workspace", start_dir, "--keep"])
            .env_remove("ANTHROPIC_API_KEY")
            .output(),
    )
    .await
    .expect("the replay hung on the FIFO")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("not copied") && stderr.contains("pipe"),
        "{stderr}"
    );
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("the replay's workspace is kept in "))
        .expect("the kept workspace's path");
    let mode = std::fs::metadata(kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{kept}");
    let _ = std::fs::remove_dir_all(kept);
}
