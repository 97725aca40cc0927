//! `--editor-socket`: the command is shown in an editor's terminal (issue 21, item 4). A stand-in
//! for `tern acp`'s bridge and the editor behind it listens on the socket and does what an ACP
//! editor does with `terminal/create`: it spawns the program and arguments it is given, in the
//! cwd it is given, captures the output and reports the exit. The result must be the one
//! tern-shell gives without an editor, byte for byte but the duration.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use super::support::{is_error, start, text};

/// What the stand-in editor was asked, and what it did.
#[derive(Debug, Default)]
struct Asked {
    command: String,
    args: Vec<String>,
    cwd: String,
    output_byte_limit: u64,
    /// What the terminal showed.
    shown: String,
}

/// Serves one connection on `socket` like `tern acp` in front of an editor: `refuse` answers
/// `terminal/create` with that error instead.
fn editor(socket: &Path, refuse: Option<&'static str>) -> std::thread::JoinHandle<Asked> {
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut lines = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        let run: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(run["op"], "run", "{line}");
        let mut asked = Asked {
            command: run["command"].as_str().unwrap().into(),
            args: serde_json::from_value(run["args"].clone()).unwrap(),
            cwd: run["cwd"].as_str().unwrap().into(),
            output_byte_limit: run["output_byte_limit"].as_u64().unwrap(),
            shown: String::new(),
        };
        let mut out = &stream;
        if let Some(why) = refuse {
            writeln!(out, "{}", json!({ "error": why })).unwrap();
            return asked;
        }
        let mut child = std::process::Command::new(&asked.command)
            .args(&asked.args)
            .current_dir(&asked.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        writeln!(out, "{}", json!({"created": {"terminal_id": "t-1"}})).unwrap();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut asked.shown)
            .unwrap();
        let status = child.wait().unwrap();
        let exited = json!({"exited": {
            "exit_code": status.code(),
            "signal": status.signal().map(|s| format!("SIG{s}")),
            "output": asked.shown,
            "truncated": false,
        }});
        writeln!(out, "{exited}").unwrap();
        asked
    })
}

