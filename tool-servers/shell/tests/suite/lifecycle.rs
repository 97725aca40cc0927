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
    // A client that did not ask for a live tail gets none: the notifications it always got.
    assert!(seen.iter().all(|p| tail_of(p).is_none()), "{seen:?}");
}

/// The live tail a progress notification carries, if any.
fn tail_of(p: &rmcp::model::ProgressNotificationParam) -> Option<Vec<String>> {
    let meta = p.meta.as_ref()?;
    tern_tool_common::meta::OutputTail::from_progress_meta(&meta.0.0).map(|t| t.lines)
}

/// Collects the progress notifications of `handle`'s call until it returns.
async fn notifications_of(
    s: &super::support::Server,
    handle: rmcp::service::RequestHandle<rmcp::RoleClient>,
) -> (String, Vec<rmcp::model::ProgressNotificationParam>) {
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    collector.abort();
    let seen = seen.lock().unwrap().clone();
    (text(&r), seen)
}

#[tokio::test]
async fn a_client_that_asks_gets_the_last_lines_in_progress_at_most_ten_times_a_second() {
    let s = start(&[], &[]).await;
    // 40 lines 20 ms apart (far more than ten a second), then a pause the last tail shows in.
    let command = "for i in $(seq 1 40); do echo line$i; sleep 0.02; done; \
                   printf 'unfinished'; sleep 0.5";
    let started = Instant::now();
    let handle = s
        .run_cancellable_with_meta(
            json!({ "command": command }),
            json!({ "tern/output_tail": { "lines": 3 } }),
        )
        .await;
    let (result, seen) = notifications_of(&s, handle).await;
    let ran = started.elapsed();
    assert!(result.contains("line40\nunfinished"), "{result}");
    // Every notification's progress is above the last one's (the MCP rule), tails included.
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "{seen:?}"
    );
    let tails: Vec<(f64, Vec<String>)> = seen
        .iter()
        .filter_map(|p| tail_of(p).map(|t| (p.progress, t)))
        .collect();
    assert!(tails.len() >= 3, "{seen:?}");
    assert!(tails.iter().all(|(_, t)| t.len() <= 3), "{tails:?}");
    // The last one has the unfinished line.
    assert_eq!(
        tails.last().map(|(_, t)| t.clone()),
        Some(vec!["line39".into(), "line40".into(), "unfinished".into()]),
        "{tails:?}"
    );
    // At most ten a second: 100 ms apart at least (progress is the time in seconds).
    assert!(
        tails.windows(2).all(|w| w[1].0 - w[0].0 >= 0.095),
        "{tails:?}"
    );
    assert!(
        (tails.len() as f64) <= ran.as_secs_f64() * 10.0 + 1.0,
        "{} tails in {ran:?}",
        tails.len()
    );
    // Tails carry no message; the ticks keep theirs.
    assert!(
        seen.iter().filter(|p| tail_of(p).is_none()).all(|p| p
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("bytes of output")),
        "{seen:?}"
    );
}

async fn wait_for_process(marker: &str) {
    let end = Instant::now() + Duration::from_secs(10);
    while processes_with_arg(marker).is_empty() {
        assert!(Instant::now() < end, "`sleep {marker}` never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
