//! The loop's tools, through the gateway: every call is an MCP request that passes
//! resolve → validate → permission → dispatch → cap → audit.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use tern_config::{ContextSection, ServerConfig};
use tern_gateway::{CallContext, Gateway};
use tern_mcp::ToolEntry;
use tern_model::{ToolSpec, tokens::Tokenizer};
use tern_protocol::{
    Event, ToolCall, ToolResult,
    catalog::{self, SearchResult},
    todo::TodoList,
};
use tokio_util::sync::CancellationToken;

use super::{
    bus::EventBus,
    context::defer::{self, Plan, SEARCH_TOOL},
    delegated::{DelegatedUsage, ReportedUsage},
    executor::{ProposedPlan, ToolExecutor},
};

/// What deferring tools needs to know, and what the model has found so far.
pub struct Deferral {
    pub servers: BTreeMap<String, ServerConfig>,
    pub context: ContextSection,
    pub window: Option<u64>,
    pub tokenizer: Tokenizer,
    /// Where the catalog server reads the deferred tools.
    pub catalog: PathBuf,
    /// Deferred tools the model found with the search: offered from then on.
    pub active: Mutex<BTreeSet<String>>,
    /// The deferred set last written to the catalog, to write it only when it changes.
    pub written: Mutex<Vec<String>>,
}

impl Deferral {
    /// Today's plan for `entries`.
    pub fn plan(&self, entries: &[ToolEntry]) -> Plan {
        let active = self.active.lock().map(|a| a.clone()).unwrap_or_default();
        defer::plan(
            entries,
            &self.servers,
            &self.context,
            self.window,
            &active,
            |e| self.tokenizer.tool(&spec(e)),
        )
    }

    /// Writes the deferred tools for the catalog server, when they changed.
    fn publish(&self, deferred: &[ToolEntry]) {
        let names: Vec<String> = deferred.iter().map(|e| e.name.clone()).collect();
        let Ok(mut written) = self.written.lock() else {
            return;
        };
        if *written == names {
            return;
        }
        let entries: Vec<catalog::Entry> = deferred
            .iter()
            .map(|e| catalog::Entry {
                name: e.name.clone(),
                description: e.def.description.clone(),
                input_schema: e.def.input_schema.clone(),
            })
            .collect();
        // Written whole then renamed, so the server never reads half a file.
        let tmp = self.catalog.with_extension("json.tmp");
        let ok = serde_json::to_vec(&entries)
            .ok()
            .and_then(|bytes| tern_protocol::files::write(&tmp, &bytes).ok())
            .and_then(|()| std::fs::rename(&tmp, &self.catalog).ok())
            .is_some();
        if ok {
            *written = names;
        }
    }
}

fn spec(e: &ToolEntry) -> ToolSpec {
    ToolSpec {
        name: e.name.clone(),
        description: e.def.description.clone(),
        input_schema: e.def.input_schema.clone(),
    }
}

/// Compiles the tools a restricted run (an agent profile) may use: glob patterns over
/// model-facing names, which the gateway holds ([`tern_gateway::GatewaySettings::tool_allow`]).
/// A bad pattern is a usage error naming it.
pub fn tool_allow(patterns: &[String]) -> Result<globset::GlobSet, crate::error::UsageError> {
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        let glob = globset::Glob::new(p).map_err(|e| {
            crate::error::UsageError(format!("tool pattern `{p}` is not a valid glob: {e}"))
        })?;
        set.add(glob);
    }
    set.build()
        .map_err(|e| crate::error::UsageError(e.to_string()))
}

/// [`ToolExecutor`] over the [`Gateway`].
pub struct GatewayTools {
    pub gateway: Arc<Gateway>,
    pub bus: EventBus,
    pub deferral: Deferral,
    /// Send each call's W3C `traceparent` in the request's `_meta` (telemetry is on).
    pub trace_context: bool,
    /// Tokens tools reported spending for this run (`_meta["tern/usage"]`: sub-agents).
    pub delegated: Arc<DelegatedUsage>,
    /// The session's todo list as the last result carrying `_meta["tern/todo"]` left it.
    pub todo: Mutex<Option<TodoList>>,
    /// The turn's checkpoint: no tool runs before it is recorded.
    pub gate: Arc<super::checkpoints::Gate>,
    /// The plan the last successful `plan__exit` carried, until the loop takes it.
    pub plan: Mutex<Option<ProposedPlan>>,
    /// A hook's `continue: false` on a call of this step, until the loop takes it.
    pub stop: Mutex<Option<String>>,
}

impl GatewayTools {
    /// Notes the todo list a result carries; a changed one is a `todo_updated` event.
    fn observe_todo(&self, result_meta: Option<&serde_json::Value>) {
        let Some(list) = TodoList::from_result_meta(result_meta) else {
            return;
        };
        if list.changed {
            self.bus.emit(Event::TodoUpdated {
                todos: list.todos.clone(),
                counts: list.counts,
            });
        }
        if let Ok(mut todo) = self.todo.lock() {
            *todo = Some(list);
        }
    }
}

