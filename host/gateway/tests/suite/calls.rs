//! The stages end to end: resolve, validate, dispatch, cap, audit.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use tern_config::LoadOptions;
use tern_gateway::{CallContext, ErrorKind, Event, ToolCall};

use super::harness::{Rig, Scripted, audit_of, ctx};

#[tokio::test]
async fn an_unknown_tool_gets_one_error_result_naming_the_closest_tools() {
    let rig = Rig::start("").await;
    let r = rig.call("c1", "test__ech", json!({"text": "x"})).await;
    assert!(r.result.is_error);
    assert_eq!(r.result.error, Some(ErrorKind::UnknownTool));
    assert!(
        r.result.content.contains("`test__echo`"),
        "{}",
        r.result.content
    );
    assert_eq!(r.result.call_id, "c1");
    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    assert_eq!(lines.len(), 1);
    let line = audit_of(&lines, "c1");
    assert_eq!(line["error_type"], "unknown_tool");
    assert_eq!(line["decision"], serde_json::Value::Null);
    assert!(env.server_calls().is_empty());
}

#[tokio::test]
async fn a_schema_violation_never_reaches_the_server() {
    let rig = Rig::start("").await;
    let bad = rig
        .call("bad", "test__echo", json!({"text": 5, "extra": [1]}))
        .await;
    assert_eq!(bad.result.error, Some(ErrorKind::InvalidArguments));
    assert!(
        bad.result
            .content
            .contains("/text: 5 is not of type \"string\""),
        "{}",
        bad.result.content
    );
    let missing = rig.call("missing", "test__echo", json!({})).await;
    assert!(
        missing
            .result
            .content
            .contains("\"text\" is a required property"),
        "{}",
        missing.result.content
    );
    let not_object = rig.call("array", "test__echo", json!(["text"])).await;
    assert_eq!(not_object.result.error, Some(ErrorKind::InvalidArguments));
    // The server's own log proves nothing reached it; a valid call does reach it.
    assert!(
        rig.env.server_calls().is_empty(),
        "{:?}",
        rig.env.server_calls()
    );
    let ok = rig.call("ok", "test__echo", json!({"text": "hi"})).await;
    assert_eq!(
        (ok.result.is_error, ok.result.content.as_str()),
        (false, "hi")
    );
    let calls = rig.env.server_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["arguments"]["text"], "hi");
    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    assert_eq!(lines.len(), 4);
    assert_eq!(audit_of(&lines, "bad")["error_type"], "invalid_arguments");
    assert_eq!(audit_of(&lines, "ok")["rule"], "annotation:readOnlyHint");
}

