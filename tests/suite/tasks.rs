//! Tools that must run as tasks (SEP-1686), against the reference server-everything:
//! `simulate-research-query` declares `execution.taskSupport: "required"` and used to fail with
//! -32601 on every call.

use std::time::{Duration, Instant};

use serde_json::json;
use tern_e2e::dep;
use tern_mcp::{CallError, CallOptions, ServerState};

use tern_e2e::pool_harness::{Harness, stdio_spec};

async fn everything() -> Harness {
    let mut spec = stdio_spec(
        "everything",
        &dep("npm/node_modules/.bin/mcp-server-everything").to_string_lossy(),
        &[],
    );
    spec.startup_timeout = Duration::from_secs(90);
    let h = Harness::start(vec![spec]).await;
    assert!(
        matches!(h.state("everything"), ServerState::Ready { .. }),
        "{:?}",
        h.state("everything")
    );
    h
}

fn research(ambiguous: bool) -> serde_json::Map<String, serde_json::Value> {
    json!({"topic": "python", "ambiguous": ambiguous})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_task_only_tool_runs_as_a_task_with_progress_and_its_questions_answered() {
    let h = everything().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = h
        .pool
        .call(
            "everything",
            "simulate-research-query",
            research(true),
            CallOptions {
                progress: Some(tx),
                ..CallOptions::new(Duration::from_secs(60))
            },
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("# Research Report: python"),
        "{}",
        out.text
    );
    // The server asked (elicitation, through tasks/result) and tern declined: a headless run.
    assert!(out.text.contains("User declined"), "{}", out.text);
    let mut messages = Vec::new();
    while let Ok(p) = rx.try_recv() {
        messages.extend(p.message);
    }
    assert!(
        messages.iter().any(|m| m.contains("working")),
        "{messages:?}"
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_task_ends_the_call_at_once() {
    let h = everything().await;
    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let err = h
        .pool
        .call(
            "everything",
            "simulate-research-query",
            research(false),
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
    h.pool.shutdown().await;
}
