//! Spawns the real `tern-todo` binary and talks MCP to it with rmcp's client, in both of MCP's
//! eras: the `initialize` handshake (2025-11-25) and `server/discover` (2026-07-28).

mod persistence;
mod python_sdk;
mod tools;
mod validation;

use std::ffi::OsString;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};

/// Every request gets this long; rmcp has no default timeout and a hung server must fail the
/// test, not hang it.
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

    pub fn revision(self) -> &'static str {
        match self {
            Self::Legacy => "2025-11-25",
            Self::Modern => "2026-07-28",
        }
    }
}

/// A running `tern-todo`.
pub struct Todo {
    pub client: RunningService<RoleClient, ()>,
}

impl Todo {
    /// Starts `tern-todo ARGS` in `era`, with `TERN_TODO_STATE` cleared unless `env` sets it.
    pub async fn start(era: Era, args: &[OsString], env: &[(&str, OsString)]) -> Self {
        let cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-todo")).configure(|c| {
            c.args(args).env_remove("TERN_TODO_STATE");
            for (k, v) in env {
                c.env(k, v);
            }
        });
        let transport = TokioChildProcess::new(cmd).unwrap();
        let client = tokio::time::timeout(TIMEOUT, ().serve_with_lifecycle(transport, era.mode()))
            .await
            .expect("connecting timed out")
            .expect("connecting failed");
        let todo = Self { client };
        assert_eq!(todo.revision(), era.revision());
        todo
    }

    pub async fn memory(era: Era) -> Self {
        Self::start(era, &[], &[]).await
    }

    pub fn revision(&self) -> String {
        self.client
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default()
    }

    pub fn instructions(&self) -> String {
        self.client
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .unwrap_or_default()
    }

    pub async fn tools(&self) -> Vec<Tool> {
        tokio::time::timeout(TIMEOUT, self.client.list_all_tools())
            .await
            .expect("tools/list timed out")
            .expect("tools/list failed")
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

    /// Calls a tool that must succeed; returns (text, structuredContent, `_meta["tern/todo"]`).
    pub async fn ok(&self, tool: &'static str, args: Value) -> (String, Value, Value) {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(false), "{tool} failed: {text}");
        let meta = r
            .meta
            .as_ref()
            .and_then(|m| m.get(tern_todo::TODO_META).cloned())
            .unwrap_or(Value::Null);
        (text, r.structured_content.unwrap_or(Value::Null), meta)
    }

    /// Calls a tool that must fail; returns its text.
    pub async fn refused(&self, tool: &'static str, args: Value) -> String {
        let r = self.call(tool, args).await;
        let text = text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} should have failed: {text}");
        text
    }

    pub async fn write(&self, todos: Value) -> (String, Value, Value) {
        self.ok("write", json!({ "todos": todos })).await
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

/// A three-item plan, one item in progress.
pub fn plan() -> Value {
    json!([
        {"id": "1", "text": "Read the parser", "status": "done"},
        {"id": "2", "text": "Write the failing test", "status": "in_progress"},
        {"id": "3", "text": "Fix the bug", "status": "pending"},
    ])
}
