//! One task per server: start it, publish its tools, re-list on
//! `list_changed`, and restart it with backoff when it dies.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rmcp::model::Tool;
use tern_protocol::Event;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{
    client::TernClient,
    connect::{Era, connect},
    error::StartError,
    event::EventSink,
    pins::PinStore,
    slot::{HeldKind, HeldTool, Live, RELIST_TIMEOUT, REPORT_TAIL, ServerState, Slot},
    spec::{PoolOptions, ServerSpec},
    table::{DroppedTool, META_COMMAND_ARG, META_EDITS_FILES, ToolAnnotations, ToolDef},
    transport::human_bytes,
};

/// How long a re-list after `list_changed` may take.
/// Longest delay between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub(crate) async fn supervise(
    slot: Arc<Slot>,
    opts: Arc<PoolOptions>,
    pins: Arc<Mutex<PinStore>>,
    events: EventSink,
    shutdown: CancellationToken,
) {
    let name = slot.spec.name.clone();
    let mut crashes: VecDeque<Instant> = VecDeque::new();
    let mut attempt = 0usize;
    loop {
        let tools_changed = Arc::new(Notify::new());
        let handler = TernClient {
            answers: slot.answers.clone(),
            progress: slot.progress.clone(),
        };
        // `notifications/tools/list_changed`, seen by the transport as it arrives (before any
        // reply behind it is delivered): marked at once, re-listed by this task. Until the
        // re-list lands, calls to the server wait for it and `ServerPool::tools_settled` holds
        // the next model request.
        let tools_changing: Arc<dyn Fn() + Send + Sync> = {
            let slot = slot.clone();
            let notify = tools_changed.clone();
            Arc::new(move || {
                slot.update(|l| l.changing = true);
                notify.notify_one();
            })
        };
        let remembered = slot.era();
        let result = tokio::select! {
            r = connect(
                &slot.spec,
                &opts,
                handler,
                &slot.stderr,
                &slot.stdout_noise,
                remembered,
                tools_changing,
            ) => r,
            _ = shutdown.cancelled() => {
                slot.update(|l| l.state = ServerState::Stopped);
                return;
            }
        };
        let conn = match result {
            Ok(conn) => conn,
            // It does speak 2026-07-28, only slowly: connect again in that era, once.
            Err(StartError::DiscoverAnsweredLate) if remembered != Some(Era::Stateless) => {
                tracing::debug!(server = %slot.spec.name, "server/discover answered late; reconnecting in the 2026-07-28 era");
                slot.remember_era(Era::Stateless);
                continue;
            }
            Err(err) => {
                slot.stderr.settle(Duration::from_millis(300)).await;
                let reason = err.to_string();
                if attempt == 0 {
                    // A server that never came up is reported, not retried: a missing
                    // command or a bad handshake will not fix itself.
                    fail(&slot, &events, reason);
                    return;
                }
                match schedule_restart(&slot, &opts, &events, &mut crashes, reason, &shutdown).await
                {
                    Some(next) => {
                        attempt = next;
                        continue;
                    }
                    None => return,
                }
            }
        };
        slot.remember_era(conn.era);

        let admitted = admit(&slot.spec, &conn.tools, &pins, &events);
        let tool_count = admitted.allowed.len();
        // What was offered from the cache while the server started, and whether it was right.
        let remembered = {
            let live = slot.live.borrow();
            live.provisional.then(|| live.tools.clone())
        };
        let confirmed = remembered
            .as_ref()
            .is_none_or(|tools| tools.as_slice() == admitted.allowed.as_slice());
        if let Some(key) = &slot.cache_key {
            slot.cache.put(
                key.clone(),
                &conn.server_version,
                &admitted.allowed,
                conn.era,
            );
        }
        let state = ServerState::Ready {
            pid: conn.pid,
            startup_ms: conn.startup.as_millis() as u64,
            protocol_version: conn.protocol_version.clone(),
            server_name: conn.server_name.clone(),
            server_version: conn.server_version.clone(),
        };
        slot.update(|l| {
            l.state = state;
            l.peer = Some(conn.peer.clone());
            l.era = Some(conn.era);
            l.task_support = conn.task_support.clone();
            l.provisional = false;
            l.instructions = conn.instructions.clone();
            admitted.publish(l);
        });
        events(Event::ServerReady {
            server: name.clone(),
            transport: slot.spec.transport.kind().to_string(),
            pid: conn.pid,
            tools: tool_count,
            startup_ms: conn.startup.as_millis() as u64,
            protocol_version: conn.protocol_version.clone(),
            server_name: conn.server_name.clone(),
            server_version: conn.server_version.clone(),
        });
        if !confirmed {
            // The tools offered from the cache were not the server's: the table now has the
            // real ones.
            events(Event::ToolsChanged {
                server: name.clone(),
                tools: tool_count,
            });
        }

        let peer = conn.peer.clone();
        let mut stop = Some(conn.service.cancellation_token());
        let mut running = tokio::spawn(conn.service.waiting());
        loop {
            tokio::select! {
                _ = &mut running => break,
                _ = tools_changed.notified() => {
                    match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await {
                        Ok(Ok(tools)) => {
                            let admitted = admit(&slot.spec, &tools, &pins, &events);
                            let n = admitted.allowed.len();
                            if let Some(key) = &slot.cache_key {
                                let version = match &slot.live.borrow().state {
                                    ServerState::Ready { server_version, .. } => server_version.clone(),
                                    _ => String::new(),
                                };
                                slot.cache.put(key.clone(), &version, &admitted.allowed, conn.era);
                            }
                            slot.update(|l| {
                                admitted.publish(l);
                                l.changing = false;
                            });
                            events(Event::ToolsChanged { server: name.clone(), tools: n });
                        }
                        Ok(Err(e)) => relist_failed(&slot, &events, &crate::error::describe_service_error(&e)),
                        Err(_) => relist_failed(&slot, &events, "it took longer than 10 s"),
                    }
                }
                _ = shutdown.cancelled() => {
                    if let Some(stop) = stop.take() {
                        stop.cancel();
                    }
                    let _ = tokio::time::timeout(Duration::from_secs(8), &mut running).await;
                    slot.update(|l| {
                        l.state = ServerState::Stopped;
                        l.peer = None;
                        l.changing = false;
                    });
                    return;
                }
            }
        }

        // The connection ended without us asking: the server crashed or exited.
        slot.update(|l| {
            l.peer = None;
            l.changing = false;
        });
        slot.stderr.settle(Duration::from_millis(500)).await;
        let reason = "the server exited unexpectedly".to_string();
        match schedule_restart(&slot, &opts, &events, &mut crashes, reason, &shutdown).await {
            Some(next) => attempt = next,
            None => return,
        }
    }
}

