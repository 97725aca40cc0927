//! No language server: the server is off (no tools capability, no tools) and says what it
//! looked for; a configured one that does not exist, or dies at start, is reported clearly.

use std::process::Command;

use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

use super::{Lsp, path_with};

#[tokio::test]
async fn without_a_language_server_it_offers_nothing_and_says_what_it_looked_for() {
    let empty = tempfile::tempdir().unwrap();
    // Only the empty directory: a language server beside `node` (in `/usr/bin`, say) must not
    // be found here.
    let path = std::env::join_paths([empty.path()]).unwrap();
    let lsp = Lsp::start(&[("app.py", "x = 1\n")], &[], path).await;
    let info = lsp.client.peer_info().expect("initialized").clone();
    assert!(info.capabilities.tools.is_none(), "{:?}", info.capabilities);
    let instructions = info.instructions.clone().unwrap_or_default();
    for name in [
        "rust-analyzer",
        "pyright-langserver",
        "basedpyright-langserver",
        "typescript-language-server",
        "gopls",
        "clangd",
        "--server LANG=COMMAND",
    ] {
        assert!(instructions.contains(name), "{name}: {instructions}");
    }
    let tools = lsp.client.list_all_tools().await.unwrap();
    assert!(tools.is_empty(), "{tools:?}");
    lsp.stop().await;
}

#[tokio::test]
async fn a_rustup_proxy_counts_only_when_a_toolchain_has_the_component() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let rustup_home = tempfile::tempdir().unwrap();
    let rustup = bin.path().join("rustup");
    std::fs::write(&rustup, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&rustup, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&rustup, bin.path().join("rust-analyzer")).unwrap();
    let start = |home: &std::path::Path| {
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-lsp")).configure(|c| {
            c.arg("--root")
                .arg(home)
                .env("PATH", bin.path())
                .env("RUSTUP_HOME", rustup_home.path());
        });
        async move {
            let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
            let info = client.peer_info().unwrap().clone();
            let _ = client.cancel().await;
            info
        }
    };
    let root = tempfile::tempdir().unwrap();
    let info = start(root.path()).await;
    assert!(info.capabilities.tools.is_none());
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("rustup component add rust-analyzer"),
        "{instructions}"
    );

    // Installed in a toolchain: the proxy will find it, so it counts.
    let toolchain_bin = rustup_home.path().join("toolchains/stable-x86_64/bin");
    std::fs::create_dir_all(&toolchain_bin).unwrap();
    let real = toolchain_bin.join("rust-analyzer");
    std::fs::write(&real, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    let info = start(root.path()).await;
    assert!(info.capabilities.tools.is_some());
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("Rust (rust-analyzer)"),
        "{instructions}"
    );
}

#[test]
fn a_configured_server_that_does_not_exist_stops_it_at_start() {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern-lsp"))
        .arg("--root")
        .arg(root.path())
        .args(["--server", "python=no-such-langserver --stdio"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--server python=no-such-langserver --stdio")
            && stderr.contains("not an executable file, nor a program on PATH"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol: {:?}",
        out.stdout
    );
}

#[tokio::test]
async fn a_server_that_dies_at_start_is_an_error_naming_it_and_what_it_said() {
    let bin = tempfile::tempdir().unwrap();
    let broken = bin.path().join("broken-langserver");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'cannot find my runtime' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let flag = format!("python={}", broken.display());
    let lsp = Lsp::start(
        &[("app.py", "x = 1\n")],
        &["--server", &flag, "--no-detect"],
        path_with(&[]),
    )
    .await;
    let (text, s) = lsp.err("diagnostics", json!({"path": "app.py"})).await;
    assert_eq!(s["error"], "no_server", "{s}");
    assert!(text.contains("cannot start the language server"), "{text}");
    assert!(text.contains("cannot find my runtime"), "{text}");
    lsp.stop().await;
}