#[async_trait]
impl ToolExecutor for GatewayTools {
    async fn settle(&self) {
        self.gateway.tools_settled().await;
    }

    fn starting(&self) -> Vec<String> {
        self.gateway.starting_servers()
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let table = self.gateway.refresh_table();
        let entries: Vec<ToolEntry> = table
            .entries()
            .iter()
            .filter(|e| self.gateway.offers(e))
            .cloned()
            .collect();
        let plan = self.deferral.plan(&entries);
        self.deferral.publish(&plan.deferred);
        plan.offered.iter().map(spec).collect()
    }

    fn is_read_only(&self, name: &str) -> bool {
        // Codex's `supports_parallel_tool_calls`: the user vouches that the server's tools may
        // run side by side, which is all "read-only" means to the loop.
        self.gateway.table().get(name).is_some_and(|e| {
            e.def.annotations.read_only == Some(true)
                || self
                    .deferral
                    .servers
                    .get(&e.server)
                    .is_some_and(|s| s.parallel_tool_calls)
        })
    }

    fn todo(&self) -> Option<TodoList> {
        self.todo.lock().ok().and_then(|t| t.clone())
    }

    fn forget_todo(&self) {
        if let Ok(mut todo) = self.todo.lock() {
            *todo = None;
        }
    }

    fn plan_mode(&self) -> bool {
        self.gateway.mode() == tern_config::PermissionMode::Plan
    }

    fn take_plan(&self) -> Option<ProposedPlan> {
        self.plan.lock().ok().and_then(|mut p| p.take())
    }

