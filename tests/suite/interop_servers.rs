//! The official reference MCP servers (npm and PyPI), run by tern's pool: every
//! one starts, lists its tools, and answers a call.

use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::dep;
use tern_mcp::{CallOptions, ServerState};

use tern_e2e::pool_harness::{Harness, stdio_spec};

fn npm(b: &str) -> String {
    dep(&format!("npm/node_modules/.bin/{b}"))
        .to_string_lossy()
        .into_owned()
}

fn py(b: &str) -> String {
    dep(&format!("venv/bin/{b}")).to_string_lossy().into_owned()
}

#[tokio::test]
async fn every_reference_server_answers_a_call_through_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello from tern\n").unwrap();
    let repo = root.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        assert!(
            std::process::Command::new("git")
                .args(args)
                .current_dir(&repo)
                .status()
                .unwrap()
                .success()
        )
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    let root_s = root.to_string_lossy().into_owned();
    let repo_s = repo.to_string_lossy().into_owned();

    let mut specs = vec![
        stdio_spec("everything", &npm("mcp-server-everything"), &[]),
        stdio_spec("filesystem", &npm("mcp-server-filesystem"), &[&root_s]),
        stdio_spec("memory", &npm("mcp-server-memory"), &[]),
        stdio_spec("time", &py("mcp-server-time"), &[]),
        stdio_spec("git", &py("mcp-server-git"), &["--repository", &repo_s]),
    ];
    for s in &mut specs {
        // Node and Python servers take seconds to start on a loaded 2-core machine.
        s.startup_timeout = Duration::from_secs(90);
        s.request_timeout = Duration::from_secs(60);
    }
    // server-filesystem replaces its command-line directories with the client's
    // roots: the pool offers `dir`, so that is where its files must be.
    let h = Harness::start_in(dir, specs).await;
    for s in h.pool.statuses() {
        assert!(matches!(s.state, ServerState::Ready { .. }), "{s:?}");
    }

    let call = |server: &'static str, tool: &'static str, args: Value| {
        let pool = h.pool.clone();
        async move {
            let out = pool
                .call(
                    server,
                    tool,
                    args.as_object().cloned().unwrap_or_default(),
                    CallOptions::new(Duration::from_secs(60)),
                )
                .await
                .unwrap_or_else(|e| panic!("{server}/{tool}: {e}"));
            assert!(
                !out.is_error,
                "{server}/{tool} returned an error: {}",
                out.text
            );
            out.text
        }
    };
    let text = call("everything", "echo", json!({"message": "ping"})).await;
    assert!(text.contains("ping"), "{text}");
    let text = call(
        "filesystem",
        "read_text_file",
        json!({"path": root.join("hello.txt")}),
    )
    .await;
    assert!(text.contains("hello from tern"), "{text}");
    call(
        "memory",
        "create_entities",
        json!({"entities": [{"name": "tern", "entityType": "agent", "observations": ["speaks MCP"]}]}),
    )
    .await;
    let text = call("memory", "read_graph", json!({})).await;
    assert!(text.contains("speaks MCP"), "{text}");
    let text = call("time", "get_current_time", json!({"timezone": "UTC"})).await;
    assert!(text.contains("UTC"), "{text}");
    let text = call("git", "git_status", json!({"repo_path": repo_s})).await;
    assert!(text.contains("a.txt"), "{text}");
    h.pool.shutdown().await;
}
