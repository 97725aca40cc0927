//! `cwd` must resolve inside `--root`; every refusal is a tool error, not a crash.

use serde_json::json;

use super::support::{is_error, start, text};

#[tokio::test]
async fn cwd_inside_the_root_is_used() {
    let s = start(&[], &[]).await;
    std::fs::create_dir(s.root.join("sub")).unwrap();
    let r = s.run(json!({"command": "pwd", "cwd": "sub"})).await;
    assert!(!is_error(&r));
    assert!(text(&r).starts_with(&format!("{}\n", s.root.join("sub").display())));
    let r = s.run(json!({"command": "pwd"})).await;
    assert!(text(&r).starts_with(&format!("{}\n", s.root.display())));
}

#[tokio::test]
async fn cwd_outside_the_root_is_refused() {
    let s = start(&[], &[]).await;
    let base = s.dir.path().canonicalize().unwrap();
    let evil = base.join("root-evil");
    std::fs::create_dir(&evil).unwrap();
    std::os::unix::fs::symlink(&evil, s.root.join("escape")).unwrap();
    let evil_abs = evil.display().to_string();
    for bad in [
        evil_abs.as_str(),
        "../root-evil",
        "..",
        "escape",
        "/",
        "does-not-exist",
    ] {
        let r = s.run(json!({"command": "touch PWNED", "cwd": bad})).await;
        let t = text(&r);
        assert!(is_error(&r), "{bad}: {t}");
        assert!(t.contains(bad), "error names the path: {t}");
    }
    assert!(!evil.join("PWNED").exists());
    assert!(!base.join("PWNED").exists());
    // The server is still serving after the refusals.
    let r = s.run(json!({"command": "echo alive"})).await;
    assert!(text(&r).starts_with("alive"));
}

#[tokio::test]
async fn a_bad_root_fails_at_startup_on_stderr() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-shell"))
        .args(["--root", "/definitely/not/here"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout is the protocol");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--root /definitely/not/here"), "{err}");
}
