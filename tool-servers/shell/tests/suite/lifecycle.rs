//! Processes end when they should and calls return when they should: background
//! children, floods, timeouts, cancellation, progress.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use super::support::{field, kill_pids, pids_in, rss_kib, start, still_running_after, text};

#[tokio::test]
async fn a_background_child_holding_the_pipe_does_not_hang_the_call() {
    let s = start(&[], &[]).await;
    for command in [
        "sleep 1000 & echo $!; echo started",
        "setsid sleep 1000 & echo $!; echo started",
    ] {
        let t0 = Instant::now();
        let r = s.run(json!({"command": command})).await;
        let took = t0.elapsed();
        let t = text(&r);
        let pids = pids_in(&t);
        kill_pids(&pids);
        assert!(took < Duration::from_secs(3), "{command}: took {took:?}");
        assert_eq!(field(&r, "exit_code"), 0, "{t}");
        assert!(t.contains("started\n"), "{t}");
        assert!(
            t.contains("background process still holds stdout/stderr open"),
            "{t}"
        );
        assert_eq!(pids.len(), 1, "{t}");
        eprintln!("{command}: returned in {took:?}");
    }
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let s = start(&[], &[]).await;
    let t0 = Instant::now();
    let r = s
        .run(json!({"command": "sleep 1000 & echo $!; echo $$; sleep 1000", "timeout_sec": 1}))
        .await;
    let took = t0.elapsed();
    let t = text(&r);
    let pids = pids_in(&t);
    assert_eq!(pids.len(), 2, "{t}");
    let alive = still_running_after(&pids, Duration::from_millis(500)).await;
    kill_pids(&alive);
    assert!(alive.is_empty(), "still running after timeout: {alive:?}");
    assert_eq!(field(&r, "timed_out"), true);
    assert!(t.contains("[timed out after 1 s"), "{t}");
    assert_eq!(field(&r, "signal"), 15, "{t}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    eprintln!("timeout 1 s: returned in {took:?}");
}

#[tokio::test]
async fn processes_ignoring_sigterm_get_sigkill_after_the_grace() {
    let s = start(&[], &[]).await;
    let t0 = Instant::now();
    // An ignored signal stays ignored across fork and exec: every process here ignores SIGTERM.
    let r = s
        .run(json!({"command": "trap '' TERM; sleep 1000 & echo $!; echo $$; sleep 1000", "timeout_sec": 1}))
        .await;
    let took = t0.elapsed();
    let t = text(&r);
    let pids = pids_in(&t);
    assert_eq!(pids.len(), 2, "{t}");
    let alive = still_running_after(&pids, Duration::from_millis(500)).await;
    kill_pids(&alive);
    assert!(alive.is_empty(), "still running after SIGKILL: {alive:?}");
    assert!(t.contains("SIGKILL needed"), "{t}");
    assert!(
        took >= Duration::from_millis(2900),
        "SIGKILL came too early: {took:?}"
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

#[tokio::test]
async fn cancellation_stops_the_command() {
    let s = start(&[], &[]).await;
    let pidfile = s.root.join("pids");
    let handle = s
        .run_cancellable(json!({"command": "echo $$ > pids; sleep 1000 & echo $! >> pids; wait"}))
        .await;
    let pids = wait_for_pids(&pidfile, 2).await;
    let t0 = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    let alive = still_running_after(&pids, Duration::from_secs(5)).await;
    kill_pids(&alive);
    assert!(alive.is_empty(), "still running after cancel: {alive:?}");
    eprintln!("cancel → processes gone in {:?}", t0.elapsed());
    assert!(t0.elapsed() < Duration::from_secs(3));
    // The server keeps serving.
    let r = s.run(json!({"command": "echo after"})).await;
    assert!(text(&r).starts_with("after\n"));
}

#[tokio::test]
async fn a_flood_is_capped_and_memory_stays_flat() {
    let s = start(&[], &[]).await;
    // Warm up so allocator pools and the runtime are in their steady state.
    s.run(json!({"command": "seq 1 100000"})).await;
    let before = rss_kib(s.pid);
    let r = s.run(json!({"command": "yes", "timeout_sec": 3})).await;
    let after = rss_kib(s.pid);
    let t = text(&r);
    let total = field(&r, "total_bytes").as_u64().unwrap();
    eprintln!("yes for 3 s: {total} bytes read; server RSS {before} KiB → {after} KiB");
    assert!(total > 20_000_000, "the flood was real: {total} bytes");
    assert_eq!(field(&r, "truncated"), true);
    assert_eq!(field(&r, "timed_out"), true);
    assert!(t.len() < 31_000, "kept {} chars", t.len());
    assert!(
        t.starts_with("y\ny\n") && t.contains("characters omitted"),
        "{}",
        &t[..200]
    );
    assert!(
        after.saturating_sub(before) < 64 * 1024,
        "RSS grew {before} → {after} KiB"
    );
}

#[tokio::test]
async fn progress_notifications_arrive_while_a_command_runs() {
    let s = start(&[], &[]).await;
    let handle = s
        .run_cancellable(json!({"command": "echo begin; sleep 2.5; echo done"}))
        .await;
    let mut sub = s
        .client
        .service()
        .progress
        .subscribe(handle.progress_token.clone())
        .await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let collector = tokio::spawn(async move {
        while let Some(p) = sub.next().await {
            sink.lock().unwrap().push(p);
        }
    });
    let r = handle.await_response().await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(r) = r else {
        panic!("unexpected response {r:?}")
    };
    assert!(text(&r).contains("done\n"));
    // Notifications precede the response on the wire; allow the dispatcher a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    collector.abort();
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "progress notifications: {seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].progress <= w[1].progress),
        "{seen:?}"
    );
    let first = &seen[0];
    assert_eq!(first.progress, 1.0, "{first:?}");
    assert_eq!(first.total, Some(120.0), "{first:?}");
    let message = first.message.as_deref().unwrap_or_default();
    assert!(message.contains("bytes of output"), "{message}");
}

async fn wait_for_pids(file: &std::path::Path, n: usize) -> Vec<u32> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(file) {
            let pids = pids_in(&s);
            if pids.len() >= n {
                return pids;
            }
        }
        assert!(Instant::now() < end, "the command never wrote its pids");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
