//! Two processes checkpointing one workspace at once: the store's lock serializes them, so
//! every call succeeds and every checkpoint holds what its process had written.

use std::process::Command;

use tern_checkpoint::{Kind, Meta, Store};

use super::Env;

const ROUNDS: usize = 15;

/// One of the two processes: writes `NAME/i.txt` then checkpoints, `ROUNDS` times, checking
/// each checkpoint holds the file just written. A no-op unless run by the test below.
#[test]
#[ignore = "run as a child process by concurrent_checkpoints_from_two_processes_all_land"]
fn checkpoint_loop_child() {
    let (Some(home), Some(ws), Ok(name)) = (
        std::env::var_os("TERN_CP_TEST_HOME"),
        std::env::var_os("TERN_CP_TEST_WS"),
        std::env::var("TERN_CP_TEST_NAME"),
    ) else {
        return;
    };
    let ws = std::path::PathBuf::from(ws);
    let store = Store::open(home.as_ref(), &ws).unwrap();
    std::fs::create_dir_all(ws.join(&name)).unwrap();
    let mut reused = 0;
    for i in 0..ROUNDS {
        let rel = format!("{name}/{i}.txt");
        std::fs::write(ws.join(&rel), format!("{name} {i}\n")).unwrap();
        let c = store
            .checkpoint(&Meta {
                session: Some(name.clone()),
                turn: Some(i as u64),
                ..Meta::new(Kind::Turn)
            })
            .unwrap();
        // The other process may have recorded our file first: then ours is a reuse of its
        // checkpoint, which must hold the file all the same.
        reused += usize::from(c.reused);
        let changes = store.changed_files(&c.id, None).unwrap();
        assert!(
            !changes
                .iter()
                .any(|ch| ch.path == std::path::Path::new(&rel)),
            "{rel} missing from its own checkpoint"
        );
    }
    #[allow(clippy::print_stdout)]
    {
        println!("reused {name} {reused}");
    }
}

#[test]
fn concurrent_checkpoints_from_two_processes_all_land() {
    let env = Env::new();
    env.put("base.txt", "base\n");
    // The store exists before the race (its creation is covered by the same lock).
    let store = env.store();
    let spawn = |name: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "suite::concurrency::checkpoint_loop_child",
                "--ignored",
                "--nocapture",
            ])
            .env("TERN_CP_TEST_HOME", env.home.path())
            .env("TERN_CP_TEST_WS", env.ws.path())
            .env("TERN_CP_TEST_NAME", name)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("alpha"), spawn("beta"));
    let mut reused = std::collections::HashMap::new();
    for (name, child) in [("alpha", a), ("beta", b)] {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{name} failed:\n{stdout}"
        );
        let line = format!("reused {name} ");
        let n: usize = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} did not report: {stdout}"));
        reused.insert(name, n);
    }
    let all = store.list().unwrap();
    let per = |s: &str| {
        all.iter()
            .filter(|c| c.meta.session.as_deref() == Some(s))
            .count()
    };
    // Every call recorded a checkpoint of its own or found its file in the other's.
    assert_eq!(per("alpha") + reused["alpha"], ROUNDS);
    assert_eq!(per("beta") + reused["beta"], ROUNDS);
    assert_eq!(all.len(), 2 * ROUNDS - reused["alpha"] - reused["beta"]);
    let last = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert!(
        last.reused,
        "the latest checkpoint already holds everything"
    );
    assert_eq!(last.files, 1 + 2 * ROUNDS);
    let fsck = Command::new("git")
        .arg("--git-dir")
        .arg(store.dir().join("repo"))
        .args(["fsck", "--strict", "--no-dangling"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}
