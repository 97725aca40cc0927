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
    connect::connect,
    error::StartError,
    event::EventSink,
    pins::PinStore,
    pool::{HeldTool, REPORT_TAIL, ServerState, Slot},
    spec::{PoolOptions, ServerSpec},
    table::{META_COMMAND_ARG, META_EDITS_FILES, ToolAnnotations, ToolDef},
};

/// How long a re-list after `list_changed` may take.
const RELIST_TIMEOUT: Duration = Duration::from_secs(10);
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
            server: name.clone(),
            roots: opts.roots.clone(),
            progress: slot.progress.clone(),
            tools_changed: tools_changed.clone(),
            events: events.clone(),
        };
        let result = tokio::select! {
            r = connect(&slot.spec, &opts, handler, &slot.stderr) => r,
            _ = shutdown.cancelled() => {
                slot.update(|l| l.state = ServerState::Stopped);
                return;
            }
        };
        let conn = match result {
            Ok(conn) => conn,
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

        let listed = filter(&slot.spec, &conn.tools);
        let (allowed, held) = apply_pins(&name, listed.clone(), &pins, &events);
        let tool_count = allowed.len();
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
            l.tools = Arc::new(allowed);
            l.listed = Arc::new(listed);
            l.held = held;
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

        let peer = conn.peer.clone();
        let mut stop = Some(conn.service.cancellation_token());
        let mut running = tokio::spawn(conn.service.waiting());
        loop {
            tokio::select! {
                _ = &mut running => break,
                _ = tools_changed.notified() => {
                    match tokio::time::timeout(RELIST_TIMEOUT, peer.list_all_tools()).await {
                        Ok(Ok(tools)) => {
                            let listed = filter(&slot.spec, &tools);
                            let (allowed, held) = apply_pins(&name, listed.clone(), &pins, &events);
                            let n = allowed.len();
                            slot.update(|l| {
                                l.tools = Arc::new(allowed);
                                l.listed = Arc::new(listed);
                                l.held = held;
                            });
                            events(Event::ToolsChanged { server: name.clone(), tools: n });
                        }
                        Ok(Err(e)) => tracing::warn!(server = %name, "re-list after list_changed failed: {e}"),
                        Err(_) => tracing::warn!(server = %name, "re-list after list_changed timed out"),
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
                    });
                    return;
                }
            }
        }

        // The connection ended without us asking: the server crashed or exited.
        slot.update(|l| l.peer = None);
        slot.stderr.settle(Duration::from_millis(500)).await;
        let reason = "the server exited unexpectedly".to_string();
        match schedule_restart(&slot, &opts, &events, &mut crashes, reason, &shutdown).await {
            Some(next) => attempt = next,
            None => return,
        }
    }
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

/// The configured tool filter, then conversion to our own type.
fn filter(spec: &ServerSpec, tools: &[Tool]) -> Vec<ToolDef> {
    tools
        .iter()
        .filter(|t| spec.tool_filter.allows(t.name.as_ref()))
        .map(to_def)
        .collect()
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

/// Runs the pin check, saves new pins, and reports held and new tools.
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
    for tool in &report.added {
        events(Event::ToolDropped {
            server: server.to_string(),
            tool: tool.clone(),
            reason: "new tool on an approved server (pinned now; review it with `tern tools`)"
                .to_string(),
        });
    }
    let held: Vec<HeldTool> = report
        .changed
        .into_iter()
        .map(|(tool, diff)| HeldTool { tool, diff })
        .collect();
    for h in &held {
        events(Event::ToolDropped {
            server: server.to_string(),
            tool: h.tool.clone(),
            reason: format!(
                "definition changed since it was approved; held out until `tern mcp approve {server}`\n{}",
                h.diff
            ),
        });
    }
    (report.allowed, held)
}
