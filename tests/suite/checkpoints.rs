//! Checkpoints and rewind (issue 20): the workspace is recorded before each turn, so
//! `tern rewind` puts back edits made through `fs__edit_file` *and* through `shell__run`, in a
//! directory without git; the conversation can be rewound on its own (the next request no
//! longer carries the later turns); a rewind can be undone; a project's own `.git` is never
//! touched.

use std::{collections::BTreeMap, path::Path};

use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;

/// Every file under `dir` with its bytes (`.git` included when `with_git`).
fn tree(dir: &Path, with_git: bool) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if !with_git && rel == ".git" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn edit_turn(env: &RunEnv) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_edit",
                "fs__edit_file",
                &[r#"{"path":"a.txt","old_string":"one","new_string":"ONE"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Edited a.txt.");
}

fn shell_turn(env: &RunEnv) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_sh",
                "shell__run",
                &[r#"{"command":"sed -i s/bee/BEE/ b.txt && rm c.txt && mkdir -p sub && echo new > sub/d.txt"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Changed the rest through the shell.");
}

async fn rewind(env: &RunEnv, args: &[&str]) -> String {
    let mut full = vec!["rewind"];
    full.extend(args);
    let out = env.run(&full).await;
    assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn rewind_restores_fs_and_shell_edits_and_the_conversation_and_can_be_undone() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.join("b.txt"), "bee\n").unwrap();
    std::fs::write(dir.join("c.txt"), "sea\n").unwrap();
    let original = tree(dir, false);

    edit_turn(&env);
    let out = env
        .run(&[
            "run",
            "edit a",
            "--mode",
            "yolo",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let events = env.events();
    let recorded = of_type(&events, "checkpoint_recorded");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["turn"], 1);
    assert_eq!(recorded[0]["files"], 3);
    shell_turn(&env);
    let out = env
        .run(&["run", "--continue", "now the shell", "--mode", "yolo"])
        .await;
    assert_exit(&out, 0);
    let changed = tree(dir, false);
    assert_eq!(changed["a.txt"], b"ONE\n");
    assert_eq!(changed["b.txt"], b"BEE\n");
    assert!(!changed.contains_key("c.txt"));
    assert_eq!(changed["sub/d.txt"], b"new\n");
    // The shadow store is under $TERN_HOME; the project got no .git.
    assert!(!dir.join(".git").exists());
    assert!(env.home.path().join("checkpoints").is_dir());

    // The listing: both turns, with what each changed.
    let listing = rewind(&env, &[]).await;
    assert!(
        listing.contains("edit a  (1 file(s) changed: a.txt)"),
        "{listing}"
    );
    assert!(
        listing.contains("now the shell  (3 file(s) changed: b.txt, c.txt, sub/d.txt)"),
        "{listing}"
    );

    // The conversation alone, to before turn 2: the files stay, the next request has turn 1
    // and not turn 2.
    let said = rewind(&env, &["--to", "2", "--conversation"]).await;
    assert!(said.contains("conversation: "), "{said}");
    assert_eq!(
        tree(dir, false),
        changed,
        "a conversation rewind keeps the files"
    );
    env.answer("Back at turn 2.");
    let out = env.run(&["run", "--continue", "where are we?"]).await;
    assert_exit(&out, 0);
    let last = env.server.requests().last().unwrap().json();
    let sent = last["messages"].to_string();
    assert!(sent.contains("edit a"), "{sent}");
    assert!(sent.contains("where are we?"), "{sent}");
    assert!(
        !sent.contains("now the shell"),
        "turn 2 was rewound: {sent}"
    );

    // The code, to before turn 1: every byte as it was, shell edits included.
    let said = rewind(&env, &["--to", "1", "--code"]).await;
    assert!(said.contains("written back"), "{said}");
    assert_eq!(tree(dir, false), original);
    assert!(
        !dir.join("sub").exists(),
        "the directory the shell made is gone"
    );

    // Undo the rewind: the files as it found them.
    let said = rewind(&env, &["--undo"]).await;
    assert!(said.contains("files: "), "{said}");
    assert_eq!(tree(dir, false), changed);
    // A turn the session does not have is a usage error naming the turns it has.
    let out = env.run(&["rewind", "--to", "9"]).await;
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no turn 9") && err.contains("turns are 1..=3"),
        "{err}"
    );
    // Nothing left to undo.
    let out = env.run(&["rewind", "--undo"]).await;
    assert_exit(&out, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to undo"), "{err}");
}

