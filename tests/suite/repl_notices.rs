//! Background news in the REPL (issue 26, item 4): a server that crashes while the person
//! types is noticed above the prompt with its stderr tail (keys redacted), and the half-typed
//! line survives; a running `shell__run` shows its last lines under its call while it runs.
//! Real `tern`, real servers, a PTY read through pyte, the mock model.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, of_type};
use tern_model::mock::{RecordedRequest, script::AnthropicTurn};

use super::repl::{drive_with, drive_with_vars};

/// A key in tern's environment that the crashing server prints on stderr.
const PLANTED: &str = "planted-9f3k2-zebra-quartz-77";

/// The text of the last message of a request (the line the person sent).
fn last_text(request: &RecordedRequest) -> String {
    let body = request.json();
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null);
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn screen_lines(report: &Value) -> Vec<String> {
    report["screen"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[tokio::test]
async fn a_server_crashing_while_a_line_is_typed_is_noticed_above_the_prompt_and_the_line_is_kept()
{
    let env = RunEnv::new().await;
    let crash = env.dir.path().join("crash-now");
    env.add_servers(&format!(
        "[mcp_servers.dying]\ncommand = {:?}\nargs = [\"--crash-when-file\", {:?}, \"--leak-env\", \
         \"PLANTED_API_KEY\"]\nenv_vars = [\"PLANTED_API_KEY\"]\n[mcp_servers.fs]\nrequired = true\n",
        tern_e2e::bin("tern-test-server").to_string_lossy(),
        crash.to_string_lossy(),
    ));
    env.answer("Got the whole line.");
    let script = json!([
        {"expect": "tern> "},
        // The server is up (its tools are listed) before it crashes: a crash, not a failed start.
        {"send": "/tools\r"},
        {"expect": "dying__echo", "timeout": 30},
        {"expect": "tern> "},
        {"send": "hello wor"},
        {"expect": "hello wor"},
        // Only now does the server die: the notice comes while the line is half typed.
        {"touch": "crash-now"},
        {"expect": "the database refused the connection", "timeout": 30},
        // Above the prompt: the notice, its stderr tail (the key redacted), then the prompt with
        // the half-typed text, intact.
        {"screen": "┆ test-server: fatal: the database refused the connection\ntern> hello wor", "hold": 0.5},
        {"screen": "┆ test-server: connecting to the database as [REDACTED]"},
        {"send": "ld\r"},
        {"expect": "Got the whole line."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive_with_vars(&env, &script, &[], &[("PLANTED_API_KEY", PLANTED)]).await;
    let output = report["output"].as_str().unwrap_or_default();
    assert!(!output.contains(PLANTED), "the key reached the terminal");
    let lines = screen_lines(&report);
    let screen = lines.join("\n");
    let notice = lines
        .iter()
        .position(|l| l.starts_with("[server dying crashed, restarting: "))
        .unwrap_or_else(|| panic!("no crash notice:\n{screen}"));
    // The notice is above the line that was sent, which was typed before it came.
    let sent = lines
        .iter()
        .position(|l| l == "tern> hello world")
        .unwrap_or_else(|| panic!("no sent line:\n{screen}"));
    assert!(notice < sent, "{screen}");
    // Nothing of the notice landed inside the typed line.
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("tern> hello wor") && l.contains('[')),
        "{screen}"
    );
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 1, "{screen}");
    assert_eq!(last_text(&requests[0]), "hello world");
}

/// Prints a line every half second: the tail must show them while it runs.
const SLOW: &str = "for i in 1 2 3; do echo line$i; sleep 0.5; done";

fn slow_command_turns(env: &RunEnv, command: &str) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_slow",
                "shell__run",
                &[&json!({ "command": command }).to_string()],
            )
            .finish("tool_use"),
    );
    env.answer("Ran it.");
}

#[tokio::test]
async fn a_running_commands_last_lines_show_under_its_call_and_go_when_it_ends() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.shell]\nrequired = true\n");
    slow_command_turns(&env, SLOW);
    let call = format!("⏺ shell__run({SLOW})");
    let script = json!([
        {"expect": "tern> "},
        {"send": "count\r"},
        {"expect": "line2", "timeout": 30},
        // While it runs: the last lines, dimmed, right under the call's line.
        {"screen": format!("{call}\n    line1\n    line2"), "hold": 0.1},
        {"expect": "Ran it.", "timeout": 30},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive_with(&env, &script, &["--mode", "yolo"]).await;
    let output = report["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("\u{1b}[2m    line1"),
        "drawn dimmed: {output}"
    );
    // When the result came the tail was erased: the call's line has its duration and the
    // result follows right under it.
    let lines = screen_lines(&report);
    let screen = lines.join("\n");
    let at = lines
        .iter()
        .position(|l| l.starts_with(&call))
        .unwrap_or_else(|| panic!("no call line:\n{screen}"));
    assert!(lines[at].starts_with(&format!("{call} · ")), "{screen}");
    assert_eq!(lines[at + 1], "  ⎿ line1", "{screen}");
}

#[tokio::test]
async fn a_running_commands_tail_is_a_redacted_event_in_jsonl() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.shell]\nrequired = true\n");
    // The command itself prints the key (the model typed it): the tail must not carry it.
    let command = format!("echo first; sleep 0.4; echo key {PLANTED}; sleep 0.4; echo last");
    slow_command_turns(&env, &command);
    let out = env
        .command(&["run", "count", "--mode", "yolo", "--output-format", "jsonl"])
        .env("PLANTED_API_KEY", PLANTED)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains(PLANTED), "the key is in the JSONL");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for events in [events, env.events()] {
        let tails = of_type(&events, "tool_output_tail");
        let seen: Vec<Vec<String>> = tails
            .iter()
            .map(|t| serde_json::from_value(t["lines"].clone()).unwrap())
            .collect();
        assert!(
            tails.iter().all(|t| t["call_id"] == "toolu_slow"),
            "{tails:?}"
        );
        // The tail grew as the command printed, each one replacing the last.
        assert!(seen.iter().any(|l| l == &["first"]), "{seen:?}");
        assert!(
            seen.iter()
                .any(|l| l.len() >= 2 && l[1] == "key [REDACTED]"),
            "{seen:?}"
        );
        // Every tail came before the call's result.
        let seq = |e: &&Value| e["seq"].as_u64().unwrap_or_default();
        let finished = of_type(&events, "tool_call_finished");
        assert!(
            tails.iter().map(seq).max() < finished.iter().map(seq).max(),
            "{tails:?}"
        );
    }
}
