//! A directory swapped for a symlink while grep or glob walk the tree must not
//! lead the walk outside the root (F2). A racer thread exchanges a real
//! directory and a symlink to an outside directory with `renameat2(RENAME_EXCHANGE)`
//! as fast as it can while the real server walks the tree over MCP. A walker
//! that opens directories or files by path follows the symlink within a few
//! calls; one that opens every level relative to a directory handle with
//! `O_NOFOLLOW` cannot.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;

use super::Fs;

/// Calls per tool. On a walker that follows the swapped link, roughly one call
/// in four leaks; 200 calls make a pass by luck impossible in practice.
const CALLS: usize = 500;
const SECRET: &str = "OUTSIDE-SECRET";

/// Pairs of (real directory, symlink to outside) swapped in turn: each is one
/// more chance per call for a path-following walker to be caught.
const PAIRS: usize = 4;

/// Swaps each pair in turn until `stop`, counting swaps.
fn racer(pairs: Vec<(PathBuf, PathBuf)>, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        for (a, b) in &pairs {
            renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).unwrap();
            swaps.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// root/dN (real directories) and root/lN -> OUTSIDE (a secret in every file name and line).
fn setup(fs: &Fs) -> Vec<(PathBuf, PathBuf)> {
    let outside = fs.outside().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    for i in 0..10 {
        std::fs::write(
            outside.join(format!("f{i:02}-{SECRET}.txt")),
            format!("needle {SECRET}\n"),
        )
        .unwrap();
    }
    (0..PAIRS)
        .map(|n| {
            for i in 0..10 {
                fs.put(&format!("d{n}/f{i:02}.txt"), "needle inside\n");
            }
            std::os::unix::fs::symlink(&outside, fs.path(&format!("l{n}"))).unwrap();
            (fs.path(&format!("d{n}")), fs.path(&format!("l{n}")))
        })
        .collect()
}

async fn race(tool: &'static str, args: serde_json::Value) {
    let fs = Fs::start().await;
    let pairs = setup(&fs);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let handle = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        std::thread::spawn(move || racer(pairs, stop, swaps))
    };
    let mut leaks = Vec::new();
    let mut inside = 0;
    for _ in 0..CALLS {
        let r = fs.call(tool, args.clone()).await;
        let text = super::text(&r);
        let structured = r
            .structured_content
            .map(|s| s.to_string())
            .unwrap_or_default();
        if text.contains(SECRET) || structured.contains(SECRET) {
            leaks.push(text);
        } else if text.contains("f00.txt") {
            inside += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(swaps > 1000, "the racer barely ran ({swaps} swaps)");
    assert!(inside > 0, "no call ever saw the real directory");
    assert!(
        leaks.is_empty(),
        "{tool}: {} of {CALLS} calls returned content or names from outside the root, e.g.:\n{}",
        leaks.len(),
        leaks[0]
    );
    fs.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_never_follows_a_directory_swapped_for_a_symlink() {
    race(
        "grep",
        json!({"pattern": "needle", "output_mode": "content"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_never_follows_a_directory_swapped_for_a_symlink() {
    race("glob", json!({"pattern": "**/*.txt"})).await;
}
