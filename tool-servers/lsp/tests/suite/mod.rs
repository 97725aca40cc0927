//! Spawns the real `tern-lsp` binary, talks MCP to it with rmcp's client, and lets it drive a
//! real language server: pyright, installed by `.ci/install-test-deps` into `.deps/npm` (run
//! on the machine's Node). A missing pyright fails the tests; they never skip.

mod no_server;
mod python;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// Every request gets this long: a cold pyright takes a few seconds to analyse.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// `.deps/npm/node_modules/.bin`, where pyright-langserver is.
pub fn npm_bin() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.deps/npm/node_modules/.bin");
    assert!(
        dir.join("pyright-langserver").exists(),
        "{} has no pyright-langserver: run `.ci/install-test-deps` first (the README's test setup does)",
        dir.display()
    );
    dir
}

/// A `PATH` of `first` then the directories of the programs language servers need (`node`),
/// and nothing else: no other language server of this machine can be found.
pub fn path_with(first: &[PathBuf]) -> OsString {
    let mut dirs: Vec<PathBuf> = first.to_vec();
    if let Some(node) = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .find(|d| d.join("node").exists())
    {
        dirs.push(node);
    }
    std::env::join_paths(dirs).unwrap()
}

/// A running `tern-lsp` over a fresh temporary root.
pub struct Lsp {
    pub client: RunningService<RoleClient, ()>,
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Lsp {
    /// Starts with pyright on PATH and `extra` flags, after `files` are written.
    pub async fn python(files: &[(&str, &str)], extra: &[&str]) -> Self {
        Self::start(files, extra, path_with(&[npm_bin()])).await
    }

    pub async fn start(files: &[(&str, &str)], extra: &[&str], path: OsString) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("proj");
        std::fs::create_dir(&root).unwrap();
        for (rel, content) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-lsp")).configure(|c| {
            c.arg("--root").arg(&root).args(extra).env("PATH", &path);
        });
        let transport = TokioChildProcess::new(cmd).unwrap();
        let client = tokio::time::timeout(TIMEOUT, ().serve(transport))
            .await
            .expect("initialize timed out")
            .expect("initialize failed");
        Self {
            client,
            root,
            _dir: dir,
        }
    }

    pub fn put(&self, rel: &str, content: &str) {
        std::fs::write(self.root.join(rel), content).unwrap();
    }

    pub async fn call(&self, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(tool).with_arguments(args);
        tokio::time::timeout(TIMEOUT, self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{tool} timed out"))
            .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
    }

    /// Calls a tool that must succeed; returns (text, structuredContent).
    pub async fn ok(&self, tool: &'static str, args: Value) -> (String, Value) {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(false), "{tool} failed: {text}");
        (text, r.structured_content.unwrap_or(Value::Null))
    }

    /// Calls a tool that must fail; returns (text, structuredContent).
    pub async fn err(&self, tool: &'static str, args: Value) -> (String, Value) {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} should have failed: {text}");
        (text, r.structured_content.unwrap_or(Value::Null))
    }

    pub async fn stop(self) {
        let _ = self.client.cancel().await;
    }
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Processes whose command line mentions `needle` (to check none outlive the server).
pub fn processes_mentioning(needle: &Path) -> Vec<String> {
    let needle = needle.to_string_lossy();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle.as_ref()) {
            found.push(cmdline);
        }
    }
    found
}
