//! Spawns the real `tern-fs` binary and talks MCP to it with rmcp's client.

mod annotations;
mod deny;
mod fast_path;
mod http;
mod http_wire;
mod oversized;
mod race;
mod raw;
mod read;
mod refusals;
mod schemas;
mod search;
mod write_edit;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// Every request gets this long; rmcp has no default timeout and a hung
/// server must fail the test, not hang it.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `tern-fs` over a fresh temporary root.
pub struct Fs {
    pub client: RunningService<RoleClient, ()>,
    /// Canonical path of the root (what the server reports).
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fs {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts with extra flags; the temp root is always the first `--root`.
    pub async fn start_with(extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
        std::fs::create_dir(&root).unwrap();
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-fs")).configure(|c| {
            c.arg("--root").arg(&root).args(extra);
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

    /// The temp directory around the root (a place outside every root).
    pub fn outside(&self) -> PathBuf {
        self.root.parent().unwrap().to_path_buf()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn put(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
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

    /// Calls a tool that must refuse; returns its text, which must name `path`.
    pub async fn refused(&self, tool: &'static str, args: Value, path: &str) -> String {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} should have failed: {text}");
        assert!(
            text.contains(path),
            "the refusal should name `{path}`: {text}"
        );
        // Refusals are text only: the declared output schemas describe success, and a
        // client validating structuredContent against them must not reject a refusal.
        assert_eq!(r.structured_content, None, "{text}");
        text
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
        .join("")
}

pub fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}
