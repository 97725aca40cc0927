//! The client half of every MCP connection tern opens.
//!
//! Offers the working directory as a root and answers `roots/list`, routes
//! `notifications/progress` to the call that asked for it, turns
//! `notifications/tools/list_changed` into a re-list, and server log messages
//! into events.
//!
//! Roots and logging are deprecated only in the 2026-07-28 protocol (SEP-2577);
//! tern negotiates 2025-11-25, where both are current, hence the `allow`.
#![allow(deprecated)]

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use rmcp::{
    ClientHandler, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, Implementation, ListRootsResult,
        LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
        RootsCapabilities,
    },
    service::{NotificationContext, RequestContext},
};
use tokio::sync::{Notify, mpsc};

use tern_protocol::Event;

use crate::event::{EventSink, Progress};

/// Progress listeners by token, shared between the handler and the pool's calls.
pub(crate) type ProgressRoutes =
    Arc<Mutex<HashMap<ProgressToken, mpsc::UnboundedSender<Progress>>>>;

/// tern's [`ClientHandler`]: one per connection (a restart makes a new one).
pub(crate) struct TernClient {
    pub(crate) server: String,
    pub(crate) roots: Vec<PathBuf>,
    pub(crate) progress: ProgressRoutes,
    pub(crate) tools_changed: Arc<Notify>,
    pub(crate) events: EventSink,
}

impl ClientHandler for TernClient {
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        let roots = self
            .roots
            .iter()
            .map(|p| {
                let mut root = rmcp::model::Root::new(file_uri(p));
                root.name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                root
            })
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = self
            .progress
            .lock()
            .ok()
            .and_then(|routes| routes.get(&params.progress_token).cloned());
        if let Some(tx) = route {
            let _ = tx.send(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "info".to_string());
        (self.events)(Event::ServerLog {
            server: self.server.clone(),
            level,
            logger: params.logger,
            data: params.data,
        });
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(false);
        caps.roots = Some(roots);
        ClientConfig::new(caps, Implementation::new("tern", env!("CARGO_PKG_VERSION")))
    }
}

/// `file://` URI of an absolute path (percent-encoding the few bytes that need it).
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_percent_encoded() {
        assert_eq!(file_uri(std::path::Path::new("/w/a b")), "file:///w/a%20b");
        assert_eq!(file_uri(std::path::Path::new("/w/x")), "file:///w/x");
    }
}
