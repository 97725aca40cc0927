//! One language server, started on first use: the handshake, the documents it has open, and
//! the diagnostics it publishes.
//!
//! Documents are synced from disk before every call (opened the first time, replaced whole
//! when the file changed, and saved — some servers, rust-analyzer's `cargo check` among them,
//! only recheck on save). Diagnostics are pushed by the server whenever it likes
//! (`textDocument/publishDiagnostics`); a call waits for the first push after its sync, then
//! for the server to go quiet (no push for [`QUIET`] and no work-done progress running), never
//! longer than the caller's bound.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lsp_types::{Diagnostic, PublishDiagnosticsParams, Url};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::detect::{Language, ServerCommand};

use crate::rpc::{Connection, Notification, RpcError};

/// How long the server must stay silent before its diagnostics count as settled.
const QUIET: Duration = Duration::from_millis(300);
/// How long the handshake may take (a cold Node server needs a second or two).
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a query (definition, hover, …) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Documents kept open at most; the least recently used one is closed beyond.
const MAX_OPEN: usize = 200;

/// A file's diagnostics as the server last published them.
#[derive(Debug, Clone)]
struct Published {
    version: Option<i32>,
    items: Vec<Diagnostic>,
    /// Which publish this was (counts every publish of the session).
    seq: u64,
}

#[derive(Debug)]
struct Doc {
    version: i32,
    text: String,
    /// The publish count when the document was last synced.
    synced_at: u64,
    used: u64,
}

#[derive(Debug, Default)]
struct Shared {
    docs: HashMap<Url, Doc>,
    diagnostics: HashMap<Url, Published>,
    /// Publishes so far.
    seq: u64,
    /// Work-done progress the server has begun and not ended (indexing, `cargo check`).
    busy: HashSet<String>,
    uses: u64,
}

/// What waiting for a file's diagnostics gave.
#[derive(Debug, Clone)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
    /// The server published for this version of the file and then went quiet; `false` when
    /// the bound ran out first (the items are then the latest known, possibly none).
    pub settled: bool,
}

/// A running language server for one language.
pub struct Session {
    pub language: Language,
    conn: Connection,
    capabilities: Value,
    shared: Arc<Mutex<Shared>>,
    changed: watch::Receiver<u64>,
}

impl Session {
    /// Starts the server in `root` and completes the LSP handshake.
    pub async fn start(command: &ServerCommand, root: &Path) -> Result<Self, RpcError> {
        let root_uri = Url::from_directory_path(root).map_err(|()| RpcError::Malformed {
            server: command.shown.clone(),
            method: "initialize".into(),
            detail: format!("{} is not an absolute path", root.display()),
        })?;
        let name = root
            .file_name()
            .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned());
        let folders = json!([{"uri": root_uri.as_str(), "name": name}]);
        let (conn, notifications) =
            Connection::spawn(command, root, folders.clone()).map_err(|e| RpcError::Closed {
                server: command.shown.clone(),
                stderr: vec![format!("cannot start {}: {e}", command.program.display())],
            })?;
        let params = initialize_params(&root_uri, folders, root);
        let result = conn
            .request("initialize", params, INITIALIZE_TIMEOUT)
            .await?;
        conn.notify("initialized", json!({}))?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (tx, changed) = watch::channel(0);
        tokio::spawn(listen(notifications, shared.clone(), tx));
        Ok(Self {
            language: command.language,
            capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
            conn,
            shared,
            changed,
        })
    }

    /// Whether the process is gone (the next call starts a new one).
    pub fn exited(&self) -> bool {
        self.conn.exited()
    }

    /// Ends the server politely, then for good.
    pub async fn shutdown(&self) {
        self.conn.shutdown().await;
    }

    /// Whether the server answers `capability` (a key of its `ServerCapabilities`).
    pub fn supports(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
    }

    /// Brings the server's copy of `path` up to `text` (what is on disk now). Returns the
    /// document's URI.
    pub fn sync(&self, path: &Path, language_id: &str, text: String) -> Result<Url, RpcError> {
        let uri = Url::from_file_path(path).map_err(|()| RpcError::Malformed {
            server: self.conn.name().to_string(),
            method: "textDocument/didOpen".into(),
            detail: format!("{} is not an absolute path", path.display()),
        })?;
        let Ok(mut shared) = self.shared.lock() else {
            return Err(self.conn.closed());
        };
        shared.uses += 1;
        let (uses, seq) = (shared.uses, shared.seq);
        match shared.docs.get_mut(&uri) {
            Some(doc) if doc.text == text => {
                doc.used = uses;
            }
            Some(doc) => {
                doc.version += 1;
                doc.text = text;
                doc.synced_at = seq;
                doc.used = uses;
                let version = doc.version;
                let text = doc.text.clone();
                drop(shared);
                self.conn.notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri.as_str(), "version": version},
                        "contentChanges": [{"text": text}],
                    }),
                )?;
                self.did_save(&uri)?;
            }
            None => {
                let closing = if shared.docs.len() >= MAX_OPEN {
                    shared
                        .docs
                        .iter()
                        .min_by_key(|(_, d)| d.used)
                        .map(|(u, _)| u.clone())
                } else {
                    None
                };
                if let Some(old) = &closing {
                    shared.docs.remove(old);
                }
                shared.docs.insert(
                    uri.clone(),
                    Doc {
                        version: 1,
                        text: text.clone(),
                        synced_at: seq,
                        used: uses,
                    },
                );
                drop(shared);
                if let Some(old) = closing {
                    self.conn.notify(
                        "textDocument/didClose",
                        json!({"textDocument": {"uri": old.as_str()}}),
                    )?;
                }
                self.conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri.as_str(),
                        "languageId": language_id,
                        "version": 1,
                        "text": text,
                    }}),
                )?;
            }
        }
        Ok(uri)
    }

    fn did_save(&self, uri: &Url) -> Result<(), RpcError> {
        // `textDocumentSync` is a number (no save notifications asked for) or an object whose
        // `save` says whether to send them.
        let wants_save = self
            .capabilities
            .get("textDocumentSync")
            .and_then(|s| s.get("save"))
            .is_some_and(|s| !s.is_null() && s != &Value::Bool(false));
        if wants_save {
            self.conn.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri.as_str()}}),
            )?;
        }
        Ok(())
    }

    /// The file's diagnostics once the server has published for its current version and gone
    /// quiet, waiting at most `bound`.
    pub async fn diagnostics(&self, uri: &Url, bound: Duration) -> Diagnostics {
        let deadline = Instant::now() + bound;
        let mut changed = self.changed.clone();
        changed.borrow_and_update();
        // The first publish for this version of the document.
        loop {
            if self.fresh(uri).is_some() {
                break;
            }
            let woke = tokio::time::timeout_at(deadline, changed.changed()).await;
            if !matches!(woke, Ok(Ok(()))) || self.conn.exited() {
                return Diagnostics {
                    items: self.latest(uri).unwrap_or_default(),
                    settled: false,
                };
            }
        }
        // Then quiet: no publish for QUIET and no progress running.
        loop {
            let quiet_until = (Instant::now() + QUIET).min(deadline);
            match tokio::time::timeout_at(quiet_until, changed.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => break,
                Err(_) if self.busy() && Instant::now() < deadline => continue,
                Err(_) => break,
            }
        }
        let settled = !self.busy() || Instant::now() < deadline;
        Diagnostics {
            items: self.latest(uri).unwrap_or_default(),
            settled,
        }
    }

    /// The published diagnostics, if they are for the document as last synced.
    fn fresh(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        let shared = self.shared.lock().ok()?;
        let doc = shared.docs.get(uri)?;
        let published = shared.diagnostics.get(uri)?;
        let current = match published.version {
            Some(v) => v >= doc.version,
            None => published.seq > doc.synced_at,
        };
        current.then(|| published.items.clone())
    }

    fn latest(&self, uri: &Url) -> Option<Vec<Diagnostic>> {
        let shared = self.shared.lock().ok()?;
        shared.diagnostics.get(uri).map(|p| p.items.clone())
    }

    fn busy(&self) -> bool {
        self.shared.lock().is_ok_and(|s| !s.busy.is_empty())
    }

    /// A query, if the server said it answers it (`capability`, a key of its
    /// `ServerCapabilities`): a server asked for what it does not do may hang or error
    /// obscurely.
    pub async fn request(
        &self,
        method: &str,
        capability: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        if !self.supports(capability) {
            return Err(RpcError::Unsupported {
                server: self.conn.name().to_string(),
                method: method.to_string(),
            });
        }
        self.conn.request(method, params, REQUEST_TIMEOUT).await
    }

    /// What the server is called in messages.
    pub fn name(&self) -> &str {
        self.conn.name()
    }
}

