//! Hosting other people's servers faithfully (issue 23, item 4): task-only tools over
//! streamable HTTP, against the reference server-everything.

use std::time::Duration;

use serde_json::json;
use tern_e2e::dep;
use tern_e2e::pool_harness::Harness;
use tern_mcp::{CallOptions, ServerSpec, ServerState, TransportSpec};

/// server-everything over streamable HTTP on a free port; killed on drop.
struct EverythingHttp {
    child: std::process::Child,
    url: String,
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn everything_http() -> EverythingHttp {
    use std::io::BufRead;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(dep("npm/node_modules/.bin/mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It says on stderr when it listens.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("listening on port") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("server-everything did not start listening in 60 s");
    EverythingHttp {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[tokio::test]
async fn a_task_only_tool_runs_as_a_task_over_streamable_http() {
    let server = everything_http();
    let mut spec = ServerSpec::new(
        "everything",
        TransportSpec::Http {
            url: server.url.clone(),
            bearer_token: None,
            headers: Default::default(),
        },
    );
    spec.startup_timeout = Duration::from_secs(30);
    // `protocol = "2025-11-25"`: the era whose tasks (SEP-1686) tern follows; in 2026-07-28
    // tasks are the `io.modelcontextprotocol/tasks` extension.
    spec.lifecycle = tern_mcp::Lifecycle::Initialize;
    let h = Harness::start(vec![spec]).await;
    assert!(
        matches!(h.state("everything"), ServerState::Ready { .. }),
        "{:?}",
        h.state("everything")
    );
    let args = json!({"topic": "rust", "ambiguous": false})
        .as_object()
        .cloned()
        .unwrap_or_default();
    for _ in 0..2 {
        // The first call learns from the refusal; the second goes as a task at once.
        let out = h
            .pool
            .call(
                "everything",
                "simulate-research-query",
                args.clone(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await
            .unwrap();
        assert!(!out.is_error, "{}", out.text);
        assert!(out.text.contains("# Research Report: rust"), "{}", out.text);
    }
    h.pool.shutdown().await;
}

/// The methods a `tern-test-server --raw … --audit FILE` received, in order.
fn methods(audit: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["method"].as_str().map(str::to_string))
        .collect()
}

/// A server that never answers `server/discover` costs the probe's timeout once: the next
/// process (a new pool with the same tool cache) opens with `initialize` at once.
#[tokio::test]
async fn the_era_a_server_speaks_is_remembered_across_processes() {
    use tern_e2e::pool_harness::test_server_spec;
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = cache_dir.path().join("tool-cache.json");
    let audit = cache_dir.path().join("methods.jsonl");
    let audit_s = audit.to_string_lossy().into_owned();
    let spec = || {
        let mut spec = test_server_spec("quiet", &["--raw", "silent-probe", "--audit", &audit_s]);
        spec.startup_timeout = Duration::from_secs(6);
        spec
    };
    for run in 0..2 {
        let started = std::time::Instant::now();
        let cache = cache.clone();
        let h = Harness::start_with(
            tempfile::tempdir().unwrap(),
            vec![spec()],
            tern_mcp::pins::PinStore::in_memory(),
            move |o| o.tool_cache = Some(cache),
        )
        .await;
        assert!(
            matches!(h.state("quiet"), ServerState::Ready { .. }),
            "{:?}",
            h.state("quiet")
        );
        assert_eq!(h.echo("quiet", "here").await.unwrap(), "here");
        let took = started.elapsed();
        h.pool.shutdown().await;
        let seen = methods(&audit);
        if run == 0 {
            // The probe waited (a third of the startup timeout, at least 1 s) before `initialize`.
            assert!(took >= Duration::from_secs(1), "{took:?}");
        } else {
            assert_eq!(
                seen.iter().filter(|m| *m == "server/discover").count(),
                1,
                "the second process probed again: {seen:?}"
            );
            assert!(
                took < Duration::from_secs(1),
                "the second start took {took:?}"
            );
        }
    }
}

/// `protocol = "2025-11-25"` (here the spec's `Lifecycle::Initialize`, what the config key sets)
/// skips the probe even on the first start; `"2026-07-28"` never falls back.
#[tokio::test]
async fn a_pinned_era_is_the_one_used() {
    use tern_e2e::pool_harness::test_server_spec;
    use tern_mcp::Lifecycle;
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("methods.jsonl");
    let audit_s = audit.to_string_lossy().into_owned();
    let mut old = test_server_spec("old", &["--raw", "silent-probe", "--audit", &audit_s]);
    old.lifecycle = Lifecycle::Initialize;
    let mut new = test_server_spec("new", &[]);
    new.lifecycle = Lifecycle::Initialize;
    let mut strict = test_server_spec("strict", &["--raw", "plain"]);
    strict.lifecycle = Lifecycle::Discover;
    strict.startup_timeout = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let h = Harness::start(vec![old, new, strict]).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        methods(&audit).first().map(String::as_str),
        Some("initialize")
    );
    for (server, want) in [("old", "2025-11-25"), ("new", "2025-11-25")] {
        match h.state(server) {
            ServerState::Ready {
                protocol_version, ..
            } => assert_eq!(protocol_version, want),
            other => panic!("{server}: {other:?}"),
        }
    }
    assert!(
        matches!(h.state("strict"), ServerState::Failed { .. }),
        "a legacy server pinned to 2026-07-28 must not start: {:?}",
        h.state("strict")
    );
    h.pool.shutdown().await;
}
