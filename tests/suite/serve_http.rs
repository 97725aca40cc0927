//! tern's tool servers served over the network (`tern serve fs|shell|web|agent --http ADDR`, and the
//! standalone binaries with the same flag): tern's own pool uses them as `url` servers in a
//! real `tern run`, with and without a bearer token, and the official Python SDK's streamable
//! HTTP client lists and calls their tools in both of MCP's eras, with each server's
//! confinement (roots, the shell's environment, the web SSRF guard) unchanged.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use serde_json::{Value, json};
use tern_e2e::{
    bin, dep,
    run_env::{CANARY, RunEnv, all_files, of_type, pids_with},
    workspace_root,
};
use tern_model::mock::script::AnthropicTurn;

const TOKEN: &str = "e2e-http-token-0123456789abcdef";

/// A tool server serving streamable HTTP on a free loopback port; killed when dropped.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) url: String,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `program ARGS… --http 127.0.0.1:0` with `env` added, and waits for its
    /// `listening on URL` line. Without `--http-token-env` in ARGS, `--no-auth` is added
    /// (`--generated`, removed, asks for neither: the server then makes up a token).
    pub(crate) fn start(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = args.to_vec();
        if args.contains(&"--generated") {
            args.retain(|a| *a != "--generated");
        } else if !args.contains(&"--http-token-env") {
            args.push("--no-auth");
        }
        let mut child = Command::new(program)
            .args(&args)
            .args(["--http", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .env_remove("TERN_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_string());
                }
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no `listening on` line: {}", stderr.lock().unwrap()));
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        Self { child, url, stderr }
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The tool results of the last user message of a model request: (id, text, is_error).
fn tool_results(body: &Value) -> Vec<(String, String, bool)> {
    let last = body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().filter_map(|x| x["text"].as_str()).collect(),
                other => other.to_string(),
            };
            (
                b["tool_use_id"].as_str().unwrap().to_string(),
                text,
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[tokio::test]
async fn tern_run_reads_a_file_through_remote_tern_fs_servers() {
    let env = RunEnv::new().await;
    // The remote servers' root is not the project: what the model reads came over HTTP.
    let remote = tempfile::tempdir().unwrap();
    std::fs::write(remote.path().join("far.txt"), "served from far away\n").unwrap();
    let root = s(remote.path());
    let open = Served::start(&bin("tern-fs"), &["--root", &root], &[]);
    let locked = Served::start(
        &bin("tern"),
        &[
            "serve",
            "fs",
            "--root",
            &root,
            "--http-token-env",
            "SERVE_TOKEN",
            "--http-require-token",
        ],
        &[("SERVE_TOKEN", TOKEN)],
    );
    env.add_servers(&format!(
        "[mcp_servers.open]\nurl = {:?}\nrequired = true\n\
         [mcp_servers.locked]\nurl = {:?}\nbearer_token_env_var = \"REMOTE_TOKEN\"\nrequired = true\n",
        open.url, locked.url
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "open__read_file", &[r#"{"path":"far.txt"}"#])
            .tool_use("toolu_2", "locked__read_file", &[r#"{"path":"far.txt"}"#])
            .finish("tool_use"),
    );
    env.answer("Both say it is served from far away.");
    let out = env
        .command(&[
            "run",
            "read far.txt on both remotes",
            "--output-format",
            "jsonl",
            "--allow",
            "open__read_file",
            "--allow",
            "locked__read_file",
        ])
        .env("REMOTE_TOKEN", TOKEN)
        .output()
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}\nopen:\n{}\nlocked:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        open.stderr(),
        locked.stderr()
    );
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2);
    let mut results = tool_results(&requests[1].json());
    results.sort();
    assert_eq!(results.len(), 2, "{results:?}");
    for ((id, text, is_error), want) in results.iter().zip(["toolu_1", "toolu_2"]) {
        assert_eq!(id, want);
        assert!(
            !is_error && text.contains("served from far away"),
            "{id}: {text}"
        );
    }
    let finished = of_type(&env.events(), "tool_call_finished").len();
    assert_eq!(finished, 2);
    // The locked server saw no request without the token; the token is in no file tern wrote.
    assert!(!locked.stderr().contains("refused"), "{}", locked.stderr());
    for f in all_files(env.home.path()) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        assert!(
            !text.contains(TOKEN),
            "the token leaked into {}",
            f.display()
        );
    }
}

/// Runs `tests/interop/py_http_client.py` against `url` in both eras (one Python process);
/// the token, if any, travels in the environment variable `PY_TOKEN`. Checks each era
/// agreed on its revision and both listed the same tools; returns the two reports.
fn python_http(url: &str, calls: &Value, token: Option<&str>) -> Vec<Value> {
    let mut cmd = Command::new(dep("venv/bin/python"));
    cmd.arg(workspace_root().join("tests/interop/py_http_client.py"))
        .args([url, &calls.to_string(), "legacy,modern"]);
    if let Some(token) = token {
        cmd.arg("PY_TOKEN").env("PY_TOKEN", token);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr),
    );
    let reports: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(reports.len(), 2, "{stdout}");
    assert_eq!(
        reports[0]["protocol_version"], "2025-11-25",
        "{}",
        reports[0]
    );
    assert_eq!(
        reports[1]["protocol_version"], "2026-07-28",
        "{}",
        reports[1]
    );
    assert_eq!(
        reports[0]["tools"], reports[1]["tools"],
        "both eras list the same tools"
    );
    reports
}

/// The status of one bare `initialize` POST to `url`, with `extra` header lines.
fn initialize_status(url: &str, extra: &str) -> u16 {
    use std::io::{Read, Write};
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{extra}connection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

fn call_text(report: &Value, i: usize) -> String {
    report["calls"][i]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

#[test]
fn python_sdk_uses_tern_fs_over_http_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    let server = Served::start(&bin("tern-fs"), &["--root", &s(dir.path())], &[]);
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "read_file", "arguments": {"path": "/etc/passwd"}},
    ]);
    for report in &python_http(&server.url, &calls, None) {
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
        assert!(call_text(report, 0).contains("second line"), "{report}");
        assert_eq!(
            report["calls"][1]["isError"], true,
            "the roots hold over HTTP: {report}"
        );
    }
}

/// `tern serve agent --http`: the Python SDK hands tern a goal over streamable HTTP, once per
/// era; each sub-run works in the server's `--root`, reads through its own tern-fs, and its
/// answer and report come back.
#[tokio::test]
async fn python_sdk_hands_tern_serve_agent_a_goal_over_http_in_both_eras() {
    let env = RunEnv::new().await;
    let project = env.dir.path().canonicalize().unwrap();
    std::fs::write(project.join("notes.txt"), "the needle\n").unwrap();
    for _ in 0..2 {
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use("t_read", "fs__read_file", &[r#"{"path":"notes.txt"}"#])
                .finish("tool_use"),
        );
        env.server.enqueue(
            AnthropicTurn::new()
                .text(&["It says: the needle."])
                .finish("end_turn"),
        );
    }
    let home = s(env.home.path());
    let model = env.server.url();
    let server = Served::start(
        &bin("tern"),
        &["serve", "agent", "--root", &s(&project)],
        &[
            ("TERN_HOME", home.as_str()),
            ("ANTHROPIC_API_KEY", CANARY),
            ("ANTHROPIC_BASE_URL", model.as_str()),
        ],
    );
    let calls = json!([{"name": "run", "arguments": {"goal": "What does notes.txt say?", "profile": "explore"}}]);
    let url = server.url.clone();
    // The Python client blocks; the mock model answers on this test's runtime meanwhile.
    let reports = tokio::task::spawn_blocking(move || python_http(&url, &calls, None))
        .await
        .unwrap();
    let mut run_ids = Vec::new();
    for report in &reports {
        assert_eq!(report["server_info"]["name"], "tern-agent", "{report}");
        assert_eq!(report["tools"][0]["name"], "run", "{report}");
        let result = &report["calls"][0];
        assert_ne!(result["isError"], true, "{result}");
        let structured = &result["structuredContent"];
        assert_eq!(structured["status"], "success", "{result}");
        assert_eq!(structured["answer"], "It says: the needle.");
        assert_eq!(structured["steps"], 2);
        assert_eq!(structured["cwd"], project.to_string_lossy().as_ref());
        run_ids.push(structured["run_id"].as_str().unwrap().to_string());
    }
    assert_ne!(run_ids[0], run_ids[1], "one run per call");
    // Each run read the file through its own fs server: the model saw its lines.
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    for i in [1, 3] {
        let body = requests[i].json()["messages"].to_string();
        assert!(body.contains("the needle"), "{body}");
    }
    for run_id in &run_ids {
        let events = std::fs::read_to_string(
            env.home
                .path()
                .join("runs")
                .join(run_id)
                .join("events.jsonl"),
        )
        .unwrap();
        assert!(events.contains("\"run_finished\""), "{events}");
    }
}

#[test]
fn python_sdk_runs_commands_on_tern_serve_shell_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let server = Served::start(
        &bin("tern"),
        &[
            "serve",
            "shell",
            "--root",
            &s(&root),
            "--http-token-env",
            "SHELL_TOKEN",
        ],
        &[("SHELL_TOKEN", TOKEN)],
    );
    // The command sees the root as its directory, and not the token the server was given.
    let calls = json!([
        {"name": "run", "arguments": {"command": "pwd; echo \"token=[$SHELL_TOKEN]\"; exit 3"}}
    ]);
    for report in python_http(&server.url, &calls, Some(TOKEN)) {
        assert_eq!(report["server_info"]["name"], "tern-shell", "{report}");
        assert_eq!(report["tools"][0]["name"], "run");
        let text = call_text(&report, 0);
        assert!(text.contains(&s(&root)), "{text}");
        assert!(text.contains("token=[]"), "{text}");
        assert_eq!(
            report["calls"][0]["structuredContent"]["exit_code"], 3,
            "{report}"
        );
    }
    // Without the token, or with another one, nobody gets in.
    assert_eq!(initialize_status(&server.url, ""), 401);
    let wrong = "authorization: Bearer e2e-http-token-0123456789abcdeX\r\n";
    assert_eq!(initialize_status(&server.url, wrong), 401);
    let right = format!("authorization: Bearer {TOKEN}\r\n");
    assert_eq!(initialize_status(&server.url, &right), 200);
}

#[test]
fn tern_serve_web_over_http_keeps_its_ssrf_guard() {
    let server = Served::start(&bin("tern"), &["serve", "web"], &[]);
    // The server's own address is loopback: without --allow-private it is refused.
    let calls = json!([{"name": "fetch", "arguments": {"url": server.url}}]);
    for report in python_http(&server.url, &calls, None) {
        assert_eq!(report["server_info"]["name"], "tern-web", "{report}");
        assert_eq!(report["calls"][0]["isError"], true, "{report}");
        assert!(call_text(&report, 0).contains("127.0.0.1"), "{report}");
    }
}

#[test]
fn sigterm_to_tern_serve_shell_ends_the_commands_it_runs_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Served::start(
        &bin("tern"),
        &["serve", "shell", "--root", &s(dir.path())],
        &[],
    );
    let marker = format!("tern-http-shutdown-{}", std::process::id());
    let addr = server
        .url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .to_string();
    // A 2026-07-28 call (no session to open first) whose answer would take a minute.
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "run",
            "arguments": {"command": format!("sleep 60; echo {marker}")},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string();
    let call = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
             mcp-method: tools/call\r\nmcp-name: run\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        String::from_utf8_lossy(&reply).into_owned()
    });
    let started = std::time::Instant::now();
    while pids_with(&marker).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the command never started: {}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}: {}", server.stderr());
    // The call's connection was closed without an answer, and its command is gone.
    let reply = call.join().unwrap();
    assert!(!reply.contains(&marker), "{reply}");
    let started = std::time::Instant::now();
    while !pids_with(&marker).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the command outlived its server: {:?}",
            pids_with(&marker)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tern serve shell --http` with no token variable: a token is made up and printed once on
/// stderr, requests without it get 401 (before any session), with it they get in; only an
/// explicit `--no-auth` serves loopback without one.
#[test]
fn tern_serve_shell_without_a_token_variable_generates_one_and_requires_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = s(dir.path());
    let server = Served::start(
        &bin("tern"),
        &["serve", "shell", "--root", &root, "--generated"],
        &[],
    );
    let stderr = server.stderr();
    let printed: Vec<&str> = stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("bearer token ")
                .and_then(|l| l.rsplit(": ").next())
        })
        .collect();
    assert_eq!(printed.len(), 1, "printed once:\n{stderr}");
    let token = printed[0];
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{token}"
    );
    assert_eq!(initialize_status(&server.url, ""), 401);
    let right = format!("authorization: Bearer {token}\r\n");
    assert_eq!(initialize_status(&server.url, &right), 200);

    let open = Served::start(&bin("tern"), &["serve", "shell", "--root", &root], &[]);
    assert!(!open.stderr().contains("bearer token"), "{}", open.stderr());
    assert_eq!(initialize_status(&open.url, ""), 200);
}
