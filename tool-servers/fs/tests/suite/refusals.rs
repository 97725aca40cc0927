//! Refusals come back as `isError` results naming the path, and the server lives on.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Fs, s};

#[tokio::test]
async fn paths_outside_the_roots_are_refused_by_every_tool() {
    let fs = Fs::start().await;
    std::fs::write(fs.outside().join("secret.txt"), "secret").unwrap();
    std::fs::create_dir(fs.outside().join("root-evil")).unwrap();
    std::fs::write(fs.outside().join("root-evil/x"), "evil").unwrap();
    std::os::unix::fs::symlink(fs.outside(), fs.path("escape")).unwrap();
    let evil = s(&fs.outside().join("root-evil/x"));
    for path in [
        "../secret.txt",
        "escape/secret.txt",
        "/etc/passwd",
        "/proc/self/root/etc/passwd",
        evil.as_str(),
    ] {
        let text = fs.refused("read_file", json!({"path": path}), path).await;
        assert!(text.contains("outside every root"), "{path}: {text}");
        assert!(
            !text.contains("secret\n") && !text.contains("root:"),
            "leaked: {text}"
        );
    }
    fs.refused(
        "write_file",
        json!({"path": "../planted", "content": "x"}),
        "../planted",
    )
    .await;
    assert!(!fs.outside().join("planted").exists());
    fs.refused(
        "write_file",
        json!({"path": "escape/planted", "content": "x"}),
        "escape/planted",
    )
    .await;
    assert!(!fs.outside().join("planted").exists());
    fs.refused(
        "edit_file",
        json!({"path": "escape/secret.txt", "old_string": "secret", "new_string": "x"}),
        "escape/secret.txt",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(fs.outside().join("secret.txt")).unwrap(),
        "secret"
    );
    fs.refused("list_dir", json!({"path": "escape"}), "escape")
        .await;
    fs.refused("glob", json!({"pattern": "*", "path": ".."}), "..")
        .await;
    fs.refused(
        "grep",
        json!({"pattern": "secret", "path": "escape"}),
        "escape",
    )
    .await;
    fs.stop().await;
}

#[tokio::test]
async fn odd_files_are_refused_without_blocking() {
    let fs = Fs::start().await;
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fs.path("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let started = Instant::now();
    let text = fs
        .refused("read_file", json!({"path": "fifo"}), "fifo")
        .await;
    assert!(text.contains("FIFO"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // grep walks past it rather than blocking on it.
    fs.put("a.txt", "needle\n");
    let (_, st) = fs.ok("grep", json!({"pattern": "needle"})).await;
    assert_eq!(st["files"], json!([s(&fs.path("a.txt"))]));
    std::os::unix::fs::symlink("/dev/zero", fs.path("zero")).unwrap();
    fs.refused("read_file", json!({"path": "zero"}), "zero")
        .await;
    fs.refused("read_file", json!({"path": "/dev/zero"}), "/dev/zero")
        .await;
    fs.stop().await;
}

#[tokio::test]
async fn binary_directories_and_missing_files_get_clear_messages() {
    let fs = Fs::start().await;
    std::fs::write(fs.path("blob.bin"), b"\x7fELF\0\0\x01binary").unwrap();
    let text = fs
        .refused("read_file", json!({"path": "blob.bin"}), "blob.bin")
        .await;
    assert!(text.contains("binary"), "{text}");
    std::fs::create_dir(fs.path("d")).unwrap();
    let text = fs.refused("read_file", json!({"path": "d"}), "d").await;
    assert!(text.contains("directory"), "{text}");
    let text = fs
        .refused("read_file", json!({"path": "missing.txt"}), "missing.txt")
        .await;
    assert!(text.contains("does not exist"), "{text}");
    fs.stop().await;
}

#[tokio::test]
async fn malformed_paths_never_crash_the_server() {
    let fs = Fs::start().await;
    let long = "a/".repeat(2100);
    let name = "n".repeat(300);
    for (path, why) in [
        ("a\0b", "NUL"),
        ("", "empty"),
        (long.as_str(), "4096"),
        (name.as_str(), "255"),
    ] {
        let text = fs.refused("read_file", json!({"path": path}), path).await;
        assert!(text.contains(why), "{why}: {text}");
    }
    // Bad arguments are a tool error too, not a dead server.
    let r = fs.call("read_file", json!({"offset": 3})).await;
    assert_eq!(r.is_error, Some(true));
    fs.put("ok.txt", "still alive\n");
    let (text, _) = fs.ok("read_file", json!({"path": "ok.txt"})).await;
    assert!(text.contains("still alive"));
    fs.stop().await;
}

#[tokio::test]
async fn a_missing_root_fails_at_startup_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-fs"))
        .arg("--root")
        .arg(&missing)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol: nothing else goes there"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nope"), "{stderr}");
}
