//! `tern acp` with the editor's terminal (issue 21, item 4): a client that advertises
//! `clientCapabilities.terminal` (the official TypeScript SDK, `tests/acp/client.mjs`, which runs
//! each `terminal/create` for real, as an editor does) sees every `shell__run` command in one of
//! its terminals — embedded in the call's `tool_call_update` by the id it issued — while the
//! command still runs under tern's sandbox with tern-shell's environment: the editor is handed
//! tern-shell's runner and a plan file, never the model's command line. The call still goes
//! through the gateway (the editor's permission answer, the audit). Cancelling kills the
//! terminal (`terminal/kill`) and releases it; a refused `terminal/create` fails the call with
//! the editor's reason; a client without the capability gets no terminal request.

use std::path::Path;

use serde_json::{Value, json};
use tern_e2e::{
    bin,
    run_env::{CANARY, RunEnv, alive, of_type, pids_with},
    workspace_root,
};
use tern_model::mock::script::AnthropicTurn;

use super::acp::{audit, call, editor, python_editor, rule_of, updates};

/// What the model was given as the result of call `id`.
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

/// The terminal requests of the report, as (method, terminalId) with `create`'s id taken from
/// the order they were made in (`term-1`, `term-2`, …).
fn requests(report: &Value) -> Vec<(String, String)> {
    let mut created = 0;
    report["terminalRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let method = r["method"].as_str().unwrap().to_string();
            let id = match r["terminalId"].as_str() {
                Some(id) => id.to_string(),
                None => {
                    created += 1;
                    format!("term-{created}")
                }
            };
            (method, id)
        })
        .collect()
}

/// A model turn that runs `command` as call `id`.
fn shell(id: &str, command: &str) -> tern_model::mock::MockResponse {
    let args = json!({ "command": command }).to_string();
    AnthropicTurn::new()
        .tool_use(id, "shell__run", &[&args])
        .finish("tool_use")
}