/// A re-list that failed keeps the tools the server had, and says so.
fn relist_failed(slot: &Slot, events: &EventSink, why: &str) {
    slot.update(|l| l.changing = false);
    events(Event::Notice {
        message: format!(
            "server `{}` changed its tools, but listing them again failed ({why}); keeping the previous list",
            slot.spec.name
        ),
    });
}

/// Records a crash; returns the next attempt number after sleeping the backoff,
/// or `None` when the restart budget is spent (the server is marked failed) or
/// the pool is shutting down.
async fn schedule_restart(
    slot: &Slot,
    opts: &PoolOptions,
    events: &EventSink,
    crashes: &mut VecDeque<Instant>,
    reason: String,
    shutdown: &CancellationToken,
) -> Option<usize> {
    let now = Instant::now();
    crashes.push_back(now);
    while crashes
        .front()
        .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
    {
        crashes.pop_front();
    }
    let recent = crashes.len();
    if recent > opts.max_restarts_per_minute {
        let err = StartError::TooManyRestarts {
            restarts: opts.max_restarts_per_minute,
            last: reason,
        };
        fail(slot, events, err.to_string());
        return None;
    }
    let tail = slot.stderr.last(REPORT_TAIL);
    events(Event::ServerFailed {
        server: slot.spec.name.clone(),
        reason: reason.clone(),
        stderr_tail: tail,
        will_restart: true,
        required: slot.spec.required,
    });
    let factor = 1u32 << (recent.saturating_sub(1)).min(16) as u32;
    let delay = opts
        .restart_base_delay
        .saturating_mul(factor)
        .min(MAX_BACKOFF);
    slot.update(|l| {
        l.state = ServerState::Restarting { attempt: recent };
        l.restarts += 1;
        l.last_error = Some(reason);
    });
    events(Event::ServerRestarting {
        server: slot.spec.name.clone(),
        attempt: recent,
        delay_ms: delay.as_millis() as u64,
    });
    tokio::select! {
        _ = tokio::time::sleep(delay) => Some(recent),
        _ = shutdown.cancelled() => {
            slot.update(|l| l.state = ServerState::Stopped);
            None
        }
    }
}

