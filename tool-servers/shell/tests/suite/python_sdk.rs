//! The same guarantees through another MCP client: the official Python SDK
//! (`mcp` in `.deps/venv`, installed by `.ci/install-test-deps`) drives the
//! real `tern-shell`. A missing venv fails the test; it never skips.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::support::{processes_with_arg, unique_sleep};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    let python = workspace().join(".deps/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/install-test-deps` first",
        python.display()
    );
    python
}

/// Runs `tests/interop/py_client.py` with `calls` against tern-shell `args`.
fn drive(calls: &Value, args: &[String], envs: &[(&str, &str)]) -> Value {
    let mut cmd = Command::new(python());
    cmd.arg(workspace().join("tests/interop/py_client.py"))
        .arg(calls.to_string())
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_tern-shell"))
        .args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn call_text(report: &Value, i: usize) -> &str {
    report["calls"][i]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn python_sdk_client_gets_the_sandbox_and_process_cleanup() {
    // Not under /tmp: the SDK starts the server with a minimal environment
    // (no TMPDIR), so its commands may write to /tmp.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let tmp = base.join("tmp");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = unique_sleep();
    let calls = json!([
        {"name": "run", "arguments": {"command": format!("touch {}/outside; echo rc=$?", base.display())}},
        {"name": "run", "arguments": {"command": "echo evil > .git/hooks/pre-commit; echo rc=$?"}},
        {"name": "run", "arguments": {"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port}; echo rc=$?")}},
        {"name": "run", "arguments": {"command": format!(
            "test -e /proc/{me} && echo visible || echo hidden; cat /proc/{me}/environ 2>&1 | head -c 200",
            me = std::process::id()
        )}},
        {"name": "run", "arguments": {"command": format!("setsid sleep {marker} & nohup sleep {marker} >/dev/null 2>&1 & echo started")}},
        {"name": "run", "arguments": {"command": format!("pgrep -f '[s]leep {marker}' | wc -l")}},
    ]);
    let args = vec!["--root".to_string(), root.display().to_string()];
    let report = drive(&calls, &args, &[("TMPDIR", tmp.to_str().unwrap())]);
    assert_eq!(report["server_info"]["name"], "tern-shell", "{report}");
    assert!(call_text(&report, 0).contains("rc=1"), "{report}");
    assert!(!base.join("outside").exists());
    assert!(call_text(&report, 1).contains("rc=1"), "{report}");
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(call_text(&report, 2).contains("rc=1"), "{report}");
    let proc_view = call_text(&report, 3);
    assert!(proc_view.starts_with("hidden\n"), "{proc_view}");
    assert!(!proc_view.contains("PATH="), "{proc_view}");
    assert!(call_text(&report, 4).contains("started"), "{report}");
    // Neither inside the next call nor on the host is the background sleep left.
    assert!(call_text(&report, 5).starts_with("0\n"), "{report}");
    assert!(processes_with_arg(&marker).is_empty(), "survived the call");

    // Network on: the same connect works.
    let calls = json!([{"name": "run", "arguments": {"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port}; echo rc=$?")}}]);
    let mut on = args.clone();
    on.extend(["--network".to_string(), "on".to_string()]);
    let report = drive(&calls, &on, &[]);
    assert!(call_text(&report, 0).contains("rc=0"), "{report}");
}

#[test]
fn the_tool_schemas_pass_a_strict_json_schema_2020_12_check() {
    let dir = tempfile::tempdir().unwrap();
    let report = drive(
        &json!([]),
        &["--root".to_string(), dir.path().display().to_string()],
        &[],
    );
    let mut check = Command::new(python())
        .arg(workspace().join("tests/interop/check_tool_schemas.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(report.to_string().as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("1 tool schemas checked, 0 problems"),
        "{said}"
    );
}
