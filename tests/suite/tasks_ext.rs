//! Calls the server turns into tasks: the 2026-07-28 tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`), against rmcp's own server-side `TaskManager` (behind
//! `tern-test-server --tasks`, tool `job`). tern declares the extension, follows the task with
//! `tasks/get` at the server's poll interval, answers its questions with `tasks/update`, and
//! cancels it with `tasks/cancel`; the engine shows each state change as a `tool_task` event.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tern_e2e::{
    pool_harness::{Harness, test_server_spec},
    run_env::{RunEnv, of_type},
};
use tern_mcp::{
    CallError, CallOptions, ElicitationAnswer, ElicitationKind, ElicitationRequest, Elicitor,
    Progress,
};
use tern_model::mock::script::AnthropicTurn;

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Answers every form with the same content and remembers what it was asked.
struct Confirmer(std::sync::Mutex<Vec<String>>, Value);

impl Confirmer {
    fn new(answer: Value) -> Self {
        Self(std::sync::Mutex::default(), answer)
    }
}

#[async_trait::async_trait]
impl Elicitor for Confirmer {
    async fn elicit(&self, request: &ElicitationRequest) -> ElicitationAnswer {
        if let ElicitationKind::Form { message, .. } = &request.kind {
            self.0.lock().unwrap().push(message.clone());
        }
        ElicitationAnswer::Accept(args(self.1.clone()))
    }
}

async fn harness(audit: &std::path::Path, elicitor: Option<Arc<Confirmer>>) -> Harness {
    let audit = audit.to_string_lossy().into_owned();
    let spec = test_server_spec("ts", &["--tasks", "--audit", &audit]);
    Harness::start_with(
        tempfile::tempdir().unwrap(),
        vec![spec],
        tern_mcp::pins::PinStore::in_memory(),
        |o| {
            if let Some(e) = elicitor {
                o.elicitor = Some(e);
            }
        },
    )
    .await
}

fn drain(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Progress>) -> Vec<tern_mcp::TaskProgress> {
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.extend(p.task);
    }
    seen
}

