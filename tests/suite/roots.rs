//! Per-server roots (issue 11, item 8): `@modelcontextprotocol/server-filesystem` replaces the
//! directories in its arguments with the client's roots, so offered only tern's working
//! directory it can no longer read the one it was configured for. `roots = false` and
//! `roots = [dir]` give it back.

use std::time::Duration;

use serde_json::json;
use tern_e2e::dep;
use tern_mcp::{CallOptions, RootsSetting, ServerState};

use tern_e2e::pool_harness::{Harness, stdio_spec};

#[tokio::test]
async fn roots_off_or_listed_keep_server_filesystem_on_its_configured_directory() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().canonicalize().unwrap();
    std::fs::write(data_dir.join("facts.txt"), "configured directory\n").unwrap();
    let data_s = data_dir.to_string_lossy().into_owned();
    let program = dep("npm/node_modules/.bin/mcp-server-filesystem");
    let spec = |name: &str, roots: RootsSetting| {
        let mut s = stdio_spec(name, &program.to_string_lossy(), &[&data_s]);
        s.roots = roots;
        s.startup_timeout = Duration::from_secs(90);
        s
    };
    // The pool's own root (tern's working directory) is another directory.
    let h = Harness::start(vec![
        spec("narrowed", RootsSetting::Pool),
        spec("off", RootsSetting::Off),
        spec("listed", RootsSetting::Paths(vec![data_dir.clone()])),
    ])
    .await;
    for s in h.pool.statuses() {
        assert!(matches!(s.state, ServerState::Ready { .. }), "{s:?}");
    }
    let narrowed = h
        .pool
        .statuses()
        .into_iter()
        .find(|s| s.name == "narrowed")
        .unwrap();
    assert_eq!(narrowed.narrowed_by_roots, std::slice::from_ref(&data_dir));
    let read = |server: &'static str| {
        let pool = h.pool.clone();
        let path = data_dir.join("facts.txt").to_string_lossy().into_owned();
        async move {
            pool.call(
                server,
                "read_text_file",
                json!({"path": path})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await
            .unwrap()
        }
    };
    // server-filesystem asks for the roots after the handshake; wait until it says it
    // replaced its directories with them.
    let log = h.dir.path().join("logs/narrowed.log");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("Updated allowed directories from MCP roots")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The roots tern offers replace the configured directory: the read is refused.
    let refused = read("narrowed").await;
    assert!(refused.is_error, "{}", refused.text);
    for server in ["off", "listed"] {
        let out = read(server).await;
        assert!(!out.is_error, "{server}: {}", out.text);
        assert!(out.text.contains("configured directory"), "{}", out.text);
    }
    h.pool.shutdown().await;
}
