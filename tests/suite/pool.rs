//! The server pool against real processes: `tern-test-server` in each of its
//! failure modes, next to a healthy server that must keep working.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;
use tern_e2e::pool_harness::{Harness, host_env, http_test_server, stdio_spec, test_server_spec};
use tern_mcp::{
    CallError, CallOptions, EventSink, PoolOptions, ServerPool, ServerSpec, ServerState,
    TransportSpec, pins::PinStore,
};
use tern_protocol::Event;

fn failed(server: &'static str) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::ServerFailed { server: s, .. } if s == server)
}

#[tokio::test]
async fn a_server_crashing_at_start_is_reported_with_its_stderr_and_others_carry_on() {
    let h = Harness::start(vec![
        test_server_spec("bad", &["--crash-at-start"]),
        test_server_spec("good", &[]),
    ])
    .await;
    let e = h.wait_event("server_failed", failed("bad")).await;
    let Event::ServerFailed {
        reason,
        stderr_tail,
        will_restart,
        ..
    } = e
    else {
        unreachable!()
    };
    assert!(!will_restart);
    assert!(reason.contains("handshake"), "{reason}");
    assert!(
        stderr_tail.iter().any(|l| l.contains("crashing at start")),
        "{stderr_tail:?}"
    );
    assert_eq!(h.echo("good", "still here").await.unwrap(), "still here");
    let (table, _) = h.pool.table();
    assert!(table.get("good__echo").is_some());
    assert!(table.entries().iter().all(|e| e.server != "bad"));
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_is_named_and_required_servers_fail_the_run() {
    let mut spec = stdio_spec("ghost", "no-such-mcp-server-binary", &[]);
    spec.required = true;
    let h = Harness::start(vec![spec, test_server_spec("good", &[])]).await;
    let failure = h.pool.required_failure().expect("required failure");
    let ServerState::Failed { reason } = &failure.state else {
        panic!("{failure:?}")
    };
    assert!(reason.contains("no-such-mcp-server-binary"), "{reason}");
    assert!(reason.contains("not on PATH"), "{reason}");
    assert_eq!(h.echo("good", "ok").await.unwrap(), "ok");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out() {
    let mut spec = test_server_spec("mute", &["--hang-initialize"]);
    spec.startup_timeout = Duration::from_millis(500);
    let started = Instant::now();
    let h = Harness::start(vec![spec, test_server_spec("good", &[])]).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let e = h.wait_event("server_failed", failed("mute")).await;
    let Event::ServerFailed { reason, .. } = e else {
        unreachable!()
    };
    assert!(
        reason.contains("did not become ready within 0.5 s"),
        "{reason}"
    );
    assert_eq!(h.echo("good", "ok").await.unwrap(), "ok");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn garbage_lines_on_stdout_are_skipped_and_the_server_still_works() {
    // Non-JSON lines before the handshake (a server that prints a banner) must
    // neither hang nor crash the pool: rmcp skips them and the session proceeds.
    let h = Harness::start(vec![
        test_server_spec("noisy", &["--garbage-stdout"]),
        test_server_spec("good", &[]),
    ])
    .await;
    assert!(
        matches!(h.state("noisy"), ServerState::Ready { .. }),
        "{:?}",
        h.state("noisy")
    );
    assert_eq!(h.echo("noisy", "x").await.unwrap(), "x");
    assert_eq!(h.echo("good", "ok").await.unwrap(), "ok");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_ends_the_call_with_stderr_then_the_server_restarts() {
    let h = Harness::start(vec![test_server_spec("flaky", &[])]).await;
    let err = h
        .pool
        .call(
            "flaky",
            "crash",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(60)),
        )
        .await
        .unwrap_err();
    let CallError::ServerCrashed { stderr_tail, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        stderr_tail.iter().any(|l| l.contains("dying mid-call")),
        "{stderr_tail:?}"
    );
    h.wait_event("restart", |e| matches!(e, Event::ServerRestarting { .. }))
        .await;
    // Ready again (the second ServerReady), tools re-listed, calls work.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let readies = h
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::ServerReady { .. }))
            .count();
        if readies >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "never restarted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(h.echo("flaky", "back").await.unwrap(), "back");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_server_crashing_too_often_is_marked_failed() {
    let h = Harness::start(vec![test_server_spec("flaky", &[])]).await;
    for _ in 0..6 {
        // Wait until it is ready again, then crash it.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !matches!(
            h.state("flaky"),
            ServerState::Ready { .. } | ServerState::Failed { .. }
        ) {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if matches!(h.state("flaky"), ServerState::Failed { .. }) {
            break;
        }
        let _ = h
            .pool
            .call(
                "flaky",
                "crash",
                serde_json::Map::new(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let ServerState::Failed { reason } = h.state("flaky") {
            assert!(reason.contains("not restarting"), "{reason}");
            break;
        }
        assert!(Instant::now() < deadline, "still {:?}", h.state("flaky"));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.pool.shutdown().await;
}

#[tokio::test]
async fn odd_tool_names_and_schemas_never_shadow_or_break_the_table() {
    let h = Harness::start(vec![test_server_spec(
        "odd",
        &["--long-name", "--colliding", "--invalid-schema"],
    )])
    .await;
    let (table, dropped) = h.pool.table();
    for e in table.entries() {
        assert!(e.name.len() <= 64, "{}", e.name);
        assert!(
            e.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            e.name
        );
    }
    let long = table
        .entries()
        .iter()
        .find(|e| e.tool == "l".repeat(100))
        .expect("long-named tool kept");
    assert_eq!(long.name.len(), 64);
    let ab: Vec<_> = table
        .entries()
        .iter()
        .filter(|e| e.tool == "a.b" || e.tool == "a_b")
        .collect();
    assert_eq!(ab.len(), 2);
    assert_ne!(ab[0].name, ab[1].name);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].tool, "bad_schema");
    assert!(dropped[0].reason.contains("invalid inputSchema"));
    // The rest of the server is fine: calling through the hashed name works.
    let entry = table.get(&long.name).unwrap();
    let out = h
        .pool
        .call(
            &entry.server,
            &entry.tool,
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(
        out.is_error,
        "the test server does not implement it: an error result"
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn list_changed_relists_and_a_changed_definition_is_held_out() {
    let h = Harness::start(vec![test_server_spec(
        "drift",
        &["--list-changed-after-ms", "300"],
    )])
    .await;
    assert!(h.pool.table().0.get("drift__echo").is_some());
    h.wait_event("tools_changed", |e| matches!(e, Event::ToolsChanged { .. }))
        .await;
    let e = h
        .wait_event(
            "tool_dropped",
            |e| matches!(e, Event::ToolDropped { tool, .. } if tool == "echo"),
        )
        .await;
    let Event::ToolDropped { reason, .. } = e else {
        unreachable!()
    };
    assert!(reason.contains("tern mcp approve drift"), "{reason}");
    assert!(reason.contains("(changed)"), "{reason}");
    assert!(h.pool.table().0.get("drift__echo").is_none());
    assert!(h.pool.table().0.get("drift__noop").is_some());
    let status = h.pool.statuses().pop().unwrap();
    assert_eq!(status.held.len(), 1);
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_slow_server_joins_the_table_when_ready() {
    let dir = tempfile::tempdir().unwrap();
    let sink: EventSink = Arc::new(|_| {});
    let opts = PoolOptions {
        host_env: host_env(),
        ..PoolOptions::default()
    };
    let pool = ServerPool::start(
        vec![test_server_spec("slow", &["--slow-start-ms", "700"])],
        opts,
        PinStore::load(&dir.path().join("pins.json")).unwrap(),
        sink,
    );
    // Asked before it is ready: not in the table yet (nothing remembered), and a call waits
    // for it (within the call's timeout) instead of failing.
    assert!(pool.table().0.is_empty());
    assert_eq!(pool.starting(), ["slow"]);
    let asked = std::time::Instant::now();
    pool.call(
        "slow",
        "noop",
        serde_json::Map::new(),
        CallOptions::new(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert!(
        asked.elapsed() >= Duration::from_millis(500),
        "{:?}",
        asked.elapsed()
    );
    assert!(pool.table().0.get("slow__noop").is_some());
    assert!(pool.starting().is_empty());
    // A call that cannot wait long enough says why.
    let pool2 = ServerPool::start(
        vec![test_server_spec("slower", &["--slow-start-ms", "3000"])],
        PoolOptions {
            host_env: host_env(),
            ..PoolOptions::default()
        },
        PinStore::load(&dir.path().join("pins2.json")).unwrap(),
        Arc::new(|_| {}),
    );
    let err = pool2
        .call(
            "slower",
            "noop",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NotReady { .. }), "{err:?}");
    pool.shutdown().await;
    pool2.shutdown().await;
}

#[tokio::test]
async fn paginated_tools_list_is_followed_to_the_end() {
    let h = Harness::start(vec![test_server_spec("paged", &["--page-size", "2"])]).await;
    let (table, _) = h.pool.table();
    // 11 tools in pages of 2: six pages, the last one short.
    assert_eq!(
        table.len(),
        11,
        "{:?}",
        table.entries().iter().map(|e| &e.name).collect::<Vec<_>>()
    );
    h.pool.shutdown().await;
}

#[tokio::test]
async fn servers_see_no_api_keys_but_configured_env_vars() {
    let mut spec = test_server_spec("envy", &[]);
    if let TransportSpec::Stdio { pass_env, env, .. } = &mut spec.transport {
        pass_env.push("PASSED_THROUGH".into());
        env.insert("EXPLICIT".into(), "set".into());
    }
    let h = Harness::start(vec![spec]).await;
    let get = |name: &'static str| {
        let pool = h.pool.clone();
        async move {
            pool.call(
                "envy",
                "env",
                json!({"name": name})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await
            .unwrap()
            .text
        }
    };
    assert_eq!(get("ANTHROPIC_API_KEY").await, "<unset>");
    assert_eq!(get("PASSED_THROUGH").await, "yes");
    assert_eq!(get("EXPLICIT").await, "set");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn timeouts_and_cancellation_end_calls_and_reach_the_server() {
    let h = Harness::start(vec![test_server_spec("slowpoke", &[])]).await;
    let args = json!({"ms": 60_000})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let started = Instant::now();
    let err = h
        .pool
        .call(
            "slowpoke",
            "sleep",
            args.clone(),
            CallOptions {
                timeout: Duration::from_millis(300),
                ..CallOptions::new(Duration::from_secs(20))
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let cancel = tokio_util::sync::CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let err = h
        .pool
        .call(
            "slowpoke",
            "sleep",
            args,
            CallOptions {
                cancel,
                ..CallOptions::new(Duration::from_secs(20))
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Cancelled), "{err:?}");
    // The server saw both notifications/cancelled (it logs each to stderr).
    let log = h.dir.path().join("logs/slowpoke.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.matches("sleep cancelled by the client").count() >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "server log:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    h.pool.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_reach_the_caller_and_roots_are_offered() {
    let h = Harness::start(vec![test_server_spec("busy", &[])]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let out = h
        .pool
        .call(
            "busy",
            "progress",
            json!({"steps": 3}).as_object().cloned().unwrap_or_default(),
            CallOptions {
                progress: Some(tx),
                ..CallOptions::new(Duration::from_secs(20))
            },
        )
        .await
        .unwrap();
    assert_eq!(out.text, "3 steps");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p);
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[2].progress, 3.0);
    assert_eq!(seen[2].total, Some(3.0));

    let roots = h
        .pool
        .call(
            "busy",
            "roots",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(60)),
        )
        .await
        .unwrap()
        .text;
    let dir = h.dir.path().to_string_lossy().to_string();
    assert!(roots.contains(&format!("file://{dir}")), "{roots}");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn streamable_http_servers_get_the_bearer_token_and_headers() {
    let (mut child, url) = http_test_server();
    let spec = ServerSpec {
        transport: TransportSpec::Http {
            url,
            bearer_token: Some("tok-123".into()),
            headers: [("X-Tern-Test".to_string(), "yes".to_string())].into(),
        },
        ..test_server_spec("remote", &[])
    };
    let h = Harness::start(vec![spec]).await;
    assert!(
        matches!(h.state("remote"), ServerState::Ready { pid: None, .. }),
        "{:?}",
        h.state("remote")
    );
    assert_eq!(h.echo("remote", "over http").await.unwrap(), "over http");
    let headers: serde_json::Value = serde_json::from_str(
        &h.pool
            .call(
                "remote",
                "headers",
                serde_json::Map::new(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await
            .unwrap()
            .text,
    )
    .unwrap();
    assert_eq!(headers["authorization"], "Bearer tok-123", "{headers}");
    assert_eq!(headers["x-tern-test"], "yes", "{headers}");
    h.pool.shutdown().await;
    let _ = child.kill();
    let _ = child.wait();
}
