//! A restore puts back every byte and permission bit, deletes what was created since, and can
//! itself be undone — in a directory that is not a git repository.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use tern_checkpoint::{ChangeKind, Kind, Meta};

use super::Env;

/// A small project with the kinds of entries a restore must get right.
fn project(env: &Env) {
    env.put("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    env.put(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
    );
    env.put("README.md", "# demo\n\nline two\n");
    env.put("empty.txt", "");
    env.put("data/blob.bin", [0u8, 1, 2, 255, 0, 13, 10, 26]);
    env.put("docs/deep/er/page.md", "deep\n");
    env.put("run.sh", "#!/bin/sh\necho run\n");
    env.chmod("run.sh", 0o755);
    env.put(".env", "SECRET=1\n");
    env.chmod(".env", 0o600);
    env.put("crlf.txt", "windows\r\nline\r\n");
    // A file name that is not UTF-8.
    let odd = env
        .ws
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(odd, "latin-1 name\n").unwrap();
    std::os::unix::fs::symlink("src/main.rs", env.path("main-link")).unwrap();
}

#[test]
fn restore_brings_back_every_byte_and_mode_and_the_undo_brings_back_the_rest() {
    let env = Env::new();
    project(&env);
    let store = env.store();
    let original = env.tree();
    let first = store.checkpoint(&Meta::turn("s1", 1, "make it")).unwrap();
    assert!(!first.reused);
    assert_eq!(first.files, 11, "{:?}", env.recorded(&store, &first.id));

    // Turn 1 edits through the file tools; turn 2 through the shell.
    env.put(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n",
    );
    env.put("notes/new/todo.md", "created since\n");
    store.checkpoint(&Meta::new(Kind::Shell)).unwrap();
    env.sh("sed -i 's/hello/bye/' src/main.rs");
    env.sh("rm README.md docs/deep/er/page.md main-link");
    env.sh("chmod 644 .env && chmod -x run.sh && chmod +x empty.txt");
    env.sh("ln -s elsewhere data/blob.bin.link && rm data/blob.bin && ln -s gone data/blob.bin");
    env.sh("printf 'unix\\n' > crlf.txt");
    let edited = env.tree();
    assert_ne!(edited, original);

    let changes = store.changed_files(&first.id, None).unwrap();
    let kind = |p: &str| {
        changes
            .iter()
            .find(|c| c.path == Path::new(p))
            .map(|c| c.kind)
    };
    assert_eq!(kind("src/main.rs"), Some(ChangeKind::Modified));
    assert_eq!(kind("README.md"), Some(ChangeKind::Deleted));
    assert_eq!(kind("notes/new/todo.md"), Some(ChangeKind::Added));
    assert_eq!(kind("data/blob.bin"), Some(ChangeKind::TypeChanged));
    assert_eq!(kind(".env"), Some(ChangeKind::ModeChanged));
    assert_eq!(
        kind("run.sh"),
        Some(ChangeKind::Modified),
        "the executable bit is git's"
    );
    assert_eq!(kind("empty.txt"), Some(ChangeKind::Modified));

    let restored = store.restore(&first.id).unwrap();
    assert_eq!(env.tree(), original, "every byte, symlink and mode is back");
    assert!(
        !env.path("notes").exists(),
        "directories emptied by the restore go"
    );
    assert!(restored.kept.is_empty(), "{:?}", restored.kept);
    assert!(
        restored
            .deleted
            .contains(&PathBuf::from("notes/new/todo.md"))
    );
    assert!(restored.written.contains(&PathBuf::from("README.md")));
    assert_eq!(restored.modes_restored, [PathBuf::from(".env")]);
    assert_eq!(restored.target, first.id);

    // Undo the restore: back to the edited state, byte for byte.
    let undo = store.restore(&restored.before).unwrap();
    assert_eq!(env.tree(), edited);
    // And undo the undo.
    store.restore(&undo.before).unwrap();
    assert_eq!(env.tree(), original);

    let kinds: Vec<_> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|c| c.meta.kind)
        .collect();
    assert!(
        kinds.contains(&Kind::BeforeRestore {
            target: first.id.clone()
        }),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&Kind::Restored {
            target: first.id.clone(),
            before: restored.before.clone()
        }),
        "{kinds:?}"
    );
}

#[test]
fn an_unchanged_workspace_records_nothing_new() {
    let env = Env::new();
    env.put("a.txt", "a\n");
    let store = env.store();
    let first = store.checkpoint(&Meta::turn("s", 1, "one")).unwrap();
    let again = store.checkpoint(&Meta::turn("s", 2, "two")).unwrap();
    assert!(again.reused);
    assert_eq!(again.id, first.id);
    // A touch changes the stat data, not the content: still nothing new.
    env.sh("touch a.txt");
    assert!(store.checkpoint(&Meta::new(Kind::Shell)).unwrap().reused);
    // A chmod that git cannot see is a change.
    env.chmod("a.txt", 0o600);
    let third = store.checkpoint(&Meta::new(Kind::Shell)).unwrap();
    assert!(!third.reused);
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].meta, Meta::turn("s", 1, "one"));
    assert_eq!(listed[1].id, third.id);
    assert!(listed[0].created < listed[1].created);
}

#[test]
fn diff_shows_changes_with_workspace_relative_paths() {
    let env = Env::new();
    env.put("src/a.txt", "one\ntwo\n");
    env.put("gone.txt", "bye\n");
    env.put("key", "k\n");
    env.chmod("key", 0o644);
    let store = env.store();
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    env.put("src/a.txt", "one\n2\n");
    env.put("fresh.txt", "new\n");
    std::fs::remove_file(env.path("gone.txt")).unwrap();
    env.chmod("key", 0o600);

    let diff = store.diff(&first.id, None).unwrap();
    for needle in [
        "diff --git a/src/a.txt b/src/a.txt",
        "--- a/src/a.txt\n+++ b/src/a.txt",
        "-two\n+2\n",
        "+++ b/fresh.txt",
        "--- a/gone.txt\n+++ /dev/null",
        "diff --git a/key b/key\nold mode 100644\nnew mode 100600\n",
    ] {
        assert!(diff.contains(needle), "missing {needle:?} in:\n{diff}");
    }
    assert!(!diff.contains(env.ws.path().to_str().unwrap()), "{diff}");

    // Between two checkpoints, the same.
    let second = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert_eq!(store.diff(&first.id, Some(&second.id)).unwrap(), diff);
    assert_eq!(store.diff(&second.id, None).unwrap(), "");
}

#[test]
fn a_chmod_is_seen_both_right_after_a_write_and_long_after() {
    let env = Env::new();
    env.put("fresh.sh", "echo\n");
    env.put("old.sh", "echo\n");
    let store = env.store();
    store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    // Within the same timestamp tick as git recorded it: stat data cannot tell.
    env.chmod("fresh.sh", 0o700);
    let racy = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert!(!racy.reused);
    // Long after (past the window in which the store re-reads recent files' bits): the
    // inode's change time tells.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    env.chmod("old.sh", 0o600);
    let late = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert!(!late.reused);
    let changes = store.changed_files(&racy.id, Some(&late.id)).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].path, Path::new("old.sh"));
    assert_eq!(changes[0].kind, ChangeKind::ModeChanged);
}
