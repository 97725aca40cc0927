//! What is not recorded — ignored files, files over the size limit, nested repositories — and
//! that a restore leaves all of it alone.

use std::path::PathBuf;

use tern_checkpoint::{Error, Kind, Limits, Meta, SkipReason, Skipped};

use super::{Env, project_git};

fn small_files() -> Limits {
    Limits {
        max_file_bytes: 1000,
        ..Limits::default()
    }
}

#[test]
fn ignored_and_oversized_files_are_not_recorded_and_a_restore_leaves_them_alone() {
    let env = Env::new();
    env.put(".gitignore", "target/\n*.log\n");
    env.put("src/lib.rs", "v1\n");
    env.put("target/debug/app", "build output v1");
    env.put("app.log", "log v1");
    env.put("big.bin", vec![7u8; 5000]);
    env.put("grows.txt", "small\n");
    let store = env.store_with(small_files());
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert_eq!(
        env.recorded(&store, &first.id),
        [".gitignore", "grows.txt", "src/lib.rs"]
    );
    assert_eq!(
        first.skipped,
        [Skipped {
            path: PathBuf::from("big.bin"),
            reason: SkipReason::TooLarge { bytes: 5000 }
        }]
    );

    env.put("src/lib.rs", "v2\n");
    env.put("target/debug/app", "build output v2");
    env.put("app.log", "log v2");
    env.put("big.bin", vec![8u8; 6000]);
    env.put("grows.txt", "x".repeat(2000));
    let second = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert!(
        second
            .skipped
            .iter()
            .any(|s| s.path == std::path::Path::new("grows.txt")),
        "{:?}",
        second.skipped
    );

    let restored = store.restore(&first.id).unwrap();
    assert_eq!(env.read("src/lib.rs"), "v1\n");
    assert_eq!(
        env.read("target/debug/app"),
        "build output v2",
        "ignored: untouched"
    );
    assert_eq!(env.read("app.log"), "log v2");
    assert_eq!(std::fs::read(env.path("big.bin")).unwrap(), vec![8u8; 6000]);
    // It was recorded small; now it is too large to record, so writing the old version back
    // would lose the new one for good: kept, and said so.
    assert_eq!(env.read("grows.txt"), "x".repeat(2000));
    assert_eq!(restored.kept.len(), 1, "{:?}", restored.kept);
    assert_eq!(restored.kept[0].path, PathBuf::from("grows.txt"));
}

#[test]
fn a_nested_repository_is_skipped_and_untouched() {
    let env = Env::new();
    env.put("top.txt", "top\n");
    let nested = env.path("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    project_git(&nested, &["init", "-q"]);
    env.put("vendor/lib/code.c", "int x;\n");
    let store = env.store();
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert_eq!(env.recorded(&store, &first.id), ["top.txt"]);
    assert_eq!(
        first.skipped,
        [Skipped {
            path: PathBuf::from("vendor/lib"),
            reason: SkipReason::NestedRepository
        }]
    );
    env.put("vendor/lib/code.c", "int y;\n");
    env.put("top.txt", "changed\n");
    store.restore(&first.id).unwrap();
    assert_eq!(env.read("top.txt"), "top\n");
    assert_eq!(env.read("vendor/lib/code.c"), "int y;\n");
}

#[test]
fn a_checkpoint_over_the_size_bound_records_nothing_and_says_what_to_do() {
    let env = Env::new();
    for i in 0..10 {
        env.put(&format!("data/{i}.csv"), vec![b'1'; 500]);
    }
    let store = env.store_with(Limits {
        max_checkpoint_bytes: 4000,
        ..Limits::default()
    });
    let err = store.checkpoint(&Meta::new(Kind::Manual)).unwrap_err();
    let Error::TooLarge {
        files,
        bytes,
        limit,
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*files, *bytes, *limit), (10, 5000, 4000));
    let text = err.to_string();
    assert!(
        text.contains("hint:") && text.contains(".gitignore"),
        "{text}"
    );
    assert!(store.list().unwrap().is_empty());

    // Once the data is ignored, checkpoints work.
    env.put(".gitignore", "data/\n");
    store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
}

#[test]
fn a_tracked_file_replaced_by_a_directory_and_back_is_restored() {
    let env = Env::new();
    env.put("thing", "a file\n");
    let store = env.store();
    let first = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    std::fs::remove_file(env.path("thing")).unwrap();
    env.put("thing/inside.txt", "now a directory\n");
    let second = store.checkpoint(&Meta::new(Kind::Manual)).unwrap();
    assert_eq!(env.recorded(&store, &second.id), ["thing/inside.txt"]);
    store.restore(&first.id).unwrap();
    assert_eq!(env.read("thing"), "a file\n");
    store.restore(&second.id).unwrap();
    assert_eq!(env.read("thing/inside.txt"), "now a directory\n");
}
