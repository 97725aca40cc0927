//! A running `tern-web` under test and helpers to call it.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// Bound on any single call: a hang fails the test instead of blocking CI.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Server {
    pub client: RunningService<RoleClient, ()>,
}

/// Starts `tern-web ARGS...`.
pub async fn start(args: &[&str]) -> Server {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-web"));
    cmd.args(args);
    let transport = TokioChildProcess::new(cmd).unwrap();
    let client = tokio::time::timeout(CALL_TIMEOUT, ().serve(transport))
        .await
        .unwrap()
        .unwrap();
    Server { client }
}

impl Server {
    pub async fn fetch(&self, args: Value) -> CallToolResult {
        let params =
            CallToolRequestParams::new("fetch").with_arguments(args.as_object().unwrap().clone());
        tokio::time::timeout(CALL_TIMEOUT, self.client.peer().call_tool(params))
            .await
            .expect("call did not return in time")
            .unwrap()
    }
}

pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A fact of the result: from `structuredContent` for a fetched page, from the
/// `tern/fetch_error` `_meta` for a failure (failures carry no structured content).
pub fn field<'a>(result: &'a CallToolResult, key: &str) -> &'a Value {
    if is_error(result) {
        assert!(
            result.structured_content.is_none(),
            "failures are text only"
        );
        return &result
            .meta
            .as_ref()
            .and_then(|m| m.get(tern_web::FETCH_ERROR_META))
            .expect("a failure's _meta names its kind")[key];
    }
    &result
        .structured_content
        .as_ref()
        .expect("structuredContent")[key]
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}
