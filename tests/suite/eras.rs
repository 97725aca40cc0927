//! MCP's two eras through tern's pool: tern's own servers answer a 2026-07-28 client (rmcp in
//! `Discover` mode, no handshake); with `Auto`, a legacy server gets `initialize` after the
//! probe, and a restart remembers which era the server speaks.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tern_e2e::bin;
use tern_mcp::{CallOptions, Lifecycle, ServerState};

use tern_e2e::pool_harness::{Harness, stdio_spec, test_server_spec};

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn revision(h: &Harness, server: &str) -> String {
    match h.state(server) {
        ServerState::Ready {
            protocol_version, ..
        } => protocol_version,
        other => panic!("{server} is not ready: {other:?}"),
    }
}

#[tokio::test]
async fn tern_servers_answer_a_2026_client_that_never_initializes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "stateless hello\n").unwrap();
    let root_s = root.to_string_lossy().into_owned();
    let mut specs = vec![
        stdio_spec(
            "fs",
            &bin("tern-fs").to_string_lossy(),
            &["--root", &root_s],
        ),
        stdio_spec(
            "shell",
            &bin("tern-shell").to_string_lossy(),
            &["--root", &root_s],
        ),
        stdio_spec("web", &bin("tern-web").to_string_lossy(), &[]),
    ];
    for s in &mut specs {
        s.lifecycle = Lifecycle::Discover;
    }
    let h = Harness::start(specs).await;
    for server in ["fs", "shell", "web"] {
        assert_eq!(revision(&h, server), "2026-07-28");
    }
    let call = |server: &'static str, tool: &'static str, a: Value| {
        let pool = h.pool.clone();
        async move {
            pool.call(
                server,
                tool,
                args(a),
                CallOptions::new(Duration::from_secs(30)),
            )
            .await
            .unwrap()
        }
    };
    let read = call("fs", "read_file", json!({"path": "notes.txt"})).await;
    assert!(read.text.contains("stateless hello"), "{}", read.text);
    let run = call("shell", "run", json!({"command": "echo from-shell"})).await;
    assert!(run.text.contains("from-shell"), "{}", run.text);
    // The SSRF guard answers a loopback URL with an error result: a full round trip.
    let fetch = call("web", "fetch", json!({"url": "http://127.0.0.1:9/"})).await;
    assert!(fetch.is_error, "{}", fetch.text);
    h.pool.shutdown().await;
}

#[tokio::test]
async fn auto_probes_then_initializes_a_legacy_server_and_a_restart_skips_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("methods.jsonl");
    let audit_s = audit.to_string_lossy().into_owned();
    let h = Harness::start(vec![
        test_server_spec("old", &["--raw", "plain", "--audit", &audit_s]),
        test_server_spec("old_rmcp", &["--legacy"]),
        test_server_spec("new", &[]),
    ])
    .await;
    assert_eq!(revision(&h, "old"), "2025-11-25");
    assert_eq!(revision(&h, "old_rmcp"), "2025-11-25");
    assert_eq!(revision(&h, "new"), "2026-07-28");
    assert_eq!(
        h.echo("old_rmcp", "legacy rmcp").await.unwrap(),
        "legacy rmcp"
    );
    assert_eq!(h.echo("new", "stateless").await.unwrap(), "stateless");

    // Crash the legacy server: its restart opens with `initialize` straight away.
    let _ = h
        .pool
        .call(
            "old",
            "crash",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(10)),
        )
        .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let methods = methods(&audit);
        if methods.iter().filter(|m| *m == "initialize").count() == 2
            && matches!(h.state("old"), ServerState::Ready { .. })
        {
            assert_eq!(
                methods.iter().filter(|m| *m == "server/discover").count(),
                1,
                "the restart probed again: {methods:?}"
            );
            assert_eq!(methods[0], "server/discover", "{methods:?}");
            assert_eq!(methods[1], "initialize", "{methods:?}");
            break;
        }
        assert!(Instant::now() < deadline, "no restart: {methods:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(h.echo("old", "back").await.unwrap(), "back");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_server_that_ignores_the_probe_still_starts_within_its_startup_timeout() {
    let mut spec = test_server_spec("quiet", &["--raw", "silent-probe"]);
    spec.startup_timeout = Duration::from_secs(6);
    let started = Instant::now();
    let h = Harness::start(vec![spec]).await;
    assert_eq!(revision(&h, "quiet"), "2025-11-25");
    // The probe gives up after a third of the startup timeout.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(h.echo("quiet", "here").await.unwrap(), "here");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_server_answering_the_probe_only_after_the_fallback_is_reconnected_in_its_era() {
    // The probe gives up after 1 s (a third of 3 s, at least 1 s); the server answers it at
    // 1.5 s and then refuses the fallback `initialize`, as a slow Python SDK server does.
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let mut spec = test_server_spec(
        "late",
        &["--raw", "slow-discover", "--audit", audit.to_str().unwrap()],
    );
    spec.startup_timeout = Duration::from_secs(3);
    let h = Harness::start(vec![spec]).await;
    assert_eq!(revision(&h, "late"), "2026-07-28", "{:?}", h.state("late"));
    assert_eq!(h.echo("late", "in time").await.unwrap(), "in time");
    // Two connections: the first fell back to initialize, the second stayed with discover.
    let m = methods(&audit);
    assert_eq!(
        m.iter().filter(|m| *m == "server/discover").count(),
        2,
        "{m:?}"
    );
    assert_eq!(m.iter().filter(|m| *m == "initialize").count(), 1, "{m:?}");
    h.pool.shutdown().await;
}

/// The methods a `--raw` server received, in order.
pub(crate) fn methods(audit: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["method"].as_str().unwrap_or_default().to_string())
        .collect()
}
