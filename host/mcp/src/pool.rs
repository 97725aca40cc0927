//! The pool: every configured server, started concurrently, and the only way
//! tern reaches them.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{RoleClient, service::Peer};
use serde::Serialize;
use tokio::{sync::watch, task::JoinHandle};
use tokio_util::sync::CancellationToken;

pub use crate::slot::{HeldKind, HeldTool, ServerState};
use crate::{
    cache::ToolCache,
    client::Answers,
    error::CallError,
    event::{EventSink, Progress},
    pins::PinStore,
    slot::{LIST_TIMEOUT, Live, REPORT_TAIL, Slot},
    spec::{PoolOptions, ServerSpec},
    stderr::StderrTail,
    supervise::supervise,
    table::{DroppedTool, ToolDef, ToolTable},
    transport::{StdoutNoise, TaskSupport},
};

/// A snapshot of one server for `tern mcp list`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub transport: &'static str,
    pub required: bool,
    #[serde(flatten)]
    pub state: ServerState,
    /// Tools in the table (after filters and pins).
    pub tools: usize,
    /// Tools held out until `tern mcp approve` (new or changed since approval), with diffs.
    pub held: Vec<HeldTool>,
    /// Tools left out of the table for their size.
    pub dropped: Vec<DroppedTool>,
    /// The roots the server is offered (`None`: roots are off for it).
    pub roots: Option<Vec<std::path::PathBuf>>,
    /// Directories the server's own arguments name that its roots do not cover: a server that
    /// narrows its directories to its roots (server-filesystem does) will not serve them.
    pub narrowed_by_roots: Vec<std::path::PathBuf>,
    pub restarts: usize,
    pub last_error: Option<String>,
    /// The last stderr lines, when the server failed.
    pub stderr_tail: Vec<String>,
    /// Lines it printed on stdout that are not MCP messages (skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stray_stdout: Option<StrayStdout>,
    /// The server's own `instructions`, when it is up (why a server offers no tools, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Non-protocol lines a stdio server printed on stdout: how many, and the first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StrayStdout {
    pub lines: usize,
    pub first: String,
}

/// A prompt a server offers (the REPL's `/SERVER:PROMPT`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PromptInfo {
    pub server: String,
    pub name: String,
    pub description: String,
    /// Argument names, with `true` when required, in the server's order.
    pub arguments: Vec<(String, bool)>,
}

/// Options of one call.
#[derive(Debug, Clone)]
pub struct CallOptions {
    /// How long the call may take; then `notifications/cancelled` is sent and the call fails.
    /// The caller decides it (the gateway, from the tool's config): the pool has no default.
    pub timeout: Duration,
    /// The request's `_meta` (e.g. the host's per-call limits), merged with the progress token.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// Cancelled by the caller (Ctrl-C): the pool sends `notifications/cancelled`.
    pub cancel: CancellationToken,
    /// Receives the server's progress notifications for this call.
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<Progress>>,
}

impl CallOptions {
    /// A call bounded by `timeout`, not cancelled, without progress or `_meta`.
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            meta: None,
            cancel: CancellationToken::new(),
            progress: None,
        }
    }
}

