//! A project with its own git repository: its `.git` is never read or written, byte for byte,
//! and nothing of the user's git setup (config, hooks, fsmonitor, `GIT_*` variables) reaches
//! the store.

use std::process::Command;

use tern_checkpoint::{Kind, Meta, Store};

use super::{Env, fingerprint, project_git};

#[test]
fn a_projects_own_git_repository_is_untouched_by_everything() {
    let env = Env::new();
    let ws = env.ws.path();
    project_git(ws, &["init", "-q"]);
    env.put("src/app.py", "print('v1')\n");
    env.put(".gitignore", "*.pyc\n");
    project_git(ws, &["add", "-A"]);
    project_git(ws, &["commit", "-q", "-m", "init"]);
    env.put("src/app.py", "print('v2, uncommitted')\n");
    env.put("src/cache.pyc", "ignored by the project");
    // (The project's own `git status` refreshes its index: taken before the fingerprint.)
    let status_before = project_git(ws, &["status", "--porcelain"]);
    let git_before = fingerprint(&ws.join(".git"));

    let store = env.store();
    let first = store.checkpoint(&Meta::turn("s", 1, "go")).unwrap();
    let recorded = env.recorded(&store, &first.id);
    assert_eq!(
        recorded,
        [".gitignore", "src/app.py"],
        "no .git, no ignored file"
    );

    env.sh("sed -i 's/v2/v3/' src/app.py && echo new > new.txt && rm .gitignore");
    store.checkpoint(&Meta::new(Kind::Shell)).unwrap();
    assert!(store.diff(&first.id, None).unwrap().contains("+print('v3"));
    let restored = store.restore(&first.id).unwrap();
    assert_eq!(env.read("src/app.py"), "print('v2, uncommitted')\n");
    assert!(!env.path("new.txt").exists());
    store.restore(&restored.before).unwrap();
    store.restore(&first.id).unwrap();
    store.list().unwrap();
    store.prune(std::time::Duration::ZERO, 0).unwrap();

    assert_eq!(fingerprint(&ws.join(".git")), git_before, ".git changed");
    assert_eq!(
        project_git(ws, &["--no-optional-locks", "status", "--porcelain"]),
        status_before
    );
}

/// What the child process does when the variables below are set; a no-op otherwise (it is
/// only ever run by the test that follows).
#[test]
#[ignore = "run as a child process by hostile_git_settings_of_the_user_do_not_apply"]
fn hostile_child() {
    let (Some(home), Some(ws)) = (
        std::env::var_os("TERN_CP_TEST_HOME"),
        std::env::var_os("TERN_CP_TEST_WS"),
    ) else {
        return;
    };
    let ws = std::path::PathBuf::from(ws);
    let store = Store::open(home.as_ref(), &ws).unwrap();
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    std::fs::write(ws.join("crlf.txt"), "changed\n").unwrap();
    std::fs::write(ws.join("lib.rs"), "changed\n").unwrap();
    assert!(store.diff(&first.id, None).unwrap().contains("+changed"));
    store.restore(&first.id).unwrap();
    // `core.autocrlf` and the filter would have rewritten these; the excludes file would have
    // left `lib.rs` out.
    assert_eq!(
        std::fs::read(ws.join("crlf.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    assert_eq!(std::fs::read(ws.join("lib.rs")).unwrap(), b"fn f() {}\n");
}

#[test]
fn hostile_git_settings_of_the_user_do_not_apply() {
    let env = Env::new();
    let ws = env.ws.path();
    project_git(ws, &["init", "-q"]);
    env.put("crlf.txt", "one\r\ntwo\r\n");
    env.put("lib.rs", "fn f() {}\n");
    env.put(".gitattributes", "*.txt text eol=lf filter=evil\n");
    let fake_home = tempfile::tempdir().unwrap();
    let marker = fake_home.path().join("ran");
    let script = fake_home.path().join("evil.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch {}\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hooks = fake_home.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "reference-transaction",
        "post-index-change",
        "post-checkout",
    ] {
        std::fs::copy(&script, hooks.join(hook)).unwrap();
    }
    std::fs::write(fake_home.path().join("excludes"), "*.rs\n").unwrap();
    let s = script.display();
    std::fs::write(
        fake_home.path().join(".gitconfig"),
        format!(
            "[core]\n\tautocrlf = true\n\tfsmonitor = {s}\n\thooksPath = {}\n\texcludesFile = {}\n\
             [diff]\n\texternal = {s}\n[filter \"evil\"]\n\tclean = {s}\n\tsmudge = {s}\n\trequired = true\n",
            hooks.display(),
            fake_home.path().join("excludes").display()
        ),
    )
    .unwrap();
    let git_before = fingerprint(&ws.join(".git"));

    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::git_project::hostile_child",
            "--ignored",
            "--nocapture",
        ])
        .env("TERN_CP_TEST_HOME", env.home.path())
        .env("TERN_CP_TEST_WS", ws)
        .env("HOME", fake_home.path())
        .env("XDG_CONFIG_HOME", fake_home.path())
        .env_remove("GIT_CONFIG_GLOBAL")
        .env_remove("GIT_CONFIG_NOSYSTEM")
        .env("GIT_DIR", ws.join(".git"))
        .env("GIT_WORK_TREE", "/")
        .env("GIT_INDEX_FILE", ws.join(".git/index"))
        .env("GIT_EXTERNAL_DIFF", &script)
        .env("GIT_CONFIG_PARAMETERS", "'core.autocrlf'='true'")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!marker.exists(), "a program of the user's git config ran");
    assert_eq!(fingerprint(&ws.join(".git")), git_before);
}
