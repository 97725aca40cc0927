//! The built-in `lsp` server (`tern serve lsp`) as a user gets it from `config/default.toml`:
//! off without a language server — no tools, and `tern mcp doctor` says what it looked for —
//! and, with pyright on PATH (from `.ci/install-test-deps`), the model's `lsp__diagnostics`
//! call brings it the type error, through the real pool, gateway and mock model.

use std::path::PathBuf;

use serde_json::Value;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

/// `PATH` for tern: `first`, then the directory holding `node`, and nothing else.
fn path_with(first: &[PathBuf]) -> std::ffi::OsString {
    let mut dirs = first.to_vec();
    if let Some(node) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|d| d.join("node").exists())
    {
        dirs.push(node);
    }
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn without_a_language_server_lsp_offers_no_tools_and_doctor_says_why() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let nothing = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.web]\nenabled = false\n",
    )
    .unwrap();
    let out = tern_e2e::tern(home.path(), dir.path())
        .args(["mcp", "doctor", "lsp"])
        .env("PATH", nothing.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an optional server with nothing to offer is not a failure:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("lsp [ok] 0 tools"), "{stdout}");
    assert!(
        stdout.contains("note: offers no tools: No language server was found"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pyright-langserver or basedpyright-langserver (Python)"),
        "{stdout}"
    );

    let tools = tern_e2e::tern(home.path(), dir.path())
        .args(["tools", "--json"])
        .env("PATH", nothing.path())
        .output()
        .unwrap();
    let table: Value = serde_json::from_slice(&tools.stdout).unwrap();
    let text = table.to_string();
    assert!(!text.contains("lsp__"), "{text}");
}

#[tokio::test]
async fn the_model_gets_a_type_error_from_lsp_diagnostics() {
    let env = RunEnv::new().await;
    std::fs::write(
        env.dir.path().join("app.py"),
        "def add(a: int, b: int) -> int:\n    return a + b\n\nname: str = add(1, 2)\n",
    )
    .unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_1",
                "lsp__diagnostics",
                &[r#"{"path":"app.py","severity":"error","wait_ms":30000}"#],
            )
            .finish("tool_use"),
    );
    env.answer("There is a type error on line 4.");
    let npm_bin = tern_e2e::dep("npm/node_modules/.bin/pyright-langserver")
        .parent()
        .unwrap()
        .to_path_buf();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        env.command(&["run", "check app.py", "-c", "mcp_servers.lsp.enabled=true"])
            .env("PATH", path_with(&[npm_bin]))
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2);
    // The first request offered the tools; the second carries the result to the model.
    let first = String::from_utf8_lossy(&requests[0].body);
    for tool in [
        "lsp__diagnostics",
        "lsp__definition",
        "lsp__hover",
        "lsp__references",
        "lsp__symbols",
    ] {
        assert!(first.contains(tool), "{tool} not offered");
    }
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second.to_string();
    assert!(
        result.contains("app.py:4:13: error: ") && result.contains("(Pyright)"),
        "{result}"
    );
}
