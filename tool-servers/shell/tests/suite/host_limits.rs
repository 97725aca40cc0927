//! The host's per-call limits (`_meta["tern/limits"]`) win over the server's
//! defaults, and the tool tells the host which argument is the command.

use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{field, is_error, start, text};

#[tokio::test]
async fn the_host_timeout_replaces_the_server_default() {
    let s = start(&["--timeout-default", "120"], &[]).await;
    let t0 = Instant::now();
    let r = s
        .run_with_meta(
            json!({"command": "sleep 30"}),
            json!({"tern/limits": {"timeout_ms": 1500}}),
        )
        .await;
    let took = t0.elapsed();
    let t = text(&r);
    assert_eq!(field(&r, "timed_out"), true, "{t}");
    assert!(t.contains("[timed out after 1.5 s"), "{t}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[tokio::test]
async fn the_host_timeout_caps_the_calls_own_timeout_and_the_server_max_caps_the_host() {
    let s = start(&["--timeout-max", "2"], &[]).await;
    let r = s
        .run_with_meta(
            json!({"command": "sleep 30", "timeout_sec": 20}),
            json!({"tern/limits": {"timeout_ms": 1000}}),
        )
        .await;
    let t = text(&r);
    assert!(t.contains("[timed out after 1 s"), "{t}");
    assert!(
        t.contains("timeout_sec 20 is outside the allowed range; used 1 s"),
        "{t}"
    );
    let r = s
        .run_with_meta(
            json!({"command": "sleep 30"}),
            json!({"tern/limits": {"timeout_ms": 3_600_000}}),
        )
        .await;
    assert!(text(&r).contains("[timed out after 2 s"), "{}", text(&r));
}

#[tokio::test]
async fn the_host_output_cap_is_the_size_of_the_whole_result() {
    let s = start(&[], &[]).await;
    // Without a host cap: the server's default of 30 000 characters.
    let r = s.run(json!({"command": "seq 1 200000"})).await;
    let default_len = text(&r).chars().count();
    assert!((29_000..31_000).contains(&default_len), "{default_len}");
    // A host cap of 50 000 gives (nearly) 50 000, footer included, never more.
    let r = s
        .run_with_meta(
            json!({"command": "seq 1 200000"}),
            json!({"tern/limits": {"max_output_chars": 50_000}}),
        )
        .await;
    let t = text(&r);
    let n = t.chars().count();
    assert!((49_000..=50_000).contains(&n), "{n} chars");
    assert!(
        t.starts_with("1\n2\n3\n") && t.contains("199999\n200000\n"),
        "head and tail kept"
    );
    assert!(t.contains("[output truncated:"), "footer kept");
    // A small cap is honoured too.
    let r = s
        .run_with_meta(
            json!({"command": "seq 1 200000"}),
            json!({"tern/limits": {"max_output_chars": 2_000}}),
        )
        .await;
    assert!(text(&r).chars().count() <= 2_000, "{}", text(&r).len());
}

#[tokio::test]
async fn malformed_host_limits_are_a_clear_tool_error() {
    let s = start(&[], &[]).await;
    let r = s
        .run_with_meta(
            json!({"command": "echo not-run"}),
            json!({"tern/limits": {"timeout_ms": "soon"}}),
        )
        .await;
    let t = text(&r);
    assert!(is_error(&r), "{t}");
    assert!(t.contains("tern/limits"), "{t}");
    assert!(!t.contains("not-run"), "{t}");
}
