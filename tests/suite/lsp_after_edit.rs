//! Diagnostics after an edit (issue 20): with the built-in lsp server in the pool and pyright
//! on PATH (from `.ci/install-test-deps`), a successful `fs__edit_file` that introduces a type
//! error comes back to the model with the error appended — the gateway asked the lsp server
//! over MCP — and `[lsp] after_edit = "off"` turns that off.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::script::AnthropicTurn;

/// `PATH` for tern: pyright's directory, then the directory holding `node`.
fn path_with_pyright() -> std::ffi::OsString {
    let npm_bin = tern_e2e::dep("npm/node_modules/.bin/pyright-langserver")
        .parent()
        .unwrap()
        .to_path_buf();
    let mut dirs = vec![npm_bin];
    if let Some(node) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|d| d.join("node").exists())
    {
        dirs.push(node);
    }
    std::env::join_paths(dirs).unwrap()
}

async fn edit_in_a_type_error(extra: &[&str]) -> String {
    let env = RunEnv::new().await;
    std::fs::write(
        env.dir.path().join("app.py"),
        "def add(a: int, b: int) -> int:\n    return a + b\n\nname: str = \"x\"\n",
    )
    .unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_edit",
                "fs__edit_file",
                &[r#"{"path":"app.py","old_string":"name: str = \"x\"","new_string":"name: str = add(1, 2)"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Edited.");
    let mut args = vec![
        "run",
        "use add",
        "--mode",
        "accept-edits",
        "-c",
        "mcp_servers.lsp.enabled=true",
        // Generous for a loaded CI machine: pyright's first analysis can take seconds.
        "-c",
        "lsp.after_edit_wait_ms=30000",
    ];
    args.extend(extra);
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        env.command(&args).env("PATH", path_with_pyright()).output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("app.py")).unwrap(),
        "def add(a: int, b: int) -> int:\n    return a + b\n\nname: str = add(1, 2)\n"
    );
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let results = super::run::tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{second}");
    let (_, text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    text.clone()
}

#[tokio::test]
async fn an_edit_that_breaks_the_types_brings_the_error_to_the_model() {
    let text = edit_in_a_type_error(&[]).await;
    assert!(
        text.contains("The language server reports new errors after this edit:"),
        "{text}"
    );
    assert!(
        text.contains("app.py:4:13: error: ") && text.contains("(Pyright)"),
        "{text}"
    );
}

#[tokio::test]
async fn after_edit_off_appends_nothing() {
    let text = edit_in_a_type_error(&["-c", "lsp.after_edit=\"off\""]).await;
    assert!(!text.contains("language server"), "{text}");
    assert!(!text.contains("error:"), "{text}");
}
