//! `tern acp` with the editor's files (issue 21, item 4): a client that offers
//! `fs.readTextFile` / `fs.writeTextFile` (the official TypeScript SDK, `tests/acp/client.mjs`,
//! over an in-memory map of buffers) gets the model's reads from its buffers and its edits
//! into them — through the same `fs__*` tools, the gateway, the editor's permission answers and
//! the audit log; paths outside the session's cwd are refused before the editor is asked; a
//! client without both capabilities leaves tern-fs on the disk. The official Python SDK
//! (`tests/acp/py_client.py`) plays the same editor once.

use serde_json::{Value, json};
use tern_e2e::{bin, run_env::RunEnv};
use tern_model::mock::script::AnthropicTurn;

use super::acp::{asked, audit, call, editor, python_editor, rule_of, turn, updates};

/// What the model was given as the result of call `id` (every request it received searched).
fn tool_result(env: &RunEnv, id: &str) -> String {
    for request in env.server.model_requests() {
        let body = request.json();
        for message in body["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && block["tool_use_id"] == id {
                    return block["content"].to_string();
                }
            }
        }
    }
    panic!("no tool_result for {id} reached the model")
}

fn fs_requests(report: &Value) -> Vec<(String, String)> {
    report["fsRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_model_reads_the_editors_buffers_and_writes_through_the_editor() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "disk alpha\nbeta\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = std::fs::canonicalize(elsewhere.path())
        .unwrap()
        .join("secret.txt");
    std::fs::write(&secret, "not for the model\n").unwrap();

    env.server
        .enqueue(turn(("r1", "fs__read_file", r#"{"path":"notes.txt"}"#)));
    let edit = r#"{"path":"notes.txt","old_string":"beta","new_string":"gamma"}"#;
    env.server.enqueue(turn(("e1", "fs__edit_file", edit)));
    let write = r#"{"path":"fresh.txt","content":"fresh\n"}"#;
    env.server.enqueue(turn(("w1", "fs__write_file", write)));
    let outside = json!({ "path": secret }).to_string();
    env.server.enqueue(turn(("o1", "fs__read_file", &outside)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));

    let buffer = "buffer alpha\nbeta\n";
    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "answers": ["allow_once", "allow_once"],
            "buffers": { notes.to_str().unwrap(): buffer },
            "prompts": [{"text": "fix notes.txt"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");

    // The read: the model got the editor's unsaved buffer, not the disk.
    let read = tool_result(&env, "r1");
    assert!(read.contains("buffer alpha"), "{read}");
    assert!(!read.contains("disk alpha"), "{read}");
    assert_eq!(call(&report, "r1").1["status"], "completed");

    // The edit: made on the buffer, through the editor; the disk is the editor's business.
    let (e1, end) = call(&report, "e1");
    assert_eq!(e1["kind"], "edit");
    assert_eq!(end["status"], "completed", "{end}");
    let diff = &end["content"][0];
    assert_eq!(diff["type"], "diff", "{end}");
    assert_eq!(diff["oldText"], buffer);
    assert_eq!(diff["newText"], "buffer alpha\ngamma\n");
    let buffers = &report["buffers"];
    assert_eq!(buffers[notes.to_str().unwrap()], "buffer alpha\ngamma\n");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "disk alpha\nbeta\n"
    );
    assert!(tool_result(&env, "e1").contains("+gamma"));

    // A new file: written through the editor, not by tern.
    assert_eq!(call(&report, "w1").1["status"], "completed");
    assert_eq!(buffers[dir.join("fresh.txt").to_str().unwrap()], "fresh\n");
    assert!(!dir.join("fresh.txt").exists());

    // Outside the session's cwd: refused, and the editor was never asked for it.
    assert_eq!(call(&report, "o1").1["status"], "failed");
    let refused = tool_result(&env, "o1");
    assert!(refused.contains("outside"), "{refused}");
    assert!(!refused.contains("not for the model"), "{refused}");

    // What the editor was asked, in order: the read, the edit's read and write, the new file.
    let n = notes.to_str().unwrap().to_string();
    let fresh = dir.join("fresh.txt").to_str().unwrap().to_string();
    assert_eq!(
        fs_requests(&report),
        [
            ("read".to_string(), n.clone()),
            ("read".to_string(), n.clone()),
            ("write".to_string(), n),
            ("write".to_string(), fresh),
        ],
        "{report:#}"
    );
    // The edits were asked of the editor like any edit, and the audit has every call.
    let asked = asked(&report);
    assert_eq!(asked, ["e1", "w1"], "{report:#}");
    let audit = audit(env.home.path());
    assert_eq!(rule_of(&audit, "e1"), "acp:once");
    assert_eq!(rule_of(&audit, "w1"), "acp:once");
    for id in ["r1", "o1"] {
        rule_of(&audit, id);
    }
    let tools: Vec<&str> = audit.iter().filter_map(|a| a["tool"].as_str()).collect();
    assert!(tools.contains(&"fs__edit_file"), "{audit:#?}");
    assert_eq!(env.server.pending(), 0);
    assert!(updates(&report, "tool_call").len() >= 4);
}

#[tokio::test]
async fn without_both_fs_capabilities_the_fs_tools_use_the_disk() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "disk alpha\nbeta\n").unwrap();
    env.server
        .enqueue(turn(("r1", "fs__read_file", r#"{"path":"notes.txt"}"#)));
    let edit = r#"{"path":"notes.txt","old_string":"beta","new_string":"gamma"}"#;
    env.server.enqueue(turn(("e1", "fs__edit_file", edit)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));
    // Read offered, write not: tern uses neither (a buffer read with a disk write would lose
    // the buffer's changes).
    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "answers": ["allow_once"],
            "buffers": { notes.to_str().unwrap(): "buffer alpha\nbeta\n" },
            "fsOffer": {"readTextFile": true, "writeTextFile": false},
            "prompts": [{"text": "fix notes.txt"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(report["fsRequests"], json!([]), "{report:#}");
    assert!(tool_result(&env, "r1").contains("disk alpha"));
    assert_eq!(call(&report, "e1").1["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "disk alpha\ngamma\n"
    );
}

#[tokio::test]
async fn the_python_sdk_offers_its_buffers_too() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "disk one\ntwo\n").unwrap();
    env.server
        .enqueue(turn(("r1", "fs__read_file", r#"{"path":"notes.txt"}"#)));
    let edit = r#"{"path":"notes.txt","old_string":"two","new_string":"2"}"#;
    env.server.enqueue(turn(("e1", "fs__edit_file", edit)));
    env.server
        .enqueue(AnthropicTurn::new().text(&["Edited."]).finish("end_turn"));
    let n = notes.to_str().unwrap();
    let plan = json!({
        "tern": bin("tern"),
        "cwd": dir,
        "answers": ["allow_once"],
        "buffers": { n: "buffer one\ntwo\n" },
        "prompts": ["edit notes.txt"],
    });
    let report = python_editor(&env, &plan).await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert!(tool_result(&env, "r1").contains("buffer one"));
    assert_eq!(report["buffers"][n], "buffer one\n2\n", "{report:#}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "disk one\ntwo\n");
    let diff = &call(&report, "e1").1["content"][0];
    assert_eq!(diff["oldText"], "buffer one\ntwo\n", "{report:#}");
    assert_eq!(diff["newText"], "buffer one\n2\n");
    assert_eq!(
        fs_requests(&report),
        [
            ("read".to_string(), n.to_string()),
            ("read".to_string(), n.to_string()),
            ("write".to_string(), n.to_string()),
        ]
    );
    assert_eq!(rule_of(&audit(env.home.path()), "e1"), "acp:once");
}
