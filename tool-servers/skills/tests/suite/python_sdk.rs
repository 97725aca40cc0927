//! The official Python SDK (`mcp` in `.deps/venv`, installed by `.ci/install-test-deps`) drives
//! the real `tern-skills` in both eras: it sees the listing in the instructions, loads the
//! skill and reads a file, validating each result against the tool's output schema. A missing
//! venv fails the test; it never skips.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::Layout;

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
        .arg(env!("CARGO_BIN_EXE_tern-skills"))
        .args(args)
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
fn python_sdk_loads_a_skill_and_reads_its_files_in_both_eras() {
    let layout = Layout::new();
    let args = vec![
        "--project".to_string(),
        layout.project.display().to_string(),
    ];
    let calls = json!([
        {"name": "load", "arguments": {"name": "csv-summary"}},
        {"name": "read_file", "arguments": {"skill": "csv-summary", "path": "scripts/summarize.py"}},
        {"name": "read_file", "arguments": {"skill": "csv-summary", "path": "../../../../../etc/passwd"}},
        {"name": "list", "arguments": {}},
    ]);
    for (era, revision) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let report = drive(&calls, era, &args);
        assert_eq!(report["protocol_version"], revision, "{report}");
        assert_eq!(report["server_info"]["name"], "tern-skills", "{report}");
        let mut names: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["list", "load", "read_file"], "{report}");
        let load = &report["calls"][0];
        assert_eq!(
            load["structuredContent"]["directory"],
            layout.skill_dir().to_str().unwrap(),
            "{report}"
        );
        assert_eq!(
            load["_meta"]["tern/skill"]["name"], "csv-summary",
            "{report}"
        );
        assert!(
            report["calls"][1]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("def summarize(path)"),
            "{report}"
        );
        assert_eq!(report["calls"][2]["isError"], true, "{report}");
        assert_eq!(
            report["calls"][3]["structuredContent"]["skills"][0]["name"],
            "csv-summary"
        );
    }
}