/// The terminal embedded in a `tool_call_update`'s content, if any.
fn terminal_of(update: &Value) -> Option<&str> {
    update["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "terminal")?["terminalId"]
        .as_str()
}

#[tokio::test]
async fn shell_commands_run_in_the_editors_terminal_under_terns_sandbox() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    // Outside the workspace, and outside /tmp (which the sandbox replaces with its own).
    let escape = workspace_root()
        .join("target")
        .join(format!("tern-e2e-escape-{}.txt", std::process::id()));
    let _ = std::fs::remove_file(&escape);

    let hello = r#"echo hello-from-the-terminal; pwd; echo "key=${ANTHROPIC_API_KEY:-unset}""#;
    env.server.enqueue(shell("c1", hello));
    let write_outside = format!("echo escaped > {}", escape.display());
    env.server.enqueue(shell("c2", &write_outside));
    let slow = json!({"command": "echo started; sleep 5; echo late", "timeout_sec": 1}).to_string();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("c3", "shell__run", &[&slow])
            .finish("tool_use"),
    );
    env.server
        .enqueue(AnthropicTurn::new().text(&["Done."]).finish("end_turn"));

    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "terminal": true,
            "answers": ["allow_once", "allow_once", "allow_once"],
            "prompts": [{"text": "run things"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");

    // c1: run by the editor, as tern-shell's runner (never the model's command line), in the
    // workspace, without tern's environment.
    let creates: Vec<&Value> = report["terminalRequests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "create")
        .collect();
    assert_eq!(creates.len(), 3, "{report:#}");
    let first = creates[0];
    assert_eq!(first["command"], json!(bin("tern")), "{first}");
    let args: Vec<&str> = first["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[..3], ["serve", "shell", "--run-plan"], "{first}");
    assert!(!first.to_string().contains("hello-from-the-terminal"));
    assert_eq!(first["cwd"], json!(dir), "{first}");
    assert_eq!(first["env"], json!([]));
    assert!(
        first["outputByteLimit"].as_u64().is_some_and(|n| n > 1000),
        "{first}"
    );
    // The plan file is gone with the call.
    assert!(!Path::new(args[3]).exists(), "{}", args[3]);

    let result = tool_result(&env, "c1");
    assert!(result.contains("hello-from-the-terminal"), "{result}");
    assert!(result.contains(dir.to_str().unwrap()), "{result}");
    // The editor's environment has tern's key (this process gave it to both); the command not.
    assert!(result.contains("key=unset"), "{result}");
    assert!(!result.contains(CANARY), "{result}");
    assert!(result.contains("[exit code 0 ·"), "{result}");
    // What the editor showed is what ran.
    let shown = &report["terminals"]["term-1"];
    assert!(
        shown["output"]
            .as_str()
            .is_some_and(|o| o.contains("hello-from-the-terminal\n")),
        "{shown}"
    );
    assert_eq!(shown["exit"]["exitCode"], 0, "{shown}");
    assert!(!alive(shown["pid"].as_u64().unwrap() as u32));

    // The call embeds the terminal by the editor's id, from the first update after it was made
    // to the last (which ACP requires before terminal/release).
    let (started, end) = call(&report, "c1");
    assert_eq!(started["kind"], "execute");
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(
        end["content"],
        json!([{"type": "terminal", "terminalId": "term-1"}])
    );
    let embedded = updates(&report, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "c1" && terminal_of(u).is_some())
        .unwrap();
    assert!(embedded.get("status").is_none(), "{embedded}");
    let release_ms = report["terminalRequests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "release" && r["terminalId"] == "term-1")
        .unwrap()["ms"]
        .as_u64()
        .unwrap();
    assert!(end["ms"].as_u64().unwrap() <= release_ms, "{report:#}");

    // c2: the sandbox holds in the editor's terminal too.
    let refused = tool_result(&env, "c2");
    assert!(
        refused.contains("Read-only file system") || refused.contains("Permission denied"),
        "{refused}"
    );
    assert!(refused.contains("[exit code 1 ·"), "{refused}");
    assert!(!escape.exists(), "the command wrote outside the workspace");

    // c3: the call's timeout is the runner's: the output before it is kept, the same note.
    let timed_out = tool_result(&env, "c3");
    assert!(timed_out.contains("started"), "{timed_out}");
    assert!(!timed_out.contains("late"), "{timed_out}");
    assert!(timed_out.contains("[timed out after 1 s"), "{timed_out}");

    // Each terminal: made, waited for, read, released — never killed.
    let expected: Vec<(String, String)> = (1..=3)
        .flat_map(|n| {
            let id = format!("term-{n}");
            ["create", "wait_for_exit", "output", "release"].map(|m| (m.to_string(), id.clone()))
        })
        .collect();
    let mut got = requests(&report);
    got.sort_by_key(|(_, id)| id.clone());
    assert_eq!(got, expected, "{report:#}");

    // The gateway decided and audited each call as before, and the workspace was recorded
    // before each command (the checkpoint gate); the events file says which terminal ran it.
    let audit = audit(env.home.path());
    for id in ["c1", "c2", "c3"] {
        assert_eq!(rule_of(&audit, id), "acp:once");
    }
    let events = env.events();
    let of = |kind: &str| of_type(&events, kind);
    let shown: Vec<(&str, &str)> = of("tool_terminal")
        .iter()
        .map(|e| {
            (
                e["call_id"].as_str().unwrap(),
                e["terminal_id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [("c1", "term-1"), ("c2", "term-2"), ("c3", "term-3")]
    );
    let calls: Vec<u64> = of("checkpoint_recorded")
        .iter()
        .filter_map(|e| e["call"].as_u64())
        .collect();
    assert_eq!(calls, [1, 2, 3], "{:#?}", of("checkpoint_recorded"));
}

/// A turn whose `sleep SECS` is running in the editor's terminal is cancelled; the editor kills
/// the terminal's process with `signal`. The report, and the runner's pid. (Each test sleeps
/// its own number of seconds, so the process checks of tests running at once never mix.)
async fn cancel_in_terminal(signal: &str, secs: u32) -> (Value, u32) {
    let env = RunEnv::new().await;
    let sleep = format!("sleep {secs}");
    env.server.enqueue(shell(
        "s1",
        &format!("echo sleeping-now; {sleep}; echo woke"),
    ));
    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "terminal": true,
            "terminalKillSignal": signal,
            "answers": ["allow_once"],
            "prompts": [{"text": "wait", "cancelOnOutput": "sleeping-now"}],
        }),
    )
    .await;
    assert_eq!(
        report["prompts"][0]["stopReason"], "cancelled",
        "{report:#}"
    );
    assert!(
        report["prompts"][0]["ms"].as_u64().unwrap() < 15_000,
        "{report:#}"
    );
    // Killed through ACP while it ran, then released (after the call's last update).
    let got = requests(&report);
    assert_eq!(
        got.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["create", "wait_for_exit", "kill", "output", "release"],
        "{report:#}"
    );
    let terminal = &report["terminals"]["term-1"];
    assert_eq!(terminal["runningAtKill"], true, "{report:#}");
    assert!(!terminal["output"].as_str().unwrap().contains("woke"));
    let (_, end) = call(&report, "s1");
    assert_eq!(terminal_of(end), Some("term-1"), "{end}");
    let runner = terminal["pid"].as_u64().unwrap() as u32;
    // Nothing of it is left: not the runner, not the command (sandboxed: killed with it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while (alive(runner) || !pids_with(&sleep).is_empty()) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!alive(runner));
    assert_eq!(pids_with(&sleep), Vec::<u32>::new());
    (report, runner)
}

#[tokio::test]
async fn a_cancelled_command_is_killed_in_the_terminal_and_released() {
    // SIGTERM (Node's default kill): the runner cancels the command as tern-shell would (its
    // process group gets SIGTERM) and exits with its status, 128 + 15.
    let (report, _) = cancel_in_terminal("SIGTERM", 37).await;
    assert_eq!(
        report["terminals"]["term-1"]["exit"],
        json!({"exitCode": 143, "signal": null}),
        "{report:#}"
    );
}

#[tokio::test]
async fn a_sigkilled_terminal_takes_the_sandboxed_command_with_it() {
    // SIGKILL: the runner cannot forward it, the sandbox's supervisor sees its parent die.
    let (report, _) = cancel_in_terminal("SIGKILL", 38).await;
    assert_eq!(
        report["terminals"]["term-1"]["exit"],
        json!({"exitCode": null, "signal": "SIGKILL"}),
        "{report:#}"
    );
}

#[tokio::test]
async fn a_refused_terminal_fails_the_call_and_runs_nothing() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    env.server.enqueue(shell("r1", "touch made.txt"));
    env.server
        .enqueue(AnthropicTurn::new().text(&["OK."]).finish("end_turn"));
    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "terminal": true,
            "terminalRefuse": "terminals are off in this window",
            "answers": ["allow_once"],
            "prompts": [{"text": "touch"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(call(&report, "r1").1["status"], "failed", "{report:#}");
    let result = tool_result(&env, "r1");
    assert!(
        result.contains("the editor refused to run the command in its terminal"),
        "{result}"
    );
    assert!(
        result.contains("terminals are off in this window"),
        "{result}"
    );
    assert!(!dir.join("made.txt").exists());
    assert_eq!(requests(&report), [("create".into(), "term-1".into())]);
}

#[tokio::test]
async fn without_the_terminal_capability_tern_shell_runs_the_command_itself() {
    let env = RunEnv::new().await;
    env.server.enqueue(shell("n1", "echo in-tern-shell"));
    env.server
        .enqueue(AnthropicTurn::new().text(&["OK."]).finish("end_turn"));
    let report = editor(
        &env,
        json!({
            "scenario": "session",
            "answers": ["allow_once"],
            "prompts": [{"text": "echo"}],
        }),
    )
    .await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(report["terminalRequests"], json!([]), "{report:#}");
    assert!(tool_result(&env, "n1").contains("in-tern-shell"));
    let (_, end) = call(&report, "n1");
    assert_eq!(end["content"][0]["type"], "content", "{end}");
}

#[tokio::test]
async fn the_python_sdk_shows_the_command_in_its_terminal_too() {
    let env = RunEnv::new().await;
    let dir = std::fs::canonicalize(env.dir.path()).unwrap();
    // The editor's terminal is a pty; the command still gets none (as in tern-shell).
    env.server.enqueue(shell(
        "p1",
        "echo from-python-terminal; [ -t 1 ] && echo stdout-is-a-tty || echo stdout-is-no-tty",
    ));
    env.server
        .enqueue(AnthropicTurn::new().text(&["OK."]).finish("end_turn"));
    let plan = json!({
        "tern": bin("tern"),
        "cwd": dir,
        "answers": ["allow_once"],
        "terminal": true,
        "prompts": ["echo"],
    });
    let report = python_editor(&env, &plan).await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    let result = tool_result(&env, "p1");
    assert!(result.contains("from-python-terminal"), "{result}");
    assert!(result.contains("stdout-is-no-tty"), "{result}");
    // The pty showed it (its line discipline turns \n into \r\n).
    let shown = report["terminalOutput"]["py-term-1"].as_str().unwrap();
    assert!(
        shown.contains("from-python-terminal\r\nstdout-is-no-tty\r\n"),
        "{shown:?}"
    );
    let methods: Vec<&str> = report["terminalRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["create", "wait_for_exit", "output", "release"],
        "{report:#}"
    );
    let id = report["terminalRequests"][1]["terminalId"]
        .as_str()
        .unwrap();
    let end = updates(&report, "tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == "p1")
        .unwrap();
    assert_eq!(terminal_of(end), Some(id), "{end}");
    assert_eq!(rule_of(&audit(env.home.path()), "p1"), "acp:once");
}