/// The running servers.
pub struct ServerPool {
    pub(crate) slots: BTreeMap<String, Arc<Slot>>,
    pub(crate) shutdown: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl ServerPool {
    /// Starts every server concurrently and returns at once; servers join the
    /// table as they become ready. Must be called inside a Tokio runtime.
    pub fn start(
        specs: Vec<ServerSpec>,
        opts: PoolOptions,
        pins: PinStore,
        events: EventSink,
    ) -> Arc<Self> {
        let shutdown = CancellationToken::new();
        let pins = Arc::new(Mutex::new(pins));
        let cache = Arc::new(ToolCache::load(opts.tool_cache.as_deref()));
        let opts = Arc::new(opts);
        let mut slots = BTreeMap::new();
        let mut tasks = Vec::new();
        for spec in specs {
            let cache_key = ToolCache::key(&spec);
            let entry = cache_key.as_deref().and_then(|k| cache.get(k));
            // The era it spoke last run: the connection opens in it, without the probe.
            let remembered_era = entry.as_ref().and_then(|e| e.era);
            let remembered: Vec<ToolDef> = entry
                .map(|entry| {
                    entry
                        .tools
                        .into_iter()
                        .filter(|t| spec.tool_filter.allows(&t.name))
                        .collect()
                })
                .unwrap_or_default();
            let answers = Arc::new(Answers {
                server: spec.name.clone(),
                roots: spec.roots.resolve(&opts.roots).map(<[_]>::to_vec),
                elicitation: opts.elicitation,
                elicitor: opts.elicitor.clone(),
                events: events.clone(),
                person: Default::default(),
            });
            let slot = Arc::new(Slot {
                live: watch::Sender::new(Live {
                    state: ServerState::Starting,
                    peer: None,
                    provisional: !remembered.is_empty(),
                    tools: Arc::new(remembered),
                    listed: Arc::default(),
                    held: Vec::new(),
                    dropped: Vec::new(),
                    changing: false,
                    era: None,
                    task_support: TaskSupport::default(),
                    restarts: 0,
                    last_error: None,
                    instructions: None,
                }),
                stderr: StderrTail::new(),
                stdout_noise: StdoutNoise::default(),
                progress: Arc::new(Mutex::new(HashMap::new())),
                answers,
                era: Mutex::new(remembered_era),
                cache_key,
                cache: cache.clone(),
                spec,
            });
            tasks.push(tokio::spawn(supervise(
                slot.clone(),
                opts.clone(),
                pins.clone(),
                events.clone(),
                shutdown.clone(),
            )));
            slots.insert(slot.spec.name.clone(), slot);
        }
        Arc::new(Self {
            slots,
            shutdown,
            tasks: Mutex::new(tasks),
        })
    }

    /// Waits until no server is still starting (each is ready or failed).
    pub async fn wait_settled(&self) {
        for slot in self.slots.values() {
            let mut rx = slot.live.subscribe();
            let _ = rx
                .wait_for(|l| !matches!(l.state, ServerState::Starting))
                .await;
        }
    }

    /// Waits until every `required` server is ready or failed (each is bounded by its startup
    /// timeout): a run must not start without them.
    pub async fn wait_required(&self) {
        for slot in self.slots.values().filter(|s| s.spec.required) {
            let mut rx = slot.live.subscribe();
            let _ = rx
                .wait_for(|l| !matches!(l.state, ServerState::Starting))
                .await;
        }
    }

    /// Waits until every server has tools to offer — remembered from an earlier run, or its
    /// own — or has settled (ready or failed). A server whose tools were remembered is not
    /// waited for: its tools are in the table already.
    pub async fn wait_for_tools(&self) {
        for slot in self.slots.values() {
            let mut rx = slot.live.subscribe();
            let _ = rx
                .wait_for(|l| l.provisional || !matches!(l.state, ServerState::Starting))
                .await;
        }
    }

    /// Waits until `server` is no longer starting (ready or failed: the supervisor bounds that
    /// by its startup timeout). `false` for a server that is not configured.
    pub async fn wait_started(&self, server: &str) -> bool {
        let Some(slot) = self.slots.get(server) else {
            return false;
        };
        let mut rx = slot.live.subscribe();
        rx.wait_for(|l| !matches!(l.state, ServerState::Starting))
            .await
            .is_ok()
    }

    /// The servers still starting, by name.
    pub fn starting(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|(_, s)| matches!(s.live.borrow().state, ServerState::Starting))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The first required server that failed, with its reason and stderr tail.
    pub fn required_failure(&self) -> Option<ServerStatus> {
        self.statuses()
            .into_iter()
            .find(|s| s.required && matches!(s.state, ServerState::Failed { .. }))
    }

    /// A snapshot of every server, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.slots
            .values()
            .map(|slot| {
                let live = slot.live.borrow().clone();
                let failed = matches!(live.state, ServerState::Failed { .. });
                let roots = slot.answers.roots.clone();
                ServerStatus {
                    name: slot.spec.name.clone(),
                    transport: slot.spec.transport.kind(),
                    required: slot.spec.required,
                    tools: live.tools.len(),
                    held: live.held,
                    dropped: live.dropped,
                    narrowed_by_roots: if slot.spec.narrows_to_roots {
                        crate::roots::narrowed(&slot.spec.transport, roots.as_deref())
                    } else {
                        Vec::new()
                    },
                    roots,
                    restarts: live.restarts,
                    last_error: live.last_error,
                    stderr_tail: if failed {
                        slot.stderr.last(REPORT_TAIL)
                    } else {
                        Vec::new()
                    },
                    stray_stdout: match slot.stdout_noise.get() {
                        (0, _) => None,
                        (lines, first) => Some(StrayStdout {
                            lines,
                            first: first.unwrap_or_default(),
                        }),
                    },
                    state: live.state,
                    instructions: live.instructions,
                }
            })
            .collect()
    }