#[tokio::test]
async fn a_projects_own_git_repository_is_never_touched() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", env.home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@e", "add", "a.txt"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-qm",
        "first",
    ]);
    let original = tree(dir, true);

    edit_turn(&env);
    let out = env.run(&["run", "edit a", "--mode", "yolo"]).await;
    assert_exit(&out, 0);
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"ONE\n");
    rewind(&env, &["--to", "1"]).await;
    assert_eq!(
        tree(dir, true),
        original,
        "the work tree and .git as they were"
    );
    rewind(&env, &["--undo"]).await;
    let after = tree(dir, true);
    assert_eq!(after["a.txt"], b"ONE\n");
    let git_files = |t: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        t.iter()
            .filter(|(k, _)| k.starts_with(".git/"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(git_files(&after), git_files(&original), ".git untouched");
}

#[tokio::test]
async fn with_checkpoints_off_no_store_is_made_and_a_code_rewind_says_why() {
    let env = RunEnv::new().await;
    env.add_servers("[checkpoints]\nenabled = false\n");
    std::fs::write(env.dir.path().join("a.txt"), "one\n").unwrap();
    edit_turn(&env);
    let out = env.run(&["run", "edit a", "--mode", "yolo"]).await;
    assert_exit(&out, 0);
    assert!(of_type(&env.events(), "checkpoint_recorded").is_empty());
    let stores = std::fs::read_dir(env.home.path().join("checkpoints"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(stores, 0, "no store when checkpoints are off");
    let out = env.run(&["rewind", "--to", "1", "--code"]).await;
    assert_exit(&out, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no checkpoint was recorded before turn 1"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    // The conversation can still be rewound.
    rewind(&env, &["--to", "1", "--conversation"]).await;
}

/// `tern rewind` without a session id works on this project's newest session only: typed in
/// project B it must not restore project A's files (the newest session of the machine).
#[tokio::test]
async fn rewind_without_an_id_never_touches_another_projects_files() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "one\n").unwrap();
    edit_turn(&env);
    let out = env.run(&["run", "edit a", "--mode", "yolo"]).await;
    assert_exit(&out, 0);
    assert_eq!(std::fs::read(env.dir.path().join("a.txt")).unwrap(), b"ONE\n");

    let other = tempfile::tempdir().unwrap();
    for args in [&["rewind", "--to", "1", "--code"][..], &["rewind"][..]] {
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            env.command(args).current_dir(other.path()).output(),
        )
        .await
        .expect("tern rewind did not finish")
        .unwrap();
        assert_exit(&out, 1);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no saved session of this project"), "{err}");
        assert!(err.contains("hint: "), "{err}");
    }
    // Project A's edit stands; its own directory still rewinds it.
    assert_eq!(std::fs::read(env.dir.path().join("a.txt")).unwrap(), b"ONE\n");
    rewind(&env, &["--to", "1", "--code"]).await;
    assert_eq!(std::fs::read(env.dir.path().join("a.txt")).unwrap(), b"one\n");
}

/// The REPL: `/diff` since the turn's checkpoint, `/rewind` listing the turns, rewinding both,
/// `/undo` of it, rewinding again — and the next line is sent without the rewound turn.
#[tokio::test]
async fn the_repl_lists_rewinds_undoes_and_diffs() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "one\n").unwrap();
    edit_turn(&env);
    env.answer("Hi.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "edit a\r"},
        {"expect": "Edited a.txt."},
        {"expect": "tern> "},
        {"send": "/diff\r"},
        {"expect": "+ONE"},
        {"expect": "tern> "},
        {"send": "/rewind\r"},
        {"expect": "edit a  (1 file(s) changed: a.txt)"},
        {"expect": "tern> "},
        {"send": "/rewind 1\r"},
        {"expect": "conversation: 0 message(s) kept"},
        {"expect": "tern> "},
        {"send": "/undo\r"},
        {"expect": "files: 1 written back"},
        {"expect": "tern> "},
        {"send": "/rewind 1 both\r"},
        {"expect": "files: 1 written back"},
        {"expect": "tern> "},
        {"send": "say hi\r"},
        {"expect": "Hi."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["--mode", "accept-edits"]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("a.txt")).unwrap(),
        "one\n"
    );
    let last = env.server.requests().last().unwrap().json();
    let sent = last["messages"].to_string();
    assert!(sent.contains("say hi"), "{sent}");
    assert!(
        !sent.contains("edit a"),
        "the rewound turn is not sent: {sent}"
    );
}

