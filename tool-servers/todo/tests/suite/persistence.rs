//! `--state FILE`: the list survives a restart, is written 0600, is re-read when the host
//! changes the file, and a corrupt file stops startup instead of being overwritten.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{ERAS, Era, Todo, plan};

fn state_args(path: &std::path::Path) -> Vec<OsString> {
    vec!["--state".into(), path.into()]
}

#[tokio::test]
async fn the_list_survives_a_restart_with_state_and_not_without() {
    for era in ERAS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions/0001.todo.json");
        let todo = Todo::start(era, &state_args(&path), &[]).await;
        todo.write(plan()).await;
        todo.stop().await;

        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{era:?}");
        let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(on_disk, json!({"version": 1, "todos": plan()}));

        let again = Todo::start(era, &state_args(&path), &[]).await;
        let (text, structured, _) = again.ok("read", json!({})).await;
        assert_eq!(structured["todos"], plan(), "{era:?}: {text}");
        again.stop().await;

        // In memory only, a new process starts empty.
        let memory = Todo::memory(era).await;
        memory.write(plan()).await;
        memory.stop().await;
        let fresh = Todo::memory(era).await;
        let (_, structured, _) = fresh.ok("read", json!({})).await;
        assert_eq!(structured["todos"], json!([]));
        fresh.stop().await;
    }
}

#[tokio::test]
async fn the_state_file_may_be_named_in_the_environment_and_written_by_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.todo.json");
    let todo = Todo::start(
        Era::Legacy,
        &[],
        &[("TERN_TODO_STATE", path.clone().into())],
    )
    .await;
    todo.write(plan()).await;
    assert!(path.exists(), "TERN_TODO_STATE names the file");

    // The host seeds a new list (say, from an approved plan): the next call sees it.
    let seeded = json!([{"id": "p1", "text": "Step from the plan", "status": "pending"}]);
    std::fs::write(
        &path,
        serde_json::to_vec(&json!({"version": 1, "todos": seeded})).unwrap(),
    )
    .unwrap();
    let (text, structured, _) = todo.ok("read", json!({})).await;
    assert_eq!(structured["todos"], seeded, "{text}");

    // A broken file written meanwhile is reported, and left as it is.
    std::fs::write(&path, "[1, 2").unwrap();
    let text = todo.refused("read", json!({})).await;
    assert!(text.contains(path.to_str().unwrap()), "{text}");
    assert!(text.contains("hint:"), "{text}");
    let text = todo.refused("write", json!({"todos": plan()})).await;
    assert!(text.contains("is not valid"), "{text}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1, 2");
    todo.stop().await;
}

#[test]
fn a_corrupt_state_file_stops_startup_with_the_file_and_line_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.todo.json");
    let broken =
        "{\"version\": 1,\n \"todos\": [{\"id\": \"1\", \"text\": \"x\", \"status\": \"later\"}]}";
    std::fs::write(&path, broken).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern-todo"))
        .arg("--state")
        .arg(&path)
        .env_remove("TERN_TODO_STATE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(stderr.contains("later"), "the bad value is named: {stderr}");
    assert!(stderr.contains("hint: fix the file"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol: {:?}",
        out.stdout
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
}