/// The text with the run's duration (`· 0.01 s]`) taken out.
fn without_duration(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind(" · ") {
            Some(i) if l.starts_with('[') => format!("{}]", &l[..i]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `structuredContent` without what differs between two runs: the duration, the root.
fn comparable(result: &rmcp::model::CallToolResult, root: &Path) -> Value {
    let root = root.to_str().unwrap();
    let mut s = result.structured_content.clone().unwrap();
    s["duration_ms"] = json!(0);
    let notes: Vec<String> = s["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| without_duration(n.as_str().unwrap()))
        .collect();
    s["notes"] = json!(notes);
    s["output"] = json!(s["output"].as_str().unwrap().replace(root, "ROOT"));
    s
}

fn socket_in(dir: &Path) -> PathBuf {
    dir.join("terminal.sock")
}

#[tokio::test]
async fn the_result_is_the_one_tern_shell_gives_without_an_editor() {
    let sockets = tempfile::tempdir().unwrap();
    let socket = socket_in(sockets.path());
    let asked = editor(&socket, None);
    let socket_arg = socket.to_str().unwrap();
    let shown = start(
        &["--editor-socket", socket_arg, "--max-output-chars", "2000"],
        &[],
    )
    .await;
    let plain = start(&["--max-output-chars", "2000"], &[]).await;
    // Long output (cut from the middle), stderr, a file in the root, an exit code.
    let command = "seq 1 5000; echo to-stderr >&2; echo kept > made.txt; pwd; exit 3";
    let args = json!({ "command": command });
    let in_terminal = shown.run(args.clone()).await;
    let alone = plain.run(args).await;
    assert!(!is_error(&in_terminal), "{}", text(&in_terminal));

    let asked = asked.join().unwrap();
    assert_eq!(asked.command, env!("CARGO_BIN_EXE_tern-shell"));
    assert_eq!(asked.args[0], "--run-plan", "{asked:?}");
    assert!(
        !Path::new(&asked.args[1]).exists(),
        "the plan outlived the call"
    );
    assert_eq!(asked.cwd, shown.root.to_str().unwrap());
    assert_eq!(asked.output_byte_limit, 2000);
    // The terminal showed all of it; the model gets the same cut as without the editor.
    assert!(
        asked.shown.contains("\n4999\n5000\nto-stderr\n"),
        "{}",
        asked.shown
    );
    let t = text(&in_terminal);
    assert_eq!(
        without_duration(&t).replace(shown.root.to_str().unwrap(), "ROOT"),
        without_duration(&text(&alone)).replace(plain.root.to_str().unwrap(), "ROOT"),
    );
    assert!(t.contains("[output truncated:"), "{t}");
    assert!(t.contains("[exit code 3 ·"), "{t}");
    assert_eq!(
        comparable(&in_terminal, &shown.root),
        comparable(&alone, &plain.root)
    );
    assert_eq!(
        std::fs::read_to_string(shown.root.join("made.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test]
async fn a_refusal_or_a_missing_bridge_fails_the_call_and_runs_nothing() {
    let sockets = tempfile::tempdir().unwrap();
    let socket = socket_in(sockets.path());
    let asked = editor(&socket, Some("terminal/create failed: no terminals here"));
    let s = start(&["--editor-socket", socket.to_str().unwrap()], &[]).await;
    let r = s.run(json!({"command": "touch made.txt"})).await;
    assert!(is_error(&r));
    let t = text(&r);
    assert!(
        t.starts_with("the editor refused to run the command in its terminal (terminal/create failed: no terminals here)"),
        "{t}"
    );
    assert!(t.contains("hint:"), "{t}");
    asked.join().unwrap();
    assert!(!s.root.join("made.txt").exists());

    let gone = sockets.path().join("gone.sock");
    let s = start(&["--editor-socket", gone.to_str().unwrap()], &[]).await;
    let r = s.run(json!({"command": "touch made.txt"})).await;
    assert!(is_error(&r));
    assert!(
        text(&r).starts_with("cannot reach the editor's terminal through"),
        "{}",
        text(&r)
    );
    assert!(!s.root.join("made.txt").exists());
}

#[tokio::test]
async fn the_runner_never_runs_a_command_with_less_sandbox_than_its_plan_says() {
    // The runner inside tern's own sandbox (a model's command calling it, or an editor that runs
    // more confined than tern): seccomp refuses the namespaces the plan asks for, so the command
    // is not started at all — never run with less.
    let s = start(&[], &[]).await;
    let root = s.root.to_str().unwrap();
    let ok = json!({"Ok": null});
    let plan = json!({
        "version": 1,
        "shell": "/bin/sh",
        "command": "touch escaped-too",
        "cwd": root,
        "env": [],
        "timeout_ms": 5000,
        "max_output_chars": 1000,
        "policy": {
            "mode": "full-access", "network": "on", "writable_roots": [root],
            "temp_dirs": [], "protected": [], "allow_sockets": [], "git_objects": false,
            "pty": false,
        },
        "hidden": [],
        "support": {
            "namespaces": ok, "proc_mount": ok, "network_namespace": ok, "mount_view": ok,
            "landlock_abi": null, "seccomp": ok,
        },
        "report": s.root.join("report.json"),
    });
    // Full access asks for no layer: it runs, but still inside the sandbox it was started in.
    let mut full = plan.clone();
    full["command"] = json!("touch escaped; touch /etc/tern-nested-escape");
    std::fs::write(s.root.join("plan.json"), full.to_string()).unwrap();
    let mut confined = plan.clone();
    confined["policy"]["mode"] = json!("workspace-write");
    confined["report"] = json!(s.root.join("report2.json"));
    std::fs::write(s.root.join("plan2.json"), confined.to_string()).unwrap();
    let runner = env!("CARGO_BIN_EXE_tern-shell");
    let r = s
        .run(json!({ "command": format!(
            "{runner} --run-plan plan2.json; echo status=$?; {runner} --run-plan plan.json; echo status=$?"
        )}))
        .await;
    let t = text(&r);
    assert!(
        t.contains(
            "tern: the command could not be started in the editor's terminal under tern's sandbox"
        ),
        "{t}"
    );
    assert!(t.contains("status=126"), "{t}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(s.root.join("report2.json")).unwrap())
            .unwrap();
    assert!(report["failed"].is_string(), "{report}");
    // The full-access plan ran its command, confined by the sandbox it was started in.
    assert!(
        t.contains("'/etc/tern-nested-escape': Read-only file system\nstatus=1"),
        "{t}"
    );
    assert!(s.root.join("escaped").exists());
    assert!(!Path::new("/etc/tern-nested-escape").exists(), "{t}");
    assert!(!s.root.join("escaped-too").exists());
}
