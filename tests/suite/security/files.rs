//! What tern writes under `$TERN_HOME` is private (issue 15): sessions, events, spill files and
//! the audit log are `0600` in `0700` directories, and a symlink planted at the audit log's
//! path does not redirect it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::json;
use tern_e2e::run_env::{RunEnv, all_files};

use super::{finished, run_ok, turn};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn sessions_events_spills_and_the_audit_log_are_private() {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.big]\ncommand = {:?}\n",
        tern_e2e::bin("tern-test-server")
    ));
    turn(
        &env,
        &[("toolu_big", "big__big", json!({"chars": 100_000}))],
    );
    env.answer("done");
    let events = run_ok(&env, "make a big output", &["--allow", "big__big"]).await;
    assert_eq!(finished(&events, "toolu_big")["is_error"], false);

    let home = env.home.path();
    let ours: Vec<_> = all_files(home)
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(home).unwrap();
            rel.starts_with("runs")
                || rel.starts_with("sessions")
                || rel == Path::new("audit.jsonl")
        })
        .collect();
    for kind in ["events.jsonl", "audit.jsonl"] {
        assert!(ours.iter().any(|f| f.ends_with(kind)), "{ours:?}");
    }
    assert!(
        ours.iter().any(|f| f.to_string_lossy().contains("/spill/")),
        "{ours:?}"
    );
    assert!(
        ours.iter()
            .any(|f| f.to_string_lossy().contains("/sessions/")),
        "{ours:?}"
    );
    for f in &ours {
        assert_eq!(mode(f), 0o600, "{}", f.display());
        let mut dir = f.parent().unwrap();
        while dir.starts_with(home) {
            assert_eq!(mode(dir), 0o700, "{}", dir.display());
            dir = dir.parent().unwrap();
        }
    }
}

#[tokio::test]
async fn a_symlink_at_the_audit_log_path_is_not_followed() {
    let env = RunEnv::new().await;
    let elsewhere = env.dir.path().join("notes.txt");
    std::fs::write(&elsewhere, "my notes\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.home.path().join("audit.jsonl")).unwrap();
    env.answer("hello");
    let out = env.run(&["run", "say hello"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("audit log") && stderr.contains("symlink"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "my notes\n");
}

/// Round 3: a symlink planted at `$TERN_HOME/runs`, `sessions` or `logs` used to be written
/// through (events, transcripts and server logs landed in its target). Now the run refuses to
/// start, naming the link, and the target stays empty.
#[tokio::test]
async fn a_symlink_planted_at_a_tern_home_directory_is_refused() {
    for name in ["runs", "sessions", "logs"] {
        let env = RunEnv::new().await;
        let target = tempfile::tempdir().unwrap();
        let _ = std::fs::remove_dir_all(env.home.path().join(name));
        std::os::unix::fs::symlink(target.path(), env.home.path().join(name)).unwrap();
        env.answer("hello");
        let out = env.run(&["run", "say hello"]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("{name} is a symlink")),
            "{name}: {stderr}"
        );
        let written: Vec<_> = std::fs::read_dir(target.path()).unwrap().collect();
        assert!(written.is_empty(), "{name}: wrote {written:?}");
    }
}

/// Round 3: `pins.json` is private like every file of `$TERN_HOME` (it was 0644).
#[tokio::test]
async fn the_pin_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = RunEnv::new().await;
    env.answer("hello");
    let out = env.run(&["run", "say hello"]).await;
    tern_e2e::run_env::assert_exit(&out, 0);
    let pins = env.home.path().join("pins.json");
    let mode = std::fs::metadata(&pins).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", pins.display());
}
