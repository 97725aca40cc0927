//! The official Python SDK (`mcp` in `.deps/venv`, installed by `.ci/install-test-deps`) drives
//! the real `tern-todo` in both eras, validating every result against the tool's output schema
//! as that client does. A missing venv fails the test; it never skips.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn drive(calls: &Value, era: &str, args: &[String]) -> Value {
    let python = workspace().join(".deps/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/install-test-deps` first",
        python.display()
    );
    let out = Command::new(python)
        .arg(workspace().join("tests/interop/py_client.py"))
        .arg(calls.to_string())
        .arg(era)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_tern-todo"))
        .args(args)
        .env_remove("TERN_TODO_STATE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn python_sdk_writes_and_reads_the_list_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("py.todo.json");
    let args = vec!["--state".to_string(), state.display().to_string()];
    let calls = json!([
        {"name": "write", "arguments": {"todos": super::plan()}},
        {"name": "read", "arguments": {}},
        {"name": "write", "arguments": {"todos": [
            {"id": "x", "text": "one", "status": "in_progress"},
            {"id": "y", "text": "two", "status": "in_progress"},
        ]}},
    ]);
    for (era, revision) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let report = drive(&calls, era, &args);
        assert_eq!(report["protocol_version"], revision, "{report}");
        assert_eq!(report["server_info"]["name"], "tern-todo", "{report}");
        let names: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(
            names.contains(&"write") && names.contains(&"read"),
            "{names:?}"
        );
        assert!(
            report["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["outputSchema"].is_object()),
            "{report}"
        );
        // The SDK checked structuredContent against the output schema; the text and the
        // host's `_meta` copy came through too.
        let read = &report["calls"][1];
        assert_eq!(
            read["structuredContent"]["todos"],
            super::plan(),
            "{report}"
        );
        assert_eq!(
            read["_meta"]["tern/todo"]["todos"],
            super::plan(),
            "{report}"
        );
        assert!(
            read["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("- [>] 2: Write the failing test (in progress)"),
            "{report}"
        );
        assert_eq!(report["calls"][2]["isError"], true, "{report}");
    }
}
