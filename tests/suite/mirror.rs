//! Every tool of tern-fs, tern-shell, tern-web and `tern serve agent`, called by another MCP
//! client (the official Python SDK, which itself validates `structuredContent` against the
//! declared `outputSchema`), returns a result whose two forms mirror each other:
//!
//! - a result with `structuredContent` comes from a tool that declares an `outputSchema`, and
//!   validates against it (checked again here with the `jsonschema` crate);
//! - **the structured result carries everything the text says**: every line of the text (text
//!   blocks and text resources) is inside one of its strings, or consists only of its strings,
//!   its numbers and a few template words. Clients such as Claude Code and VS Code show the
//!   model only `JSON.stringify(structuredContent)` when it is present;
//! - **the text is complete**: it contains every string of the structured result, so a client
//!   that shows the text (tern, most others) misses nothing either.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use tern_e2e::{bin, dep, workspace_root};

/// Words the servers' text templates add around the data (`wrote 4 bytes to …`).
const TEMPLATE_WORDS: &[&str] = &[
    "wrote",
    "bytes",
    "to",
    "created",
    "replaced",
    "lines",
    "edited",
    "replacement",
    "replacements",
    "entries",
    "file",
    "dir",
    "symlink",
    "Fetched",
    "Redirected",
    "from",
    "sub",
    "agent",
    "run",
    "step",
    "s",
    "tokens",
    "exit",
    "code",
    "no",
    "output",
    "in",
    "model",
];

/// The model-facing text of a result: its text blocks and text resources, in order.
pub fn result_text(result: &Value) -> String {
    let mut out = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        if let Some(t) = block["text"].as_str() {
            out.push(t.to_string());
        } else if let Some(t) = block["resource"]["text"].as_str() {
            out.push(t.to_string());
        }
    }
    out.join("\n")
}

fn leaves(v: &Value, strings: &mut Vec<String>, numbers: &mut Vec<String>) {
    match v {
        Value::String(s) => strings.push(s.clone()),
        Value::Number(n) => numbers.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| leaves(i, strings, numbers)),
        Value::Object(o) => o.values().for_each(|i| leaves(i, strings, numbers)),
        Value::Null | Value::Bool(_) => {}
    }
}

/// What is wrong with `result` of `tool` (its `tools/list` entry), as readable lines.
pub fn problems(tool: &Value, result: &Value) -> Vec<String> {
    let name = tool["name"].as_str().unwrap_or("?");
    let mut found = Vec::new();
    let schema = tool.get("outputSchema").filter(|s| s.is_object());
    let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null()) else {
        if schema.is_some() && result["isError"] != true {
            found.push(format!(
                "{name}: declares an outputSchema but returned no structuredContent"
            ));
        }
        return found;
    };
    let Some(schema) = schema else {
        found.push(format!(
            "{name}: structuredContent without a declared outputSchema"
        ));
        return found;
    };
    match jsonschema::validator_for(schema) {
        Ok(validator) => {
            for e in validator.iter_errors(structured) {
                found.push(format!(
                    "{name}: structuredContent breaks its outputSchema: {e}"
                ));
            }
        }
        Err(e) => found.push(format!(
            "{name}: outputSchema is not valid JSON Schema: {e}"
        )),
    }
    let text = result_text(result);
    let (mut strings, mut numbers) = (Vec::new(), Vec::new());
    leaves(structured, &mut strings, &mut numbers);
    for s in &strings {
        if !s.trim().is_empty() && !text.contains(s.trim()) {
            found.push(format!(
                "{name}: the text lacks the structured string {s:?}"
            ));
        }
    }
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if strings.iter().any(|s| s.contains(line)) {
            continue;
        }
        let missing: Vec<&str> = line
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            // Numbers the text formats from structured ones (a sum of tokens, `$0.0007`,
            // `0.42 s`) are derivable; a number in the data itself sits inside a string.
            .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
            .filter(|w| {
                !TEMPLATE_WORDS.contains(w)
                    && !numbers.iter().any(|n| n == w)
                    && !strings.iter().any(|s| s.contains(w))
            })
            .collect();
        if !missing.is_empty() {
            found.push(format!(
                "{name}: the text line {line:?} says {missing:?}, which structuredContent lacks"
            ));
        }
    }
    found
}

