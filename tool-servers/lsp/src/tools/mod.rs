//! The tools' work: find the file's language server (starting it on first use), sync the file,
//! ask, and render the answer. Failures the model should see are error results naming the
//! file and what went wrong.

mod diagnostics;
mod locations;
mod symbols;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::Url;
use rmcp::model::{CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::detect::{Detected, Language};
use crate::render::Item;
use crate::session::Session;
use crate::workspace::Workspace;

/// Diagnostics returned when the call does not say.
pub const DEFAULT_MAX_DIAGNOSTICS: usize = 50;

/// Where in a file a query is about.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
#[serde(deny_unknown_fields)]
pub struct PositionParams {
    /// The source file, relative to the root (or absolute inside it).
    pub path: String,
    /// The line, counting from 1.
    pub line: u32,
    /// The column, counting from 1, in characters. Leave it out and give `symbol` instead.
    #[serde(default)]
    pub column: Option<u32>,
    /// The name to ask about, as written on that line: its first whole-word occurrence there
    /// is used (easier than counting columns).
    #[serde(default)]
    pub symbol: Option<String>,
}

/// The tools' shared state.
pub struct Lsp {
    pub(crate) ws: Workspace,
    pub(crate) detected: Detected,
    sessions: HashMap<Language, tokio::sync::Mutex<Option<Arc<Session>>>>,
    /// What the last `diagnostics` call found per file: what `new_only` compares with.
    baselines: Mutex<HashMap<PathBuf, Vec<Item>>>,
    default_wait: Duration,
}

/// A failure as a tool result: the message, and `{path, error, reason}` for hosts.
pub fn failure(path: &str, kind: &str, reason: impl std::fmt::Display) -> CallToolResult {
    let reason = reason.to_string();
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("`{path}`: {reason}"))]);
    result.structured_content = Some(json!({"path": path, "error": kind, "reason": reason}));
    result
}

fn success(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A file synced to its language server.
struct Opened {
    session: Arc<Session>,
    real: PathBuf,
    uri: Url,
    text: String,
}

impl Lsp {
    pub fn new(ws: Workspace, detected: Detected, default_wait: Duration) -> Self {
        let sessions = detected
            .servers
            .iter()
            .map(|s| (s.language, tokio::sync::Mutex::new(None)))
            .collect();
        Self {
            ws,
            detected,
            sessions,
            baselines: Mutex::default(),
            default_wait,
        }
    }

    /// Ends every running language server.
    pub async fn shutdown(&self) {
        for slot in self.sessions.values() {
            if let Some(session) = slot.lock().await.take() {
                session.shutdown().await;
            }
        }
    }

    /// The running session for `language`, started (or restarted after a crash) as needed.
    async fn session(&self, language: Language) -> Result<Arc<Session>, String> {
        let (Some(slot), Some(command)) =
            (self.sessions.get(&language), self.detected.get(language))
        else {
            return Err(format!(
                "no language server for {} here (looked for {}; configure one with \
                 `--server {}=COMMAND`)",
                language.display(),
                language
                    .known_servers()
                    .iter()
                    .map(|c| c[0])
                    .collect::<Vec<_>>()
                    .join(" or "),
                language.name()
            ));
        };
        let mut running = slot.lock().await;
        if let Some(s) = running.as_ref().filter(|s| !s.exited()) {
            return Ok(s.clone());
        }
        let started = Session::start(command, self.ws.root())
            .await
            .map_err(|e| format!("cannot start the language server: {e}"))?;
        let started = Arc::new(started);
        *running = Some(started.clone());
        Ok(started)
    }

    /// Reads `path`, finds its server and syncs the file to it.
    async fn open(&self, path: &str) -> Result<Opened, CallToolResult> {
        let (real, text) = self
            .ws
            .read(path)
            .map_err(|e| failure(path, "unreadable", format!("cannot read it: {e}")))?;
        let Some((language, language_id)) = Language::of_path(&real) else {
            return Err(failure(
                path,
                "no_server",
                format!(
                    "no language server handles this kind of file (tern-lsp knows {})",
                    Detected::looked_for()
                ),
            ));
        };
        let session = self
            .session(language)
            .await
            .map_err(|e| failure(path, "no_server", e))?;
        let uri = session
            .sync(&real, language_id, text.clone())
            .map_err(|e| failure(path, "server_failed", e))?;
        Ok(Opened {
            session,
            real,
            uri,
            text,
        })
    }
}