#[tokio::test]
async fn a_task_the_server_makes_of_a_call_is_followed_at_its_poll_interval_to_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let h = harness(&dir.path().join("audit.jsonl"), None).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = h
        .pool
        .call(
            "ts",
            "job",
            args(json!({"steps": 4, "step_ms": 300})),
            CallOptions {
                progress: Some(tx),
                ..CallOptions::new(Duration::from_secs(30))
            },
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "job done after 4 steps; answer: none asked");
    let seen = drain(&mut rx);
    assert!(seen.iter().all(|t| !t.task_id.is_empty()), "{seen:?}");
    assert_eq!(seen[0].status, "working", "{seen:?}");
    assert_eq!(seen[0].message.as_deref(), Some("step 0 of 4"), "{seen:?}");
    // The server suggests 150 ms between polls; steps take 300 ms. Polling at tern's default
    // (1 s) would see at most one step in between.
    let steps: Vec<_> = seen
        .iter()
        .filter_map(|t| t.message.as_deref())
        .filter(|m| m.starts_with("step ") && *m != "step 0 of 4")
        .collect();
    assert!(steps.len() >= 3, "{seen:?}");
    assert_eq!(seen.last().unwrap().status, "completed", "{seen:?}");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_task_that_asks_is_answered_with_tasks_update() {
    let dir = tempfile::tempdir().unwrap();
    let confirmer = Arc::new(Confirmer::new(json!({"confirm": true})));
    let h = harness(&dir.path().join("audit.jsonl"), Some(confirmer.clone())).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = h
        .pool
        .call(
            "ts",
            "job",
            args(json!({"steps": 1, "step_ms": 50, "ask": true})),
            CallOptions {
                progress: Some(tx),
                ..CallOptions::new(Duration::from_secs(30))
            },
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    // What the person answered reached the task, through tasks/update.
    assert_eq!(
        out.text,
        r#"job done after 1 steps; answer: {"action":"accept","content":{"confirm":true}}"#
    );
    assert_eq!(
        *confirmer.0.lock().unwrap(),
        ["Go ahead with the job?"],
        "asked exactly once"
    );
    let seen = drain(&mut rx);
    assert!(
        seen.iter().any(|t| t.status == "input_required"),
        "{seen:?}"
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn without_a_person_the_question_is_declined_and_the_task_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let h = harness(&dir.path().join("audit.jsonl"), None).await;
    let out = h
        .pool
        .call(
            "ts",
            "job",
            args(json!({"steps": 1, "step_ms": 10, "ask": true})),
            CallOptions::new(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert_eq!(
        out.text,
        r#"job done after 1 steps; answer: {"action":"decline"}"#
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_call_cancels_its_task_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let h = harness(&audit, None).await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let err = h
        .pool
        .call(
            "ts",
            "job",
            args(json!({"steps": 100, "step_ms": 100})),
            CallOptions {
                cancel,
                ..CallOptions::new(Duration::from_secs(60))
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Cancelled), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The server heard tasks/cancel: the job stopped there (it appends a line when it does).
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        if text.contains(r#"{"cancelled":"job"}"#) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the task was not cancelled: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_call_that_times_out_cancels_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let h = harness(&audit, None).await;
    let err = h
        .pool
        .call(
            "ts",
            "job",
            args(json!({"steps": 100, "step_ms": 100})),
            CallOptions::new(Duration::from_millis(700)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !std::fs::read_to_string(&audit)
        .unwrap_or_default()
        .contains(r#"{"cancelled":"job"}"#)
    {
        assert!(Instant::now() < deadline, "the task was not cancelled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.pool.shutdown().await;
}

/// A whole run: the model calls the tool, the server makes a task of it, the run's events show
/// the task's states, and the model gets the result.
#[tokio::test]
async fn a_run_shows_the_task_and_the_model_gets_its_result() {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.shell]\nenabled = false\n[mcp_servers.ts]\ncommand = {:?}\nargs = [\"--tasks\"]\nrequired = true\n",
        tern_e2e::bin("tern-test-server").to_string_lossy(),
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "ts__job", &[r#"{"steps": 2, "step_ms": 200}"#])
            .finish("tool_use"),
    );
    env.answer("Done.");
    let out = env.run(&["run", "--mode", "yolo", "run the job"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = env.events();
    let tasks = of_type(&events, "tool_task");
    assert!(!tasks.is_empty(), "no tool_task events");
    assert!(tasks.iter().all(|t| t["call_id"] == "toolu_1"), "{tasks:?}");
    assert_eq!(tasks[0]["status"], "working", "{tasks:?}");
    assert_eq!(tasks.last().unwrap()["status"], "completed", "{tasks:?}");
    let last = env.server.model_requests().pop().unwrap();
    assert!(
        String::from_utf8_lossy(&last.body).contains("job done after 2 steps"),
        "the model did not get the task's result"
    );
}

// ---- the Python SDK: the extension written with the SDK's own extension API ----------------

async fn python(audit: &std::path::Path, elicitor: Option<Arc<Confirmer>>) -> Harness {
    let script = tern_e2e::workspace_root().join("tests/interop/tasks_server.py");
    let spec = tern_e2e::pool_harness::stdio_spec(
        "py",
        &tern_e2e::dep("venv/bin/python").to_string_lossy(),
        &[
            &script.to_string_lossy(),
            "--audit",
            &audit.to_string_lossy(),
        ],
    );
    let h = Harness::start_with(
        tempfile::tempdir().unwrap(),
        vec![spec],
        tern_mcp::pins::PinStore::in_memory(),
        |o| {
            if let Some(e) = elicitor {
                o.elicitor = Some(e);
            }
        },
    )
    .await;
    assert!(
        matches!(h.state("py"), tern_mcp::ServerState::Ready { .. }),
        "{:?}",
        h.state("py")
    );
    h
}

#[tokio::test]
async fn a_python_sdk_servers_task_is_followed_and_its_question_answered() {
    let dir = tempfile::tempdir().unwrap();
    let confirmer = Arc::new(Confirmer::new(json!({"name": "Ada"})));
    let h = python(&dir.path().join("audit.jsonl"), Some(confirmer.clone())).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = h
        .pool
        .call(
            "py",
            "survey",
            args(json!({"steps": 3})),
            CallOptions {
                progress: Some(tx),
                ..CallOptions::new(Duration::from_secs(30))
            },
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        r#"survey done: {"action": "accept", "content": {"name": "Ada"}}"#
    );
    assert_eq!(*confirmer.0.lock().unwrap(), ["Who is asking?"]);
    let seen = drain(&mut rx);
    let statuses: Vec<&str> = seen.iter().map(|t| t.status.as_str()).collect();
    assert!(statuses.contains(&"input_required"), "{seen:?}");
    assert_eq!(statuses.last(), Some(&"completed"), "{seen:?}");
    assert!(
        seen.iter()
            .filter(|t| t.message.as_deref().is_some_and(|m| m.starts_with("step ")))
            .count()
            >= 3,
        "{seen:?}"
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_python_sdk_servers_task_cancels_it_there() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let h = python(&audit, None).await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        c2.cancel();
    });
    let err = h
        .pool
        .call(
            "py",
            "survey",
            args(json!({"steps": 100})),
            CallOptions {
                cancel,
                ..CallOptions::new(Duration::from_secs(60))
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Cancelled), "{err:?}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !std::fs::read_to_string(&audit)
        .unwrap_or_default()
        .contains(r#"{"cancelled": "survey"}"#)
    {
        assert!(Instant::now() < deadline, "the task was not cancelled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    h.pool.shutdown().await;
}

/// In the REPL a call the server runs as a task shows the task's state and its status message
/// on the spinner line while it works (issue 23 item 5: "long tool calls show as tasks in the
/// terminal"), and the result follows as for any call.
#[tokio::test]
async fn the_repl_shows_a_running_task_on_the_spinner_line() {
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.shell]\nenabled = false\n[mcp_servers.ts]\ncommand = {:?}\nargs = [\"--tasks\"]\nrequired = true\n",
        tern_e2e::bin("tern-test-server").to_string_lossy(),
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "ts__job", &[r#"{"steps": 8, "step_ms": 400}"#])
            .finish("tool_use"),
    );
    env.answer("The job finished.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "run the job\r"},
        {"expect": "task working: step ", "timeout": 20},
        {"screen": "task working: step ", "hold": 0.3},
        {"expect": "The job finished.", "timeout": 20},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["--mode", "yolo"]).await;
    let output = report["output"].as_str().unwrap_or_default();
    // The spinner followed the task through its steps (at least two different ones).
    let steps: std::collections::BTreeSet<&str> = output
        .match_indices("task working: step ")
        .filter_map(|(i, m)| output[i + m.len()..].split_whitespace().next())
        .collect();
    assert!(steps.len() >= 2, "steps seen: {steps:?}\n{output}");
    let last = env.server.model_requests().pop().unwrap();
    assert!(
        String::from_utf8_lossy(&last.body).contains("job done after 8 steps"),
        "the model did not get the task's result"
    );
}
