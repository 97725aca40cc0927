//! Processes end when they should and calls return when they should: background
//! children, floods, timeouts, cancellation, progress.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use super::support::{
    field, kill_pids, processes_with_arg, rss_kib, start, survivors, text, unique_sleep,
};

/// Both ways commands run: the default sandbox and no sandbox at all.
const MODES: [&[&str]; 2] = [&[], &["--sandbox", "full-access"]];

/// Issue F9: `sleep 100 &` (and its `nohup`/`setsid`/subshell variants) used
/// to outlive the call — and a `setsid` child even a timeout. Nothing a
/// command starts may survive its call, in every mode.
#[tokio::test]
async fn background_children_do_not_outlive_the_call() {
    for mode in MODES {
        let s = start(mode, &[]).await;
        for form in [
            "sleep {} &",
            "nohup sleep {} >/dev/null 2>&1 &",
            "setsid sleep {} &",
            "(setsid sleep {} &) ; (sleep {} &)",
            "setsid nohup sleep {} </dev/null >/dev/null 2>&1 &",
        ] {
            let marker = unique_sleep();
            let command = format!("{}\necho started", form.replace("{}", &marker));
            let t0 = Instant::now();
            let r = s.run(json!({"command": command})).await;
            let took = t0.elapsed();
            let t = text(&r);
            let left = survivors(&marker, Duration::from_millis(500)).await;
            kill_pids(&left);
            assert!(
                left.is_empty(),
                "{mode:?} `{command}`: survived the call: {left:?}"
            );
            assert!(
                took < Duration::from_secs(3),
                "{mode:?} `{command}`: took {took:?}"
            );
            assert_eq!(field(&r, "exit_code"), 0, "{t}");
            assert!(t.contains("started\n"), "{t}");
        }
    }
}

#[tokio::test]
async fn a_timeout_kills_everything_the_command_started() {
    for mode in MODES {
        let s = start(mode, &[]).await;
        let (bg, escaped, fg) = (unique_sleep(), unique_sleep(), unique_sleep());
        let t0 = Instant::now();
        let r = s
            .run(json!({"command": format!("sleep {bg} & setsid sleep {escaped} & sleep {fg}"), "timeout_sec": 1}))
            .await;
        let took = t0.elapsed();
        let t = text(&r);
        for marker in [&bg, &escaped, &fg] {
            let left = survivors(marker, Duration::from_millis(500)).await;
            kill_pids(&left);
            assert!(
                left.is_empty(),
                "{mode:?}: `sleep {marker}` survived the timeout: {left:?}"
            );
        }
        assert_eq!(field(&r, "timed_out"), true);
        assert!(t.contains("[timed out after 1 s"), "{t}");
        assert_eq!(field(&r, "signal"), 15, "{t}");
        assert!(took < Duration::from_secs(4), "took {took:?}");
    }
}

#[tokio::test]
async fn processes_ignoring_sigterm_get_sigkill_after_the_grace() {
    for mode in MODES {
        let s = start(mode, &[]).await;
        let (bg, fg) = (unique_sleep(), unique_sleep());
        let t0 = Instant::now();
        // An ignored signal stays ignored across fork and exec: every process here ignores SIGTERM.
        let r = s
            .run(json!({"command": format!("trap '' TERM; sleep {bg} & sleep {fg}"), "timeout_sec": 1}))
            .await;
        let took = t0.elapsed();
        let t = text(&r);
        for marker in [&bg, &fg] {
            let left = survivors(marker, Duration::from_millis(500)).await;
            kill_pids(&left);
            assert!(
                left.is_empty(),
                "{mode:?}: still running after SIGKILL: {left:?}"
            );
        }
        assert!(t.contains("SIGKILL needed"), "{t}");
        assert!(
            took >= Duration::from_millis(2900),
            "SIGKILL came too early: {took:?}"
        );
        assert!(took < Duration::from_secs(6), "took {took:?}");
    }
}

#[tokio::test]
async fn cancellation_stops_the_command() {
    for mode in MODES {
        let s = start(mode, &[]).await;
        let (bg, escaped) = (unique_sleep(), unique_sleep());
        let handle = s
            .run_cancellable(
                json!({"command": format!("sleep {bg} & setsid sleep {escaped} & wait")}),
            )
            .await;
        wait_for_process(&escaped).await;
        let t0 = Instant::now();
        handle.cancel(Some("test".into())).await.unwrap();
        for marker in [&bg, &escaped] {
            let left = survivors(marker, Duration::from_secs(5)).await;
            kill_pids(&left);
            assert!(
                left.is_empty(),
                "{mode:?}: still running after cancel: {left:?}"
            );
        }
        assert!(t0.elapsed() < Duration::from_secs(3));
        // The server keeps serving.
        let r = s.run(json!({"command": "echo after"})).await;
        assert!(text(&r).starts_with("after\n"));
    }
}

/// When the server ends — its client closes the pipe, or it is killed — every
/// command still running ends with it, including `setsid` escapees.
#[tokio::test]
async fn nothing_outlives_the_server() {
    for mode in MODES {
        for kill_server in [false, true] {
            let s = start(mode, &[]).await;
            let (bg, escaped) = (unique_sleep(), unique_sleep());
            let _handle = s
                .run_cancellable(
                    json!({"command": format!("sleep {bg} & setsid sleep {escaped} & wait")}),
                )
                .await;
            wait_for_process(&escaped).await;
            if kill_server {
                kill_pids(&[s.pid]);
            } else {
                s.client.cancel().await.unwrap();
            }
            for marker in [&bg, &escaped] {
                let left = survivors(marker, Duration::from_secs(5)).await;
                kill_pids(&left);
                assert!(
                    left.is_empty(),
                    "{mode:?}, server killed: {kill_server}: survived the server: {left:?}"
                );
            }
        }
    }
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

async fn wait_for_process(marker: &str) {
    let end = Instant::now() + Duration::from_secs(10);
    while processes_with_arg(marker).is_empty() {
        assert!(Instant::now() < end, "`sleep {marker}` never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
