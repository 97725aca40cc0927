//! Wire-level faults a server can commit, each of which used to hang a call, corrupt a result
//! or fail a handshake (issue 15 F10, F12, F13; issue 11 item 8): driven through
//! `tern-test-server --raw MODE` and the real tern-fs.

use std::time::{Duration, Instant};

use serde_json::json;
use tern_e2e::bin;
use tern_mcp::{CallError, CallOptions, ServerState};

use super::eras::methods;
use tern_e2e::pool_harness::{Harness, stdio_spec, test_server_spec};

#[tokio::test]
async fn a_stray_reply_before_the_initialize_reply_is_ignored() {
    let h = Harness::start(vec![test_server_spec(
        "stray",
        &["--raw", "stray-response"],
    )])
    .await;
    assert!(
        matches!(h.state("stray"), ServerState::Ready { .. }),
        "{:?}",
        h.state("stray")
    );
    assert_eq!(h.echo("stray", "fine").await.unwrap(), "fine");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn an_unknown_protocol_revision_is_refused_with_the_reason() {
    let h = Harness::start(vec![test_server_spec("odd", &["--raw", "bad-version"])]).await;
    let ServerState::Failed { reason } = h.state("odd") else {
        panic!("{:?}", h.state("odd"))
    };
    assert!(reason.contains("\"1999-01-01\""), "{reason}");
    assert!(reason.contains("does not know"), "{reason}");
    assert!(h.pool.table().0.is_empty());
    h.pool.shutdown().await;
}

#[tokio::test]
async fn tools_are_listed_only_when_the_server_has_the_capability() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("methods.jsonl");
    let h = Harness::start(vec![test_server_spec(
        "bare",
        &["--raw", "no-tools", "--audit", &audit.to_string_lossy()],
    )])
    .await;
    assert!(
        matches!(h.state("bare"), ServerState::Ready { .. }),
        "{:?}",
        h.state("bare")
    );
    let methods = methods(&audit);
    assert!(methods.contains(&"initialize".to_string()), "{methods:?}");
    assert!(!methods.contains(&"tools/list".to_string()), "{methods:?}");
    assert!(h.pool.table().0.is_empty());
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_reply_with_the_id_as_a_string_does_not_complete_the_numeric_request() {
    let h = Harness::start(vec![test_server_spec("liar", &["--raw", "string-id"])]).await;
    for text in ["one", "two", "three"] {
        assert_eq!(h.echo("liar", text).await.unwrap(), text);
    }
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_reply_over_the_message_limit_fails_the_call_at_once() {
    let h = Harness::start(vec![test_server_spec("flood", &["--raw", "huge-reply"])]).await;
    let started = Instant::now();
    let err = h.echo("flood", "x").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    let CallError::BadReply(message) = &err else {
        panic!("{err:?}")
    };
    assert!(message.contains("over the 16 MiB limit"), "{message}");
    assert!(message.contains("17.8 MB"), "{message}");
    // The connection survives it.
    assert!(matches!(h.state("flood"), ServerState::Ready { .. }));
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_10_mb_path_to_tern_fs_ends_quickly_however_large_the_error_reply() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_string_lossy().into_owned();
    let h = Harness::start(vec![stdio_spec(
        "fs",
        &bin("tern-fs").to_string_lossy(),
        &["--root", &root],
    )])
    .await;
    let path = "a/".repeat(5 * 1024 * 1024);
    let started = Instant::now();
    let result = h
        .pool
        .call(
            "fs",
            "read_file",
            json!({"path": path})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            CallOptions::new(Duration::from_secs(60)),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    // tern-fs used to echo the path in its error twice (a 21 MB reply, once dropped silently,
    // leaving the call waiting for its timeout; the transport's unit tests keep that case). Now
    // it refuses at once and repeats only the path's start.
    let out = result.unwrap_or_else(|e| panic!("{e:?}"));
    assert!(out.is_error, "{}", &out.text[..200.min(out.text.len())]);
    assert!(out.text.len() < 10_000, "{} bytes", out.text.len());
    assert!(
        out.text.contains("the limit is 4096"),
        "{}",
        &out.text[..200.min(out.text.len())]
    );
    // Still serving.
    let ok = h
        .pool
        .call(
            "fs",
            "list_dir",
            json!({"path": "."})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            CallOptions::new(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    assert!(!ok.is_error, "{}", ok.text);
    h.pool.shutdown().await;
}