fn fail(slot: &Slot, events: &EventSink, reason: String) {
    let tail = slot.stderr.last(REPORT_TAIL);
    slot.update(|l| {
        l.state = ServerState::Failed {
            reason: reason.clone(),
        };
        l.peer = None;
        l.provisional = false;
        l.last_error = Some(reason.clone());
    });
    events(Event::ServerFailed {
        server: slot.spec.name.clone(),
        reason,
        stderr_tail: tail,
        will_restart: false,
        required: slot.spec.required,
    });
}

/// What a server's tool list turns into: the tools offered, the ones held for approval, and
/// the ones left out for their size.
pub(crate) struct Admitted {
    pub(crate) allowed: Vec<ToolDef>,
    pub(crate) listed: Vec<ToolDef>,
    pub(crate) held: Vec<HeldTool>,
    pub(crate) dropped: Vec<DroppedTool>,
}

impl Admitted {
    fn publish(self, live: &mut Live) {
        live.tools = Arc::new(self.allowed);
        live.listed = Arc::new(self.listed);
        live.held = self.held;
        live.dropped = self.dropped;
    }
}

/// The configured filter, the size limit, then the pins — with an event for every tool kept out.
pub(crate) fn admit(
    spec: &ServerSpec,
    tools: &[Tool],
    pins: &Mutex<PinStore>,
    events: &EventSink,
) -> Admitted {
    let mut listed = Vec::new();
    let mut dropped = Vec::new();
    for tool in tools
        .iter()
        .filter(|t| spec.tool_filter.allows(t.name.as_ref()))
    {
        let def = to_def(tool);
        let bytes = serde_json::to_vec(&def).map_or(0, |v| v.len());
        if bytes > spec.max_tool_bytes {
            let reason = format!(
                "its definition is {} of JSON, over the {} limit (max_tool_bytes): it would be sent \
                 with every model request",
                human_bytes(bytes),
                human_bytes(spec.max_tool_bytes)
            );
            events(Event::ToolDropped {
                server: spec.name.clone(),
                tool: def.name.clone(),
                reason: reason.clone(),
            });
            dropped.push(DroppedTool {
                server: spec.name.clone(),
                tool: def.name,
                reason,
            });
            continue;
        }
        listed.push(def);
    }
    let (allowed, held) = apply_pins(&spec.name, listed.clone(), pins, events);
    Admitted {
        allowed,
        listed,
        held,
        dropped,
    }
}

fn to_def(t: &Tool) -> ToolDef {
    ToolDef {
        name: t.name.to_string(),
        title: t.title.clone(),
        description: t.description.as_deref().unwrap_or_default().to_string(),
        input_schema: serde_json::Value::Object(t.input_schema.as_ref().clone()),
        output_schema: t
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object(s.as_ref().clone())),
        annotations: t
            .annotations
            .as_ref()
            .map(|a| ToolAnnotations {
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            })
            .unwrap_or_default(),
        command_arg: t
            .meta
            .as_ref()
            .and_then(|m| m.get(META_COMMAND_ARG))
            .and_then(|v| v.as_str())
            .map(str::to_string),
        edits_files: t
            .meta
            .as_ref()
            .and_then(|m| m.get(META_EDITS_FILES))
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
    }
}

/// Runs the pin check, saves new pins, and reports held tools.
fn apply_pins(
    server: &str,
    tools: Vec<ToolDef>,
    pins: &Mutex<PinStore>,
    events: &EventSink,
) -> (Vec<ToolDef>, Vec<HeldTool>) {
    let Ok(mut store) = pins.lock() else {
        return (tools, Vec::new());
    };
    let report = store.check(server, tools);
    if report.dirty
        && let Err(e) = store.save()
    {
        tracing::warn!("{e}");
    }
    drop(store);
    let held: Vec<HeldTool> = report
        .added
        .into_iter()
        .map(|(tool, diff)| HeldTool {
            tool,
            diff,
            kind: HeldKind::New,
        })
        .chain(report.changed.into_iter().map(|(tool, diff)| HeldTool {
            tool,
            diff,
            kind: HeldKind::Changed,
        }))
        .collect();
    for h in &held {
        let why = match h.kind {
            HeldKind::New => "new on a server whose tools were approved",
            HeldKind::Changed => "definition changed since it was approved",
        };
        events(Event::ToolDropped {
            server: server.to_string(),
            tool: h.tool.clone(),
            reason: format!(
                "{why}; held out until `tern mcp approve {server}`\n{}",
                h.diff
            ),
        });
    }
    (report.allowed, held)
}
