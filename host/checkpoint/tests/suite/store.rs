//! The store itself: private, never through a symlink, one per workspace, prunable.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use tern_checkpoint::{Error, Kind, Meta, Store};

use super::Env;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_store_is_private_and_names_its_workspace() {
    let env = Env::new();
    env.put("a", "a");
    let store = env.store();
    store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    let dir = store.dir();
    assert!(dir.starts_with(env.home.path().join("checkpoints")));
    assert_eq!(mode(&env.home.path().join("checkpoints")), 0o700);
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(&dir.join("repo")), 0o700);
    for (path, _) in super::tree(dir, &[]) {
        let m = std::fs::symlink_metadata(dir.join(&path))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(m & 0o077, 0, "{} is readable by others", path.display());
    }
    let recorded = std::fs::read(dir.join("workspace")).unwrap();
    assert_eq!(
        recorded,
        std::fs::canonicalize(env.ws.path())
            .unwrap()
            .as_os_str()
            .as_encoded_bytes()
    );

    // Another workspace has a store of its own.
    let other = tempfile::tempdir().unwrap();
    let second = Store::open(env.home.path(), other.path()).unwrap();
    assert_ne!(second.dir(), dir);
}

#[test]
fn a_symlink_in_place_of_the_store_is_refused() {
    let env = Env::new();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), env.home.path().join("checkpoints")).unwrap();
    let err = Store::open(env.home.path(), env.ws.path()).unwrap_err();
    assert!(matches!(err, Error::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("hint:"), "{err}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn a_home_inside_the_workspace_is_never_recorded() {
    let ws = tempfile::tempdir().unwrap();
    let home = ws.path().join(".tern-home");
    std::fs::write(ws.path().join("code.rs"), "x").unwrap();
    let store = Store::open(&home, ws.path()).unwrap();
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    std::fs::write(home.join("audit.jsonl"), "{}").unwrap();
    let second = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert!(
        second.reused,
        "the store and tern's files are not part of the workspace"
    );
    assert_eq!(first.files, 1);
}

#[test]
fn prune_drops_old_checkpoints_and_keeps_the_latest() {
    let env = Env::new();
    let store = env.store();
    let mut ids = Vec::new();
    for i in 0..5 {
        env.put("f.txt", format!("{i}\n").repeat(1000));
        ids.push(store.checkpoint(&Meta::new(Kind::Manual)).unwrap().id);
    }
    // Nothing is old enough and the store fits: nothing to do.
    let none = store.prune(Duration::from_secs(3600), u64::MAX).unwrap();
    assert_eq!((none.removed, none.kept), (0, 5));

    std::thread::sleep(Duration::from_millis(20));
    env.put("f.txt", "last\n");
    let last = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    let by_age = store.prune(Duration::from_millis(10), u64::MAX).unwrap();
    assert_eq!((by_age.removed, by_age.kept), (5, 1));
    let listed: Vec<_> = store.list().unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(listed, std::slice::from_ref(&last.id));
    let err = store.restore(&ids[0]).unwrap_err();
    assert!(matches!(err, Error::UnknownCheckpoint { .. }), "{err}");

    // By size: everything but the latest goes when nothing fits.
    for i in 0..3 {
        env.put("f.txt", format!("again {i}\n"));
        store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    }
    let by_size = store.prune(Duration::from_secs(3600), 0).unwrap();
    assert_eq!(by_size.kept, 1);
    assert_eq!(by_size.removed, 3);
    assert_eq!(env.read("f.txt"), "again 2\n");
    // What is left still restores and diffs.
    let kept = store.list().unwrap().pop().unwrap();
    env.put("f.txt", "changed\n");
    assert!(store.diff(&kept.id, None).unwrap().contains("+changed"));
    store.restore(&kept.id).unwrap();
    assert_eq!(env.read("f.txt"), "again 2\n");
}

#[test]
fn bad_ids_are_told_apart_from_unknown_ones() {
    let env = Env::new();
    let store = env.store();
    let err = "nope".parse::<tern_checkpoint::Id>().unwrap_err();
    assert!(matches!(err, Error::InvalidId(_)));
    let unknown: tern_checkpoint::Id = "0".repeat(40).parse().unwrap();
    let err = store.get(&unknown).unwrap_err();
    assert!(matches!(err, Error::UnknownCheckpoint { .. }), "{err}");
    assert!(err.to_string().contains("hint:"));
}
