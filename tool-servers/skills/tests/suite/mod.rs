//! Spawns the real `tern-skills` binary over skill folders laid out in temp directories and
//! talks MCP to it with rmcp's client, in both of MCP's eras.

mod confinement;
mod discovery;
mod load;
mod python_sdk;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::Value;

/// Every request gets this long; a hung server must fail the test, not hang it.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// How a client opens the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize`, 2025-11-25.
    Legacy,
    /// `server/discover`, 2026-07-28.
    Modern,
}

pub const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

impl Era {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Self::Legacy => ClientLifecycleMode::Initialize,
            Self::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }

    fn revision(self) -> &'static str {
        match self {
            Self::Legacy => "2025-11-25",
            Self::Modern => "2026-07-28",
        }
    }
}

/// The published-style skill checked in under `tests/fixtures/csv-summary`.
pub fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/csv-summary")
}

/// Copies a folder tree (files and folders only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Writes a minimal skill `name` into the skills folder `skills`.
pub fn put_skill(skills: &Path, folder: &str, frontmatter: &str, body: &str) -> PathBuf {
    let dir = skills.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{frontmatter}---\n{body}"),
    )
    .unwrap();
    dir
}

/// A project holding the fixture under `.agents/skills/csv-summary`, in a temp directory
/// (canonical paths, so what the server reports can be compared as is).
pub struct Layout {
    pub base: PathBuf,
    pub project: PathBuf,
    _dir: tempfile::TempDir,
}

impl Layout {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        copy_tree(&fixture(), &project.join(".agents/skills/csv-summary"));
        Self {
            base,
            project,
            _dir: dir,
        }
    }

    pub fn skill_dir(&self) -> PathBuf {
        self.project.join(".agents/skills/csv-summary")
    }

    pub fn project_args(&self) -> Vec<OsString> {
        vec!["--project".into(), self.project.clone().into()]
    }
}

/// A running `tern-skills`.
pub struct Skills {
    pub client: RunningService<RoleClient, ()>,
}

impl Skills {
    pub async fn start(era: Era, args: &[OsString]) -> Self {
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-skills")).configure(|c| {
            c.args(args);
        });
        // Warnings about the broken skills a test lays out go to stderr: not into the test log.
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let client = tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, era.mode()))
            .await
            .expect("connecting timed out")
            .expect("connecting failed");
        let info = client.peer_info().unwrap();
        assert_eq!(info.protocol_version.to_string(), era.revision());
        Self { client }
    }

    pub fn instructions(&self) -> Option<String> {
        self.client.peer_info().and_then(|i| i.instructions.clone())
    }

    pub async fn tools(&self) -> Vec<Tool> {
        tokio::time::timeout(TIMEOUT, self.client.list_all_tools())
            .await
            .expect("tools/list timed out")
            .expect("tools/list failed")
    }

    pub async fn tool(&self, name: &str) -> Tool {
        let tools = self.tools().await;
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tool {name} among {tools:?}"))
            .clone()
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

    /// Calls `tool` with a request `_meta` (as a host sends `tern/deny_paths`).
    pub async fn call_with_meta(
        &self,
        tool: &'static str,
        args: Value,
        meta: Value,
    ) -> CallToolResult {
        let (Value::Object(args), Value::Object(meta)) = (args, meta) else {
            panic!("arguments and meta must be objects")
        };
        let mut params = CallToolRequestParams::new(tool).with_arguments(args);
        params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(
            meta,
        )));
        tokio::time::timeout(TIMEOUT, self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{tool} timed out"))
            .unwrap_or_else(|e| panic!("{tool} failed at the protocol level: {e}"))
    }

    /// Calls a tool that must succeed; returns (text, structuredContent, result).
    pub async fn ok(&self, tool: &'static str, args: Value) -> (String, Value, CallToolResult) {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(false), "{tool} failed: {text}");
        let structured = r.structured_content.clone().unwrap_or(Value::Null);
        (text, structured, r)
    }

    /// Calls a tool that must refuse; returns its text.
    pub async fn refused(&self, tool: &'static str, args: Value) -> String {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} should have failed: {text}");
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
