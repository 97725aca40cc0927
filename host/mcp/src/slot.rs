//! What the pool keeps per server, shared by the pool, the supervisor that runs each server,
//! and the calls and listings that reach it: a leaf the others import, so none of them imports
//! another that imports it back.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{RoleClient, service::Peer};
use serde::Serialize;
use tokio::sync::watch;

use crate::{
    cache::ToolCache,
    client::{Answers, ProgressRoutes},
    connect::Era,
    spec::ServerSpec,
    stderr::StderrTail,
    table::{DroppedTool, ToolDef},
    transport::{StdoutNoise, TaskSupport},
};

/// How long a `tools/list` after `notifications/tools/list_changed` may take.
pub(crate) const RELIST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long listing a server's prompts or resources may take.
pub(crate) const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Lines of stderr attached to failure reports.
pub(crate) const REPORT_TAIL: usize = 20;

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ServerState {
    /// Spawned or dialled; initialize/tools/list not finished yet.
    Starting,
    /// Initialized; its tools are in the table.
    Ready {
        pid: Option<u32>,
        startup_ms: u64,
        protocol_version: String,
        server_name: String,
        server_version: String,
    },
    /// Crashed; a restart is scheduled.
    Restarting { attempt: usize },
    /// Not running and not coming back on its own.
    Failed { reason: String },
    /// Shut down by the pool.
    Stopped,
}

impl ServerState {
    /// The state in one word, as `tern mcp list`, `/mcp` and errors show it — the same word as
    /// its serialized `status`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready { .. } => "ready",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Failed { .. } => "failed",
            ServerState::Stopped => "stopped",
        }
    }
}

/// A tool held out of the table by its pin.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeldTool {
    pub tool: String,
    pub diff: String,
    pub kind: HeldKind,
}

/// Why a tool waits for `tern mcp approve`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HeldKind {
    /// The server did not have it when its tools were approved.
    New,
    /// Its definition differs from the approved one.
    Changed,
}

/// Everything the supervisor publishes about a server.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) state: ServerState,
    pub(crate) peer: Option<Peer<RoleClient>>,
    /// Tools in the table.
    pub(crate) tools: Arc<Vec<ToolDef>>,
    /// Every tool the server lists after filters, before pins (for approval).
    pub(crate) listed: Arc<Vec<ToolDef>>,
    pub(crate) held: Vec<HeldTool>,
    /// Tools left out for their size.
    pub(crate) dropped: Vec<DroppedTool>,
    /// The server said its tools changed and the re-list has not landed yet.
    pub(crate) changing: bool,
    /// The connection's era (`None` until connected).
    pub(crate) era: Option<Era>,
    /// `tools` are the remembered list of an earlier run: offered while the server starts,
    /// replaced by the real list when it is up.
    pub(crate) provisional: bool,
    /// Which of its tools must be called as tasks.
    pub(crate) task_support: TaskSupport,
    pub(crate) restarts: usize,
    pub(crate) last_error: Option<String>,
    /// The connected server's `instructions`.
    pub(crate) instructions: Option<String>,
}

/// One server's shared state.
pub(crate) struct Slot {
    pub(crate) spec: ServerSpec,
    pub(crate) live: watch::Sender<Live>,
    pub(crate) stderr: StderrTail,
    /// Lines on its stdout that were not MCP messages.
    pub(crate) stdout_noise: StdoutNoise,
    pub(crate) progress: ProgressRoutes,
    /// What tern answers this server's requests with (roots, elicitation).
    pub(crate) answers: Arc<Answers>,
    /// The era the server spoke last time it connected (restarts skip the probe).
    pub(crate) era: Mutex<Option<Era>>,
    /// The server's key in the tool cache, and the cache.
    pub(crate) cache_key: Option<String>,
    pub(crate) cache: Arc<ToolCache>,
}

impl Slot {
    pub(crate) fn update(&self, f: impl FnOnce(&mut Live)) {
        self.live.send_modify(f);
    }

    pub(crate) fn era(&self) -> Option<Era> {
        self.era.lock().ok().and_then(|e| *e)
    }

    pub(crate) fn remember_era(&self, era: Era) {
        if let Ok(mut e) = self.era.lock() {
            *e = Some(era);
        }
    }

    /// Waits (at most the re-list timeout) until the server's tool list is not changing.
    pub(crate) async fn tools_settled(&self) {
        let mut rx = self.live.subscribe();
        let _ = tokio::time::timeout(RELIST_TIMEOUT, rx.wait_for(|l| !l.changing)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::ServerState;

    #[test]
    fn a_state_label_is_its_serialized_status() {
        for state in [
            ServerState::Starting,
            ServerState::Ready {
                pid: None,
                startup_ms: 1,
                protocol_version: "2025-11-25".into(),
                server_name: "s".into(),
                server_version: "1".into(),
            },
            ServerState::Restarting { attempt: 1 },
            ServerState::Failed { reason: "x".into() },
            ServerState::Stopped,
        ] {
            let json = serde_json::to_value(&state).unwrap_or_default();
            assert_eq!(json["status"], state.label(), "{state:?}");
        }
    }
}
