//! Other MCP clients run tern's built-in servers as they are: the official
//! Python SDK (`mcp` on PyPI) lists and calls tools on tern-fs, tern-shell and
//! tern-web, launched both standalone and as `tern serve NAME` — in both of MCP's eras:
//! with the `initialize` handshake (2025-11-25) and with `server/discover` (2026-07-28).

use std::{
    io::{Read, Write},
    net::TcpListener,
    path::Path,
    process::Command,
};

use serde_json::{Value, json};
use tern_e2e::{bin, dep, workspace_root};

/// MCP's two eras, as the Python client opens them, with the revision each must agree on.
const ERAS: [(&str, &str); 2] = [("legacy", "2025-11-25"), ("modern", "2026-07-28")];

/// Runs `tests/interop/py_client.py` against `server` in both eras; checks each agreed on its
/// revision and that both saw the same tools, and returns the two reports.
fn python_client(calls: Value, server: &[String]) -> Vec<Value> {
    let reports: Vec<Value> = ERAS
        .iter()
        .map(|(era, revision)| {
            let report = python_client_in(era, calls.clone(), server);
            assert_eq!(report["protocol_version"], *revision, "{era}: {report}");
            report
        })
        .collect();
    assert_eq!(
        reports[0]["tools"], reports[1]["tools"],
        "both eras list the same tools"
    );
    reports
}

/// Runs `tests/interop/py_client.py` in `era` (`legacy` or `modern`) against `server`.
fn python_client_in(era: &str, calls: Value, server: &[String]) -> Value {
    let python = dep("venv/bin/python");
    let script = workspace_root().join("tests/interop/py_client.py");
    let out = Command::new(python)
        .arg(script)
        .arg(calls.to_string())
        .arg(era)
        .arg("--")
        .args(server)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn call_text(report: &Value, i: usize) -> String {
    report["calls"][i]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn python_sdk_drives_tern_fs_standalone_and_via_tern_serve() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    // An image: the SDK parses the image block and validates structuredContent against the
    // declared outputSchema.
    std::fs::write(dir.path().join("shot.png"), super::images::png()).unwrap();
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "read_file", "arguments": {"path": "/etc/passwd"}},
        {"name": "write_file", "arguments": {"path": "sub/new.txt", "content": "made by python"}},
        {"name": "read_file", "arguments": {"path": "shot.png"}},
    ]);
    for server in [
        vec![s(&bin("tern-fs")), "--root".into(), s(dir.path())],
        vec![
            s(&bin("tern")),
            "serve".into(),
            "fs".into(),
            "--root".into(),
            s(dir.path()),
        ],
    ] {
        for report in python_client(calls.clone(), &server) {
            check_fs_report(&report, dir.path());
        }
        std::fs::remove_dir_all(dir.path().join("sub")).unwrap();
    }
}

fn check_fs_report(report: &Value, dir: &Path) {
    {
        assert_eq!(report["server_info"]["name"], "tern-fs", "{report}");
        let names: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        for want in [
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "glob",
            "grep",
        ] {
            assert!(names.contains(&want), "{names:?}");
        }
        let read = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "read_file")
            .unwrap();
        assert_eq!(read["annotations"]["readOnlyHint"], true);
        assert!(call_text(report, 0).contains("second line"), "{report}");
        assert_eq!(
            report["calls"][1]["isError"], true,
            "escape must be refused: {report}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/new.txt")).unwrap(),
            "made by python"
        );
        let image = &report["calls"][3];
        assert_eq!(image["isError"], false, "{image}");
        assert_eq!(image["content"][1]["type"], "image", "{image}");
        assert_eq!(image["content"][1]["mimeType"], "image/png");
        assert_eq!(image["content"][1]["data"], super::images::PNG_B64);
        assert_eq!(image["structuredContent"]["mime_type"], "image/png");
        assert_eq!(
            image["structuredContent"]["content"], image["content"][0]["text"],
            "the text mirrors the structured result"
        );
    }
}

#[test]
fn python_sdk_drives_tern_shell() {
    let dir = tempfile::tempdir().unwrap();
    for report in python_client(
        json!([{"name": "run", "arguments": {"command": "echo hello-from-shell; exit 3"}}]),
        &[s(&bin("tern-shell")), "--root".into(), s(dir.path())],
    ) {
        assert_eq!(report["server_info"]["name"], "tern-shell", "{report}");
        assert_eq!(report["tools"][0]["name"], "run");
        assert!(
            call_text(&report, 0).contains("hello-from-shell"),
            "{report}"
        );
        assert_eq!(
            report["calls"][0]["structuredContent"]["exit_code"], 3,
            "{report}"
        );
    }
}

#[test]
fn python_sdk_drives_tern_web_against_a_loopback_page() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<html><head><title>T</title></head><body><h1>Interop page</h1><p>Served on loopback.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let calls = json!([{"name": "fetch", "arguments": {"url": url}}]);
    for report in python_client(
        calls.clone(),
        &[s(&bin("tern-web")), "--allow-private".into()],
    ) {
        assert_eq!(report["server_info"]["name"], "tern-web", "{report}");
        let text = call_text(&report, 0);
        assert!(text.contains("# Interop page"), "{report}");
    }
    // Without --allow-private the same loopback URL is refused (SSRF guard).
    for report in python_client(calls, &[s(&bin("tern")), "serve".into(), "web".into()]) {
        assert_eq!(report["calls"][0]["isError"], true, "{report}");
    }
}

#[test]
fn python_sdk_drives_tern_serve_todo_and_skills() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("session.todo.json");
    let plan = json!([
        {"id": "1", "text": "Read the parser", "status": "done"},
        {"id": "2", "text": "Fix the bug", "status": "in_progress"},
    ]);
    let calls = json!([
        {"name": "write", "arguments": {"todos": plan}},
        {"name": "read", "arguments": {}},
    ]);
    let server = vec![
        s(&bin("tern")),
        "serve".into(),
        "todo".into(),
        "--state".into(),
        s(&state),
    ];
    for report in python_client(calls, &server) {
        assert_eq!(report["server_info"]["name"], "tern-todo", "{report}");
        assert_eq!(
            report["calls"][1]["structuredContent"]["todos"], plan,
            "{report}"
        );
        assert!(
            call_text(&report, 1).contains("- [>] 2: Fix the bug (in progress)"),
            "{report}"
        );
    }
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["todos"], plan);

    let skill = dir.path().join("project/.agents/skills/hello");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: hello\ndescription: Greets. Use when asked to say hello.\n---\n# Hello\n\nRun scripts/hello.sh.\n",
    )
    .unwrap();
    std::fs::write(skill.join("scripts/hello.sh"), "echo hello\n").unwrap();
    let calls = json!([
        {"name": "load", "arguments": {"name": "hello"}},
        {"name": "read_file", "arguments": {"skill": "hello", "path": "scripts/hello.sh"}},
        {"name": "read_file", "arguments": {"skill": "hello", "path": "/etc/passwd"}},
    ]);
    let server = vec![
        s(&bin("tern")),
        "serve".into(),
        "skills".into(),
        "--project".into(),
        s(&dir.path().join("project")),
    ];
    for report in python_client(calls, &server) {
        assert_eq!(report["server_info"]["name"], "tern-skills", "{report}");
        assert!(call_text(&report, 0).contains("# Hello"), "{report}");
        assert_eq!(call_text(&report, 1), "echo hello\n", "{report}");
        assert_eq!(report["calls"][2]["isError"], true, "{report}");
    }
}