/// Files the server published for, kept by the session: a path per URI.
pub fn path_of(uri: &Url) -> Option<PathBuf> {
    uri.to_file_path().ok()
}

/// Reads the server's notifications for as long as it runs.
async fn listen(
    mut notifications: mpsc::UnboundedReceiver<Notification>,
    shared: Arc<Mutex<Shared>>,
    changed: watch::Sender<u64>,
) {
    while let Some(n) = notifications.recv().await {
        match n.method.as_str() {
            "textDocument/publishDiagnostics" => {
                let Ok(p) = serde_json::from_value::<PublishDiagnosticsParams>(n.params) else {
                    continue;
                };
                let seq = {
                    let Ok(mut s) = shared.lock() else { return };
                    s.seq += 1;
                    let seq = s.seq;
                    s.diagnostics.insert(
                        p.uri,
                        Published {
                            version: p.version,
                            items: p.diagnostics,
                            seq,
                        },
                    );
                    seq
                };
                changed.send_replace(seq);
            }
            "$/progress" => {
                let token = match n.params.get("token") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => continue,
                };
                let kind = n
                    .params
                    .pointer("/value/kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Ok(mut s) = shared.lock() {
                    match kind {
                        "begin" => {
                            s.busy.insert(token);
                        }
                        "end" => {
                            s.busy.remove(&token);
                        }
                        _ => {}
                    }
                }
                changed.send_modify(|_| {});
            }
            "window/logMessage" | "window/showMessage" => {
                let message = n.params.get("message").and_then(Value::as_str);
                tracing::debug!("language server: {}", message.unwrap_or_default());
            }
            _ => {}
        }
    }
    // The server is gone: wake whoever waits.
    changed.send_modify(|_| {});
}

/// What tern-lsp tells the server it can do: plain-text sync, pushed diagnostics, and the
/// queries its tools make — nothing that needs a UI or edits files.
fn initialize_params(root_uri: &Url, folders: Value, root: &Path) -> Value {
    json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "tern-lsp", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": root_uri.as_str(),
        "rootPath": root.to_string_lossy(),
        "workspaceFolders": folders,
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": true},
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "symbol": {"dynamicRegistration": false},
            },
            "textDocument": {
                "synchronization": {"didSave": true, "dynamicRegistration": false},
                "publishDiagnostics": {
                    "relatedInformation": false,
                    "versionSupport": true,
                    "codeDescriptionSupport": false,
                },
                "definition": {"linkSupport": true},
                "references": {},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
            },
        },
    })
}