/// Runs `tests/interop/py_client.py` (the Python SDK) with `calls` against `server`; returns
/// its report (`tools`, `calls`).
fn python_sdk(calls: &Value, server: &[String]) -> Value {
    let out = Command::new(dep("venv/bin/python"))
        .arg(workspace_root().join("tests/interop/py_client.py"))
        .arg(calls.to_string())
        .arg("legacy")
        .arg("--")
        .args(server)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed (it validates structuredContent itself): {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Checks every call of a report; every tool listed must declare an outputSchema and have
/// been called with success at least once.
fn assert_mirrored(report: &Value, calls: &Value) {
    let tools = report["tools"].as_array().unwrap();
    let mut found = Vec::new();
    for (call, result) in calls
        .as_array()
        .unwrap()
        .iter()
        .zip(report["calls"].as_array().unwrap())
    {
        let tool = tools.iter().find(|t| t["name"] == call["name"]).unwrap();
        found.extend(problems(tool, result));
    }
    for tool in tools {
        let name = &tool["name"];
        if !tool["outputSchema"].is_object() {
            found.push(format!("{name}: no outputSchema"));
        }
        let succeeded = calls
            .as_array()
            .unwrap()
            .iter()
            .zip(report["calls"].as_array().unwrap())
            .any(|(c, r)| c["name"] == *name && r["isError"] != true);
        if !succeeded {
            found.push(format!("{name}: never called with success by this test"));
        }
    }
    assert!(found.is_empty(), "{found:#?}\n{report:#}");
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn tern_fs_results_mirror_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "alpha quokka\nbeta 42\n").unwrap();
    std::fs::write(root.join("long.txt"), "wombat line\n".repeat(50)).unwrap();
    std::fs::write(root.join("empty.txt"), "").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::os::unix::fs::symlink("notes.txt", root.join("link")).unwrap();
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "read_file", "arguments": {"path": "long.txt", "offset": 3, "limit": 2}},
        {"name": "read_file", "arguments": {"path": "long.txt", "offset": 99}},
        {"name": "read_file", "arguments": {"path": "long.txt"}},
        {"name": "read_file", "arguments": {"path": "empty.txt"}},
        {"name": "read_file", "arguments": {"path": "missing.txt"}},
        {"name": "write_file", "arguments": {"path": "sub/new.txt", "content": "made\n"}},
        {"name": "write_file", "arguments": {"path": "sub/new.txt", "content": "remade\n"}},
        {"name": "edit_file", "arguments": {"path": "notes.txt", "old_string": "quokka", "new_string": "numbat"}},
        {"name": "list_dir", "arguments": {}},
        {"name": "glob", "arguments": {"pattern": "**/*.txt"}},
        {"name": "glob", "arguments": {"pattern": "*.none"}},
        {"name": "grep", "arguments": {"pattern": "numbat"}},
        {"name": "grep", "arguments": {"pattern": "wombat", "output_mode": "content"}},
        {"name": "grep", "arguments": {"pattern": "a", "output_mode": "count"}},
        {"name": "grep", "arguments": {"pattern": "zebra"}},
    ]);
    // The small byte limit makes a read cut by it, with its note.
    for server in [
        vec![
            s(&bin("tern-fs")),
            "--root".into(),
            s(&root),
            "--max-read-bytes".into(),
            "200".into(),
            "--max-glob-results".into(),
            "3".into(),
        ],
        vec![
            s(&bin("tern")),
            "serve".into(),
            "fs".into(),
            "--root".into(),
            s(&root),
        ],
    ] {
        let report = python_sdk(&calls, &server);
        assert_mirrored(&report, &calls);
        // The file's text itself reaches a client that reads only structuredContent.
        assert!(
            report["calls"][0]["structuredContent"]["content"]
                .as_str()
                .unwrap()
                .contains("alpha quokka"),
            "{report}"
        );
        std::fs::write(root.join("notes.txt"), "alpha quokka\nbeta 42\n").unwrap();
        std::fs::remove_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
    }
}

#[test]
fn tern_shell_results_mirror_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let calls = json!([
        {"name": "run", "arguments": {"command": "echo kangaroo; echo dingo >&2; exit 3"}},
        {"name": "run", "arguments": {"command": "true"}},
        {"name": "run", "arguments": {"command": "seq 1 20000"}},
        {"name": "run", "arguments": {"command": "kill -9 $$"}},
        {"name": "run", "arguments": {"command": "true", "cwd": "/nowhere"}},
    ]);
    let report = python_sdk(
        &calls,
        &[
            s(&bin("tern-shell")),
            "--root".into(),
            s(dir.path()),
            "--max-output-chars".into(),
            "2000".into(),
        ],
    );
    assert_mirrored(&report, &calls);
    assert_eq!(
        report["calls"][0]["structuredContent"]["exit_code"], 3,
        "{report}"
    );
}

#[test]
fn tern_web_results_mirror_their_text() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let reply = if request.starts_with("GET /old ") {
                "HTTP/1.1 301 Moved\r\nLocation: /page\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
            } else {
                let body = format!(
                    "<html><body><h1>Platypus page</h1><p>{}</p></body></html>",
                    "echidna ".repeat(40)
                );
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    let base = format!("http://127.0.0.1:{port}");
    let calls = json!([
        {"name": "fetch", "arguments": {"url": format!("{base}/page")}},
        {"name": "fetch", "arguments": {"url": format!("{base}/old"), "max_chars": 40}},
        {"name": "fetch", "arguments": {"url": "ftp://example.invalid/"}},
    ]);
    let report = python_sdk(&calls, &[s(&bin("tern-web")), "--allow-private".into()]);
    assert_mirrored(&report, &calls);
}

#[tokio::test]
async fn tern_serve_agent_results_mirror_their_text() {
    use tern_e2e::run_env::{CANARY, RunEnv};
    let env = RunEnv::new().await;
    env.answer("The koala sleeps in notes.txt.");
    let project = env.dir.path().canonicalize().unwrap();
    let plan = json!({"roots": [project], "calls": [
        {"arguments": {"goal": "Where does the koala sleep?", "profile": "explore"}},
    ]});
    let out = tokio::process::Command::new(dep("venv/bin/python"))
        .arg(workspace_root().join("tests/interop/agent_client.py"))
        .arg(plan.to_string())
        .arg("--")
        .arg(bin("tern"))
        .args(["serve", "agent"])
        .current_dir(&project)
        .env("TERN_HOME", env.home.path())
        .env("ANTHROPIC_API_KEY", CANARY)
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TERN_LOG")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), out)
        .await
        .expect("the Python client did not finish in 120 s")
        .unwrap();
    assert!(
        out.status.success(),
        "python client failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &report["tools"][0];
    let result = &report["calls"][0]["result"];
    assert_eq!(result["structuredContent"]["status"], "success", "{report}");
    let found = problems(run, result);
    assert!(found.is_empty(), "{found:#?}\n{report:#}");
}