#[tokio::test]
async fn a_timeout_and_a_cancellation_each_produce_one_result() {
    let config = "[mcp_servers.test.tools.sleep]\ntimeout_sec = 0.5\n";
    let approver = Arc::new(Scripted {
        hang: true,
        ..Default::default()
    });
    let rig = Rig::with(config, LoadOptions::default(), approver.clone(), |_| {}).await;
    let started = std::time::Instant::now();
    let r = rig.call("slow", "test__sleep", json!({"ms": 20_000})).await;
    assert_eq!(
        r.result.error,
        Some(ErrorKind::Timeout),
        "{}",
        r.result.content
    );
    assert!(
        r.result.content.contains("timed out after 0.5 s"),
        "{}",
        r.result.content
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Ctrl-C while the tool runs.
    let cx = ctx();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let call = ToolCall {
        id: "cancelled".into(),
        name: "test__sleep".into(),
        arguments: json!({"ms": 300}),
    };
    // `sleep` has a 0.5 s timeout; 300 ms of sleep is cancelled at 200 ms.
    let r = rig.gateway.call(call, cx).await;
    assert_eq!(
        r.result.error,
        Some(ErrorKind::Cancelled),
        "{}",
        r.result.content
    );

    // Ctrl-C while the user is being asked: the approver never answers.
    let cx = CallContext {
        run_id: "run-1".into(),
        ..Default::default()
    };
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let call = ToolCall {
        id: "asking".into(),
        name: "test__crash".into(),
        arguments: json!({}),
    };
    let r = rig.gateway.call(call, cx).await;
    assert_eq!(
        r.result.error,
        Some(ErrorKind::Cancelled),
        "{}",
        r.result.content
    );
    assert_eq!(approver.requests.lock().unwrap().len(), 1);

    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert_eq!(audit_of(&lines, "slow")["error_type"], "timeout");
    assert_eq!(audit_of(&lines, "cancelled")["error_type"], "cancelled");
    assert_eq!(audit_of(&lines, "asking")["error_type"], "cancelled");
    // The crash tool never ran.
    assert!(env.server_calls().iter().all(|c| c["tool"] != "crash"));
}

#[tokio::test]
async fn long_output_is_capped_and_spilled_in_full() {
    let config = "[mcp_servers.test.tools.big]\nmax_output_chars = 1000\n";
    let rig = Rig::start(config).await;
    let r = rig
        .call("toolu_big", "test__big", json!({"chars": 50_000}))
        .await;
    assert!(!r.result.is_error);
    assert!(r.meta.truncated);
    assert_eq!(r.meta.original_size, 50_000);
    let spill = r.meta.spill_path.clone().unwrap();
    assert_eq!(
        spill,
        rig.env.tern_home.join("runs/run-1/spill/toolu_big.txt")
    );
    assert_eq!(std::fs::read_to_string(&spill).unwrap().len(), 50_000);
    assert!(
        r.result.content.chars().count() < 1_300,
        "{}",
        r.result.content.len()
    );
    // `$TERN_HOME` is outside the workspace: the model's tools cannot read the spill, so its
    // path is not offered (issue 26, item 7).
    assert!(!r.result.content.contains(&spill.display().to_string()));
    assert!(r.result.content.contains("your tools cannot read it"));
    assert!(r.result.content.contains("50000 characters"));
    // The default cap (30 000) applies to tools without their own.
    let r = rig
        .call(
            "toolu_echo",
            "test__echo",
            json!({"text": "y".repeat(40_000)}),
        )
        .await;
    assert!(r.meta.truncated);
    assert!(r.result.content.chars().count() < 30_300);
    let r = rig.call("small", "test__big", json!({"chars": 10})).await;
    assert!(!r.meta.truncated && r.meta.spill_path.is_none());
    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    let big = audit_of(&lines, "toolu_big");
    assert_eq!(big["truncated"], true);
    assert_eq!(big["result_bytes"], 50_000);
    // The audit hash is of the spilled text, so they can be checked against each other.
    let spilled = std::fs::read(env.tern_home.join("runs/run-1/spill/toolu_big.txt")).unwrap();
    assert_eq!(
        big["result_sha256"],
        tern_gateway::audit::sha256_hex(&spilled)
    );
}

#[tokio::test]
async fn every_call_gets_one_audit_line_and_one_finished_event() {
    let rig = Rig::start("[permissions]\nallow = [\"test__crash\"]\n").await;
    rig.call("a", "test__echo", json!({"text": "1"})).await;
    rig.call("b", "nope", json!({})).await;
    rig.call("c", "test__echo", json!({"text": 1})).await;
    let crash = rig.call("d", "test__crash", json!({})).await;
    assert_eq!(
        crash.result.error,
        Some(ErrorKind::ServerCrashed),
        "{}",
        crash.result.content
    );
    let events = rig.events.lock().unwrap().clone();
    let finished: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Audit { record: r } => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["a", "b", "c", "d"]);
    let decided = events
        .iter()
        .filter(|e| matches!(e, Event::PermissionDecided { .. }))
        .count();
    assert_eq!(decided, 2);
    let env = rig.shutdown().await;
    let lines = env.audit_lines();
    assert_eq!(lines.len(), 4);
    let user_config = env.tern_home.join("config.toml");
    let d = audit_of(&lines, "d");
    assert_eq!(d["rule"], format!("{}:{}", user_config.display(), 11));
    assert_eq!(d["decision"], "allow");
    assert_eq!(d["error_type"], "server_crashed");
    for line in &lines {
        for key in [
            "time",
            "run_id",
            "session_id",
            "tool",
            "server",
            "args_sha256",
            "duration_ms",
            "result_sha256",
            "result_bytes",
            "is_error",
        ] {
            assert!(line.get(key).is_some(), "{key} missing in {line}");
        }
        assert_eq!(line["run_id"], "run-1");
        assert_eq!(line["session_id"], "session-1");
    }
}

#[tokio::test]
async fn a_server_wide_cap_applies_below_per_tool_caps() {
    // The harness's config ends inside `[mcp_servers.test]`: this key lands there.
    let config = "max_output_chars = 2000\n[mcp_servers.test.tools.big]\nmax_output_chars = 1000\n";
    let rig = Rig::start(config).await;
    let big = rig.call("c1", "test__big", json!({"chars": 50_000})).await;
    assert!(big.meta.truncated);
    assert!(
        big.result.content.chars().count() < 1_300,
        "{}",
        big.result.content.len()
    );
    let echo = rig
        .call("c2", "test__echo", json!({"text": "y".repeat(40_000)}))
        .await;
    assert!(echo.meta.truncated);
    let n = echo.result.content.chars().count();
    assert!(
        (2_000..2_400).contains(&n),
        "server cap, not the 30 000 default: {n}"
    );
    rig.shutdown().await;
}
