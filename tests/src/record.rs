//! Recording the sessions shipped in `examples/` (the demo, the eval tasks): a scripted model on
//! the mock server, the real `tern run` in a copy of the fixture, and the events file tern wrote
//! — with the scratch paths replaced by neutral ones, so the committed file names no machine.
//!
//! The tests that use this compare what they record with the shipped file; with
//! `TERN_RECORD_EXAMPLES=1` they write it instead (how the examples are re-recorded).

use std::path::Path;

use serde_json::Value;
use tern_model::mock::MockResponse;

use crate::run_env::RunEnv;

/// Where the recorded workspace appears to have been.
pub const NEUTRAL_HOME: &str = "/home/dev/.tern";

/// A recorded session.
pub struct Recorded {
    /// The events file's text, paths neutralised.
    pub jsonl: String,
    /// The exit code of `tern run`.
    pub code: Option<i32>,
    pub stderr: String,
    /// The fixture copy after the run.
    pub env: RunEnv,
}

/// Copies the directory `from` into `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `tern run ARGS` in a copy of `fixture` against `turns`; the recorded cwd becomes
/// `root` (e.g. `/home/dev/median`).
pub async fn record(
    fixture: &Path,
    turns: Vec<MockResponse>,
    args: &[&str],
    root: &str,
) -> Recorded {
    let env = RunEnv::new().await;
    copy_dir(fixture, env.dir.path());
    for t in turns {
        env.server.enqueue(t);
    }
    let out = env.run(args).await;
    let runs = env.home.path().join("runs");
    let mut dirs: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let raw = std::fs::read_to_string(dirs.last().unwrap().join("events.jsonl")).unwrap();
    let dir = env.dir.path().canonicalize().unwrap();
    let home = env.home.path().canonicalize().unwrap();
    let mut jsonl = raw
        .replace(dir.to_str().unwrap(), root)
        .replace(home.to_str().unwrap(), NEUTRAL_HOME);
    // Spelled as given too, when a temp dir path is not canonical.
    jsonl = jsonl
        .replace(env.dir.path().to_str().unwrap(), root)
        .replace(env.home.path().to_str().unwrap(), NEUTRAL_HOME);
    Recorded {
        jsonl,
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        env,
    }
}

/// The model's side of a recording — each turn's text and calls — which must not change when
/// a session is re-recorded unless its script did.
pub fn model_turns(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "model_response")
        .map(|e| {
            serde_json::json!({
                "text": e["text"], "calls": e["calls"], "stop_reason": e["stop_reason"],
                "input_tokens": e["input_tokens"], "cache_read_tokens": e["cache_read_tokens"],
            })
        })
        .collect()
}

/// With `TERN_RECORD_EXAMPLES=1`, writes `recorded` to `shipped`; otherwise checks that the
/// shipped recording holds the same model turns (so the script and the file agree).
pub fn check_or_write(shipped: &Path, recorded: &str) {
    if std::env::var_os("TERN_RECORD_EXAMPLES").is_some_and(|v| v == "1") {
        std::fs::write(shipped, recorded).unwrap();
        return;
    }
    let text = std::fs::read_to_string(shipped).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}): record it with TERN_RECORD_EXAMPLES=1",
            shipped.display()
        )
    });
    assert_eq!(
        model_turns(&text),
        model_turns(recorded),
        "{} no longer matches its script: re-record with TERN_RECORD_EXAMPLES=1",
        shipped.display()
    );
}