#[tokio::test]
async fn in_the_home_directory_checkpoints_are_off_with_a_notice() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "one\n").unwrap();
    edit_turn(&env);
    let out = env
        .command(&["run", "edit a", "--mode", "yolo"])
        .env("HOME", env.dir.path())
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let events = env.events();
    assert!(of_type(&events, "checkpoint_recorded").is_empty());
    let notices: Vec<String> = of_type(&events, "notice")
        .iter()
        .map(|n| n["message"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("checkpoints are off in")),
        "{notices:?}"
    );
}

#[tokio::test]
async fn each_shell_call_is_a_point_and_a_rewind_to_between_two_is_byte_exact() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("b.txt"), "bee\n").unwrap();
    std::fs::write(dir.join("keep.bin"), [0u8, 159, 146, 150, 255]).unwrap();
    let original = tree(dir, false);
    // One turn, two shell calls: the second undoes part of the first and adds more.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_s1",
                "shell__run",
                &[r#"{"command":"echo one > x.txt && sed -i s/bee/BEE/ b.txt"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_s2",
                "shell__run",
                &[r#"{"command":"rm b.txt && echo two >> x.txt && mkdir d && printf '\\000\\377' > d/e.bin"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Two commands ran.");
    let out = env
        .run(&[
            "run",
            "run two commands",
            "--mode",
            "yolo",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let after = tree(dir, false);
    assert_eq!(after["x.txt"], b"one\ntwo\n");
    assert_eq!(after["d/e.bin"], [0u8, 255]);
    assert!(!after.contains_key("b.txt"));
    // The state between the two calls, as the first one left it.
    let mut between = original.clone();
    between.insert("x.txt".into(), b"one\n".to_vec());
    between.insert("b.txt".into(), b"BEE\n".to_vec());

    // One checkpoint before the turn and one before each shell call.
    let events = env.events();
    let recorded = of_type(&events, "checkpoint_recorded");
    let points: Vec<(u64, Option<u64>)> = recorded
        .iter()
        .map(|r| (r["turn"].as_u64().unwrap(), r["call"].as_u64()))
        .collect();
    assert_eq!(
        points,
        [(1, None), (1, Some(1)), (1, Some(2))],
        "{recorded:?}"
    );

    // The listing shows the calls under their turn, with what changed from each point.
    let listing = rewind(&env, &[]).await;
    assert!(
        listing.contains("1.1  ") && listing.contains("$ echo one > x.txt"),
        "{listing}"
    );
    assert!(
        listing.contains(
            "$ echo one > x.txt && sed -i s/bee/BEE/ b.txt  (2 file(s) changed: b.txt, x.txt)"
        ),
        "{listing}"
    );
    assert!(listing.contains("1.2  "), "{listing}");
    assert!(listing.contains("--to TURN[.CALL]"), "{listing}");

    // Back to just before the second call: every byte as the first one left it.
    let said = rewind(&env, &["--to", "1.2", "--code"]).await;
    assert!(said.contains("written back"), "{said}");
    assert_eq!(tree(dir, false), between);
    assert!(!dir.join("d").exists(), "the directory of call 2 is gone");
    // Undo: the state after both calls again.
    rewind(&env, &["--undo"]).await;
    assert_eq!(tree(dir, false), after);
    // Before the first call: the original tree.
    rewind(&env, &["--to", "1.1", "--code"]).await;
    assert_eq!(tree(dir, false), original);

    // A call point has no conversation of its own: asking for it says how to proceed.
    let out = env.run(&["rewind", "--to", "1.2"]).await;
    assert_exit(&out, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("files only") && err.contains("--code"),
        "{err}"
    );
    // A call the turn does not have, and a malformed point: usage errors.
    let out = env.run(&["rewind", "--to", "1.3", "--code"]).await;
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no shell call 1.3"), "{err}");
    let out = env.run(&["rewind", "--to", "1.x"]).await;
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("TURN.CALL"));
}