    /// The merged table of every ready server's tools, and the tools left out (for their
    /// schema, a name collision, or their size).
    pub fn table(&self) -> (ToolTable, Vec<DroppedTool>) {
        let mut too_large = Vec::new();
        let servers = self
            .slots
            .iter()
            .filter_map(|(name, slot)| {
                let live = slot.live.borrow();
                too_large.extend(live.dropped.iter().cloned());
                // A server still starting offers the tools it had last time.
                let offered = live.peer.is_some()
                    || (live.provisional && matches!(live.state, ServerState::Starting));
                offered.then(|| (name.clone(), live.tools.as_ref().clone()))
            })
            .collect();
        let (table, mut dropped) = ToolTable::build(&servers);
        dropped.extend(too_large);
        (table, dropped)
    }

    /// Waits until no server is in the middle of re-listing its tools after
    /// `notifications/tools/list_changed` (each bounded by the re-list timeout). Call it before
    /// [`Self::table`] when the table is about to be offered to the model, so a change a server
    /// announced takes effect before the next request.
    pub async fn tools_settled(&self) {
        for slot in self.slots.values() {
            slot.tools_settled().await;
        }
    }

    /// Every tool `server` lists now (after filters, before pins): what
    /// `tern mcp approve` accepts.
    pub fn listed_tools(&self, server: &str) -> Option<Vec<ToolDef>> {
        self.slots
            .get(server)
            .map(|s| s.live.borrow().listed.as_ref().clone())
    }

    /// The prompts every ready server offers: (server, name, description, argument names
    /// with `true` when required). Servers without prompts are skipped.
    pub async fn prompts(&self) -> Vec<PromptInfo> {
        let mut out = Vec::new();
        for (name, peer) in self.peers_with(|c| c.prompts.is_some()) {
            let Ok(Ok(prompts)) = tokio::time::timeout(LIST_TIMEOUT, peer.list_all_prompts()).await
            else {
                continue;
            };
            for p in prompts {
                out.push(PromptInfo {
                    server: name.clone(),
                    name: p.name.clone(),
                    description: p.description.clone().unwrap_or_default(),
                    arguments: p
                        .arguments
                        .unwrap_or_default()
                        .into_iter()
                        .map(|a| (a.name, a.required.unwrap_or(false)))
                        .collect(),
                });
            }
        }
        out
    }

    /// The ready servers whose declared capabilities pass `has`, in server order, with their
    /// peers: what listing prompts or resources asks of every server.
    pub(crate) fn peers_with(
        &self,
        has: impl Fn(&rmcp::model::ServerCapabilities) -> bool,
    ) -> Vec<(String, Peer<RoleClient>)> {
        self.slots
            .iter()
            .filter_map(|(name, slot)| {
                let peer = slot.live.borrow().peer.clone()?;
                let supports = peer.peer_info().is_some_and(|i| has(&i.capabilities));
                supports.then(|| (name.clone(), peer))
            })
            .collect()
    }

    /// Expands a server's prompt into text (its messages' text, in order).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, CallError> {
        let slot = self
            .slots
            .get(server)
            .ok_or_else(|| CallError::UnknownServer(server.to_string()))?;
        let peer = slot
            .live
            .borrow()
            .peer
            .clone()
            .ok_or_else(|| CallError::NotReady {
                server: server.to_string(),
                state: "not ready".to_string(),
            })?;
        let mut params = rmcp::model::GetPromptRequestParams::new(prompt);
        params.arguments = Some(arguments);
        let result = tokio::time::timeout(slot.spec.request_timeout, peer.get_prompt(params))
            .await
            .map_err(|_| CallError::Timeout {
                secs: slot.spec.request_timeout.as_secs_f64(),
            })?
            .map_err(|e| self.map_error(slot, e))?;
        let mut text = String::new();
        for m in result.messages {
            if let rmcp::model::ContentBlock::Text(t) = m.content {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&t.text);
            }
        }
        Ok(text)
    }

    /// Stops every server (closing stdin, then SIGTERM, then SIGKILL of the
    /// process group) and waits for the supervisors to finish.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let tasks: Vec<_> = match self.tasks.lock() {
            Ok(mut t) => t.drain(..).collect(),
            Err(_) => Vec::new(),
        };
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
    }
}
