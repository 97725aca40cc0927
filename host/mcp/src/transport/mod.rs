//! The wire under every connection: tern's stdio transport and the guard every transport
//! (stdio or streamable HTTP) is wrapped in.

pub(crate) mod guard;
mod scan;
pub(crate) mod stdio;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    RoleClient,
    model::{ErrorData, RequestId},
    service::RxJsonRpcMessage,
};
use serde::{Deserialize, Serialize};

/// Each tool's `execution.taskSupport` as the server listed it (`"required"`, `"optional"`),
/// by tool name. rmcp's `Tool` drops the `execution` field, so the stdio transport reads it off
/// the wire as `tools/list` replies pass (see `stdio::note_task_support`); over streamable HTTP
/// a tool's first plain call learns it from the server's -32601 refusal (`call.rs`).
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskSupport(Arc<Mutex<HashMap<String, String>>>);

impl TaskSupport {
    /// Whether `tool` may only be called as a task.
    pub(crate) fn required(&self, tool: &str) -> bool {
        self.0
            .lock()
            .is_ok_and(|m| m.get(tool).is_some_and(|s| s == "required"))
    }

    pub(crate) fn note(&self, tool: &str, support: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(tool.to_string(), support.to_string());
        }
    }
}

/// Lines a server printed on stdout that are not MCP messages (banners, log lines). tern
/// skips them, as other SDKs do, but stdout is the protocol: a stricter client fails on them,
/// so `tern mcp doctor` reports the count and the first one. Kept per server across restarts.
#[derive(Debug, Clone, Default)]
pub(crate) struct StdoutNoise(Arc<Mutex<(usize, Option<String>)>>);

impl StdoutNoise {
    /// The longest sample kept of the first line.
    const SAMPLE_CHARS: usize = 120;

    pub(crate) fn note(&self, line: &[u8]) {
        if let Ok(mut n) = self.0.lock() {
            n.0 += 1;
            if n.1.is_none() {
                let text = String::from_utf8_lossy(line);
                n.1 = Some(text.trim_end().chars().take(Self::SAMPLE_CHARS).collect());
            }
        }
    }

    /// How many lines were skipped, and the first of them.
    pub(crate) fn get(&self) -> (usize, Option<String>) {
        self.0.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

/// A failure tern detected on the wire and answers a request with, in place of the server's
/// reply. It travels as a JSON-RPC error (so rmcp completes the waiting call at once) marked with
/// [`LocalFailure::KEY`] in its `data`, which the pool turns back into a precise `CallError`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum LocalFailure {
    /// The reply was longer than one message may be, and was dropped unread.
    #[error(
        "the server's reply was {}, over the {} limit of one MCP message; it was dropped",
        human_bytes(*bytes),
        human_bytes(*limit)
    )]
    ReplyTooLarge { bytes: usize, limit: usize },
    /// The reply was JSON but not a JSON-RPC response tern can read.
    #[error("the server's reply could not be read: {reason}")]
    UnreadableReply { reason: String },
}

impl LocalFailure {
    /// The `data` key marking an error as made by tern, not sent by the server.
    const KEY: &'static str = tern_protocol::meta::LOCAL;

    pub(crate) fn into_error_message(self, id: RequestId) -> RxJsonRpcMessage<RoleClient> {
        let data = serde_json::json!({ Self::KEY: &self });
        RxJsonRpcMessage::<RoleClient>::error(
            ErrorData::internal_error(self.to_string(), Some(data)),
            Some(id),
        )
    }

    /// The local failure an error stands for, when tern made it.
    pub(crate) fn of(error: &ErrorData) -> Option<Self> {
        let value = error.data.as_ref()?.get(Self::KEY)?;
        serde_json::from_value(value.clone()).ok()
    }
}

/// `17.2 MB`, `16 MiB`-style sizes for messages.
pub(crate) fn human_bytes(n: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else if n >= 1_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1} kB", n as f64 / 1e3)
    } else {
        format!("{n} bytes")
    }
}
