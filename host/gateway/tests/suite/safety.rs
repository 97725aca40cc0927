//! Secrets never written; config locations never writable.

use std::path::Path;

use serde_json::json;
use tern_config::{LoadOptions, PermissionMode};
use tern_gateway::ErrorKind;

use super::harness::{CANARY, Rig};

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[tokio::test]
async fn a_canary_key_appears_in_no_file_the_gateway_writes() {
    let user = "[permissions]\nallow = [\"shell__run\"]\n";
    let rig = Rig::start(user).await;
    // The key in the server's env, echoed back by a tool.
    let r = rig
        .call("env", "test__env", json!({"name": "ANTHROPIC_API_KEY"}))
        .await;
    assert!(!r.result.is_error);
    assert!(!r.result.content.contains(CANARY), "{}", r.result.content);
    assert!(
        r.result.content.contains("[REDACTED]"),
        "{}",
        r.result.content
    );
    // In a long output that is spilled, and in the arguments. (The test server does not cap
    // its output; tern-shell caps its own to the host's limit, so nothing is left to spill.)
    let text = format!("{CANARY}\n{}\n{CANARY}", "x".repeat(40_000));
    let r = rig
        .call(
            &format!("spill-{CANARY}"),
            "test__echo",
            json!({ "text": text }),
        )
        .await;
    assert!(!r.result.is_error, "{}", r.result.content);
    assert!(r.meta.truncated);
    assert!(!r.result.content.contains(CANARY), "{}", {
        let i = r.result.content.find(CANARY).unwrap();
        &r.result.content[i.saturating_sub(200)..(i + 100).min(r.result.content.len())]
    });
    // A key the gateway was never told about, by its shape.
    let other = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let r = rig
        .call("shape", "test__echo", json!({ "text": other }))
        .await;
    assert!(!r.result.content.contains(other), "{}", r.result.content);
    // An unknown tool whose name carries the key.
    rig.call("unknown", &format!("x{CANARY}"), json!({})).await;

    let events = serde_json::to_string(&*rig.events.lock().unwrap()).unwrap();
    assert!(!events.contains(CANARY) && !events.contains(other));
    let env = rig.shutdown().await;
    let mut files = Vec::new();
    files_under(&env.tern_home, &mut files);
    assert!(files.iter().any(|f| f.ends_with("audit.jsonl")));
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().contains("/spill/")),
        "{files:?}"
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(CANARY), "canary in {}", file.display());
        assert!(
            !file.to_string_lossy().contains("CANARY"),
            "canary in the name {}",
            file.display()
        );
        assert!(
            !text.contains("CANARY-0123"),
            "canary tail in {}",
            file.display()
        );
        assert!(!text.contains(other), "key in {}", file.display());
    }
}

#[tokio::test]
async fn config_locations_are_write_protected_in_any_case_and_mode() {
    let options = LoadOptions {
        mode: Some(PermissionMode::Yolo),
        ..Default::default()
    };
    let user = "[permissions]\nallow = [\"*\"]\n";
    let rig = Rig::with(
        user,
        options,
        std::sync::Arc::new(tern_gateway::HeadlessApprover),
        |_| {},
    )
    .await;
    std::fs::create_dir_all(rig.env.project.join(".tern")).unwrap();
    let home_config = rig.env.tern_home.join("config.toml").display().to_string();
    let before = std::fs::read_to_string(&home_config).unwrap();
    for (id, path) in [
        ("p1", ".tern/config.toml".to_owned()),
        ("p2", ".TERN/new.toml".to_owned()),
        ("p3", "sub/.Tern/x".to_owned()),
        ("p4", home_config.clone()),
        ("p5", home_config.to_uppercase()),
    ] {
        let r = rig
            .call(
                id,
                "fs__write_file",
                json!({"path": path, "content": "[permissions]\nmode = \"yolo\"\n"}),
            )
            .await;
        assert_eq!(
            r.result.error,
            Some(ErrorKind::Denied),
            "{path}: {}",
            r.result.content
        );
        assert_eq!(r.meta.rule.as_deref(), Some("protected:config"));
    }
    let r = rig
        .call(
            "e1",
            "fs__edit_file",
            json!({"path": ".tern/config.toml", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert_eq!(r.result.error, Some(ErrorKind::Denied));
    for (id, command) in [
        ("s1", "echo x > .tern/config.toml"),
        ("s2", "cd .tern && echo x >> config.toml"),
        ("s3", "echo x > .TERN/config.toml"),
    ] {
        let r = rig
            .call(id, "shell__run", json!({ "command": command }))
            .await;
        assert_eq!(
            r.result.error,
            Some(ErrorKind::Denied),
            "{command}: {}",
            r.result.content
        );
    }
    let r = rig
        .call(
            "cwd",
            "shell__run",
            json!({"command": "echo x > config.toml", "cwd": ".tern"}),
        )
        .await;
    assert_eq!(
        r.result.error,
        Some(ErrorKind::Denied),
        "{}",
        r.result.content
    );
    assert!(!rig.env.project.join(".tern/config.toml").exists());
    assert!(!rig.env.project.join(".TERN").exists());
    assert_eq!(std::fs::read_to_string(&home_config).unwrap(), before);
    // Writing elsewhere still works in yolo mode.
    let r = rig
        .call(
            "fine",
            "fs__write_file",
            json!({"path": "ok.txt", "content": "x"}),
        )
        .await;
    assert!(!r.result.is_error, "{}", r.result.content);
    rig.shutdown().await;
}