    fn take_stop(&self) -> Option<String> {
        self.stop.lock().ok().and_then(|mut s| s.take())
    }

    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ToolResult {
        match self.gateway.command_of(call) {
            // A command can change any file: the state just before it is a point of its own.
            Some(command) => self.gate.before_shell(&call.id, &call.name, &command).await,
            None => self.gate.wait().await,
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<tern_mcp::Progress>();
        let bus = self.bus.clone();
        let call_id = call.id.clone();
        let redactor = self.gateway.redactor();
        let forward = tokio::spawn(async move {
            let mut last_tail = None;
            while let Some(p) = rx.recv().await {
                let Some(p) = thin_tails(&mut last_tail, p, std::time::Instant::now()) else {
                    continue;
                };
                for event in progress_events(&call_id, p, &redactor) {
                    bus.emit(event);
                }
            }
        });
        let mut meta = serde_json::Map::new();
        if self.trace_context {
            let parent = crate::telemetry::ids::traceparent(self.bus.run_id(), &call.id);
            meta.insert("traceparent".into(), parent.into());
        }
        let ctx = CallContext {
            run_id: self.bus.run_id().to_string(),
            session_id: self.bus.session_id().to_string(),
            cancel,
            progress: Some(tx),
            meta,
        };
        let outcome = self.gateway.call(call.clone(), ctx).await;
        let _ = forward.await;
        if let Some(reported) = ReportedUsage::from_result_meta(outcome.meta.result_meta.as_ref()) {
            self.delegated.add(&reported);
        }
        if !outcome.result.is_error {
            self.observe_todo(outcome.meta.result_meta.as_ref());
        }
        if let (Some(reason), Ok(mut slot)) = (outcome.meta.stop.clone(), self.stop.lock()) {
            slot.get_or_insert(reason);
        }
        if !outcome.result.is_error && self.gateway.is_plan_tool(&call.name) {
            // The plan server's declared output (`{"plan": "…"}`); the gateway let the call
            // through only in plan mode.
            let plan = outcome
                .meta
                .structured
                .as_ref()
                .and_then(|s| s.get("plan"))
                .and_then(serde_json::Value::as_str);
            if let (Some(plan), Ok(mut slot)) = (plan, self.plan.lock()) {
                *slot = Some(ProposedPlan {
                    call_id: call.id.clone(),
                    plan: plan.to_string(),
                });
            }
        }
        if call.name == SEARCH_TOOL && !outcome.result.is_error {
            // The catalog server's declared output: the tools it found become callable.
            let found = SearchResult::names_in(outcome.meta.structured.as_ref());
            if let Ok(mut active) = self.deferral.active.lock() {
                active.extend(found);
            }
        }
        outcome.result
    }
}

/// The shortest time between two `tool_output_tail` events of one call: a server sending more
/// often (tern-shell sends at most ten a second) has the extra ones dropped; each tail replaces
/// the last, so a dropped one is only a frame not drawn.
const MIN_TAIL_GAP: std::time::Duration = std::time::Duration::from_millis(50);

/// `p` without its tail when the call's last tail (at `last`) came less than [`MIN_TAIL_GAP`]
/// ago; `None` when nothing is then left to report.
fn thin_tails(
    last: &mut Option<std::time::Instant>,
    mut p: tern_mcp::Progress,
    now: std::time::Instant,
) -> Option<tern_mcp::Progress> {
    if p.tail.is_none() {
        return Some(p);
    }
    if last.is_some_and(|t| now.duration_since(t) < MIN_TAIL_GAP) {
        p.tail = None;
        return p.message.is_some().then_some(p);
    }
    *last = Some(now);
    Some(p)
}

/// The events one progress notification of call `call_id` becomes: a task's new state, the editor
/// terminal its command runs in (`_meta["tern/terminal"]`), a live tail of the output (redacted
/// here, before any subscriber sees it; a line the server cut may end inside a secret), and the
/// progress itself — unless the notification carried only a terminal or a tail.
fn progress_events(
    call_id: &str,
    p: tern_mcp::Progress,
    redactor: &tern_gateway::Redactor,
) -> Vec<Event> {
    if let Some(task) = p.task {
        return vec![Event::ToolTask {
            call_id: call_id.to_string(),
            task_id: task.task_id,
            status: task.status,
            message: task.message,
        }];
    }
    let mut events = Vec::new();
    // The editor terminal the command runs in (`tern-shell --editor-socket`), said once.
    if let Some(terminal_id) = p.terminal_id {
        events.push(Event::ToolTerminal {
            call_id: call_id.to_string(),
            terminal_id,
        });
        if p.message.is_none() && p.tail.is_none() {
            return events;
        }
    }
    let only_a_tail = p.tail.is_some() && p.message.is_none();
    if let Some(lines) = p.tail {
        let cut = tern_protocol::meta::OutputTail::CUT;
        events.push(Event::ToolOutputTail {
            call_id: call_id.to_string(),
            lines: lines.iter().map(|l| redactor.redact_cut(l, cut)).collect(),
        });
    }
    if !only_a_tail {
        events.push(Event::ToolProgress {
            call_id: call_id.to_string(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(message: Option<&str>, tail: Option<&[&str]>) -> tern_mcp::Progress {
        tern_mcp::Progress {
            progress: 1.5,
            terminal_id: None,
            total: Some(120.0),
            message: message.map(str::to_string),
            task: None,
            tail: tail.map(|t| t.iter().map(|l| l.to_string()).collect()),
        }
    }

    #[test]
    fn a_tail_becomes_its_own_redacted_event_and_a_tail_alone_is_no_progress() {
        let redactor = tern_gateway::Redactor::new([tern_gateway::Secret::new("s3cr3t-value-42")]);
        let events = progress_events(
            "c1",
            progress(None, Some(&["ok", "key=s3cr3t-value-42", "cut s3cr3t-va…"])),
            &redactor,
        );
        assert_eq!(
            events,
            vec![Event::ToolOutputTail {
                call_id: "c1".into(),
                lines: vec![
                    "ok".into(),
                    "key=[REDACTED]".into(),
                    "cut [REDACTED]…".into()
                ],
            }]
        );
        // A tick with a message (and a tail) is progress too; without a tail, only progress.
        let both = progress_events("c1", progress(Some("2 s"), Some(&["x"])), &redactor);
        assert!(matches!(
            both.as_slice(),
            [Event::ToolOutputTail { .. }, Event::ToolProgress { .. }]
        ));
        let plain = progress_events("c1", progress(Some("2 s"), None), &redactor);
        assert!(
            matches!(plain.as_slice(), [Event::ToolProgress { message: Some(m), .. }] if m == "2 s")
        );
    }

    #[test]
    fn an_editor_terminal_is_its_own_event_and_no_progress() {
        let redactor = tern_gateway::Redactor::new([]);
        let mut shown = progress(None, None);
        shown.terminal_id = Some("term-1".into());
        assert_eq!(
            progress_events("c1", shown, &redactor),
            vec![Event::ToolTerminal {
                call_id: "c1".into(),
                terminal_id: "term-1".into()
            }]
        );
    }

    #[test]
    fn a_server_flooding_tails_is_thinned_to_one_per_gap() {
        let t0 = std::time::Instant::now();
        let mut last = None;
        let tail_only = || progress(None, Some(&["x"]));
        assert!(thin_tails(&mut last, tail_only(), t0).is_some());
        let soon = t0 + MIN_TAIL_GAP / 2;
        assert!(thin_tails(&mut last, tail_only(), soon).is_none());
        // A message still goes through, without the tail.
        let kept = thin_tails(&mut last, progress(Some("1 s"), Some(&["x"])), soon);
        assert!(kept.is_some_and(|p| p.tail.is_none() && p.message.is_some()));
        assert!(thin_tails(&mut last, tail_only(), t0 + MIN_TAIL_GAP).is_some());
        // Progress without a tail is never held back.
        assert!(thin_tails(&mut last, progress(None, None), t0 + MIN_TAIL_GAP).is_some());
    }
}
