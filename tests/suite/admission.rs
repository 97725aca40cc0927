//! What the pool lets into the tool table and keeps there (issue 15, F11, F14, F15): a tool a
//! server stops offering stops being callable at once, a huge definition is held out with a
//! notice, and a server flooding stderr cannot fill the disk.

use std::time::{Duration, Instant};

use tern_mcp::{CallError, CallOptions, ServerState, pins::PinStore};
use tern_protocol::Event;

use tern_e2e::pool_harness::{Harness, test_server_spec};

#[tokio::test]
async fn a_tool_removed_by_list_changed_is_not_callable_and_the_next_table_lacks_it() {
    // A slow re-list: the old table would still be current without the wait.
    let h = Harness::start(vec![test_server_spec(
        "shifty",
        &["--relist-delay-ms", "400"],
    )])
    .await;
    let call = |tool: &'static str| {
        let pool = h.pool.clone();
        async move {
            pool.call(
                "shifty",
                tool,
                serde_json::Map::new(),
                CallOptions::new(Duration::from_secs(20)),
            )
            .await
        }
    };
    call("noop").await.unwrap();
    assert!(h.pool.table().0.get("shifty__noop").is_some());
    // The server drops `noop` and says so while answering; the very next call must not reach
    // it through the old table.
    assert_eq!(call("remove_noop").await.unwrap().text, "noop removed");
    let err = call("noop").await.unwrap_err();
    assert!(
        matches!(&err, CallError::ToolGone { tool, .. } if tool == "noop"),
        "{err:?}"
    );
    h.pool.tools_settled().await;
    assert!(h.pool.table().0.get("shifty__noop").is_none());
    assert!(h.pool.table().0.get("shifty__echo").is_some());
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_new_tool_after_list_changed_on_an_approved_server_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let pins = dir.path().join("pins.json");
    // First run pins the server's tools as they are.
    {
        let first = Harness::start_with(
            tempfile::tempdir().unwrap(),
            vec![test_server_spec("grow", &[])],
            PinStore::load(&pins).unwrap(),
            |_| {},
        )
        .await;
        assert!(first.pool.table().0.get("grow__echo").is_some());
        first.pool.shutdown().await;
    }
    let h = Harness::start_with(
        tempfile::tempdir().unwrap(),
        vec![test_server_spec("grow", &["--extra-tool", "sneaky"])],
        PinStore::load(&pins).unwrap(),
        |_| {},
    )
    .await;
    assert!(h.pool.table().0.get("grow__sneaky").is_none());
    assert!(h.pool.table().0.get("grow__echo").is_some());
    let e = h
        .wait_event(
            "tool_dropped",
            |e| matches!(e, Event::ToolDropped { tool, .. } if tool == "sneaky"),
        )
        .await;
    let Event::ToolDropped { reason, .. } = e else {
        unreachable!()
    };
    assert!(reason.contains("tern mcp approve grow"), "{reason}");
    let err = h
        .pool
        .call(
            "grow",
            "sneaky",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(20)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::ToolGone { .. }), "{err:?}");
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_tool_over_the_size_limit_is_held_out_with_a_notice() {
    let h = Harness::start(vec![test_server_spec("big", &["--huge-schema", "5000"])]).await;
    let (table, dropped) = h.pool.table();
    assert!(table.get("big__huge").is_none());
    assert!(table.get("big__echo").is_some());
    let d = dropped.iter().find(|d| d.tool == "huge").expect("reported");
    assert!(d.reason.contains("over the 64 KiB limit"), "{}", d.reason);
    assert!(d.reason.contains("279.1 kB of JSON"), "{}", d.reason);
    h.wait_event(
        "tool_dropped",
        |e| matches!(e, Event::ToolDropped { tool, .. } if tool == "huge"),
    )
    .await;
    h.pool.shutdown().await;
}

#[tokio::test]
async fn a_server_flooding_stderr_gets_a_capped_rotated_private_log() {
    use std::os::unix::fs::PermissionsExt;
    let h = Harness::start_with(
        tempfile::tempdir().unwrap(),
        vec![test_server_spec("flood", &["--stderr-flood", "1000000"])],
        PinStore::in_memory(),
        |o| o.max_log_bytes = 64 * 1024,
    )
    .await;
    assert!(matches!(h.state("flood"), ServerState::Ready { .. }));
    let logs = h.dir.path().join("logs");
    let log = logs.join("flood.log");
    let old = logs.join("flood.log.1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !old.exists() {
        assert!(Instant::now() < deadline, "never rotated");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    h.pool.shutdown().await;
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    assert!(size(&log) <= 64 * 1024, "{}", size(&log));
    assert!(size(&old) <= 64 * 1024, "{}", size(&old));
    assert!(!logs.join("flood.log.2").exists());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&logs), 0o700);
}

#[tokio::test]
async fn tern_run_offers_the_model_the_relisted_tools_on_the_very_next_request() {
    use tern_e2e::run_env::{RunEnv, assert_exit};
    use tern_model::mock::script::AnthropicTurn;

    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.shifty]\ncommand = {:?}\nargs = [\"--relist-delay-ms\", \"400\"]\n",
        tern_e2e::bin("tern-test-server").to_string_lossy()
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "shifty__remove_noop", &["{}"])
            .finish("tool_use"),
    );
    env.answer("done");
    let out = env
        .run(&[
            "run",
            "shrink",
            "--allow",
            "shifty__*",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let names = |i: usize| -> Vec<String> {
        requests[i].json()["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(0).contains(&"shifty__noop".to_string()));
    assert!(
        !names(1).contains(&"shifty__noop".to_string()),
        "{:?}",
        names(1)
    );
    assert!(names(1).contains(&"shifty__echo".to_string()));
}
