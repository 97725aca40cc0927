//! From a run's events to GenAI spans and metrics.
//!
//! Span times are taken when the events arrive (the bus calls subscribers as events are
//! emitted); ids come from [`super::ids`]. Names and attributes follow the OpenTelemetry GenAI
//! and MCP semantic conventions (`gen_ai.*`, `mcp.method.name`); what they do not name is under
//! `tern.*`.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{Arc, mpsc},
    time::{Duration, SystemTime},
};

use opentelemetry::{
    InstrumentationScope, KeyValue, Value,
    trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState},
};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use serde_json::json;
use tern_gateway::Redactor;
use tern_protocol::{Envelope, Event, RunStatus};

use super::{
    Settings,
    export::{Metric, Msg, spawn},
    ids,
};
use crate::agent::Subscriber;

/// How long closing a run waits for the last export (a collector that does not answer must not
/// hold the process).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

struct Run {
    id: String,
    session: String,
    trace: TraceId,
    start: SystemTime,
    goal: String,
    model: String,
    provider: String,
    parent_run_id: Option<String>,
}

struct OpenTool {
    start: SystemTime,
    arguments: serde_json::Value,
    server: String,
    decision: Option<String>,
    rule: Option<String>,
}

/// Builds spans and metrics from the run's events and hands them to the export thread.
pub struct OtelSubscriber {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    capture: bool,
    redactor: Arc<Redactor>,
    scope: InstrumentationScope,
    run: Option<Run>,
    /// Open `chat` spans by step: (how many requests this step sent so far, start).
    requests: HashMap<u32, (u32, SystemTime)>,
    sent: HashMap<u32, u32>,
    tools: HashMap<String, OpenTool>,
}

impl OtelSubscriber {
    /// Starts the export thread.
    pub fn start(settings: Settings, redactor: Arc<Redactor>) -> Self {
        let capture = settings.capture_content;
        let (tx, thread) = spawn(settings);
        Self {
            tx: Some(tx),
            thread,
            capture,
            redactor,
            scope: InstrumentationScope::builder("tern")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            run: None,
            requests: HashMap::new(),
            sent: HashMap::new(),
            tools: HashMap::new(),
        }
    }

    fn send(&self, msg: Msg) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(msg);
        }
    }

    fn text(&self, s: &str) -> Value {
        Value::String(self.redactor.redact(s).into())
    }

    /// The attributes every GenAI span and metric of the run carries.
    fn common(&self, run: &Run, operation: &'static str) -> Vec<KeyValue> {
        vec![
            KeyValue::new("gen_ai.operation.name", operation),
            KeyValue::new("gen_ai.provider.name", run.provider.clone()),
            KeyValue::new("gen_ai.request.model", run.model.clone()),
        ]
    }

    #[allow(clippy::too_many_arguments)]
    fn span(
        &self,
        run: &Run,
        name: String,
        kind: SpanKind,
        id: SpanId,
        parent: SpanId,
        start: SystemTime,
        attributes: Vec<KeyValue>,
        status: Status,
    ) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                run.trace,
                id,
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: parent,
            parent_span_is_remote: false,
            span_kind: kind,
            name: Cow::Owned(name),
            start_time: start,
            end_time: SystemTime::now().max(start),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        }
    }

    fn on(&mut self, e: &Envelope) {
        if let Event::RunStarted {
            goal,
            model,
            provider,
            parent_run_id,
            ..
        } = &e.event
        {
            self.run = Some(Run {
                id: e.run_id.clone(),
                session: e.session_id.clone(),
                trace: ids::trace_id(&e.run_id),
                start: SystemTime::now(),
                goal: goal.clone(),
                model: model.clone(),
                provider: provider.clone(),
                parent_run_id: parent_run_id.clone(),
            });
            return;
        }
        let Some(run) = self.run.take() else {
            return;
        };
        self.with_run(&run, e);
        self.run = Some(run);
    }

    fn with_run(&mut self, run: &Run, e: &Envelope) {
        match &e.event {
            Event::ModelRequest { step, .. } => {
                let n = self.sent.entry(*step).or_insert(0);
                self.requests.insert(*step, (*n, SystemTime::now()));
                *n += 1;
            }
            Event::ModelResponse {
                step,
                stop_reason,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                request_id,
                text,
                calls,
                ..
            } => {
                let Some((n, start)) = self.requests.remove(step) else {
                    return;
                };
                let input = input_tokens + cache_read_tokens + cache_creation_tokens;
                let mut attrs = self.common(run, "chat");
                attrs.extend([
                    KeyValue::new("gen_ai.response.model", run.model.clone()),
                    KeyValue::new(
                        "gen_ai.response.finish_reasons",
                        Value::Array(
                            vec![Into::<opentelemetry::StringValue>::into(
                                stop_reason.clone(),
                            )]
                            .into(),
                        ),
                    ),
                    KeyValue::new("gen_ai.usage.input_tokens", input as i64),
                    KeyValue::new("gen_ai.usage.output_tokens", *output_tokens as i64),
                    KeyValue::new(
                        "gen_ai.usage.cache_read.input_tokens",
                        *cache_read_tokens as i64,
                    ),
                    KeyValue::new(
                        "gen_ai.usage.cache_creation.input_tokens",
                        *cache_creation_tokens as i64,
                    ),
                    KeyValue::new("gen_ai.conversation.id", run.session.clone()),
                    KeyValue::new("tern.step", i64::from(*step)),
                ]);
                if let Some(id) = request_id {
                    attrs.push(KeyValue::new("gen_ai.response.id", id.clone()));
                }
                if self.capture {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "text", "content": text}));
                    }
                    for c in calls {
                        parts.push(json!({"type": "tool_call", "id": c.id, "name": c.name,
                            "arguments": c.arguments}));
                    }
                    let out = json!([{"role": "assistant", "parts": parts,
                        "finish_reason": stop_reason}]);
                    attrs.push(KeyValue::new(
                        "gen_ai.output.messages",
                        self.text(&out.to_string()),
                    ));
                }
                let span = self.span(
                    run,
                    format!("chat {}", run.model),
                    SpanKind::Client,
                    ids::chat_span(&run.id, *step, n),
                    ids::run_span(&run.id),
                    start,
                    attrs,
                    Status::Unset,
                );
                let secs = span
                    .end_time
                    .duration_since(start)
                    .unwrap_or_default()
                    .as_secs_f64();
                self.send(Msg::Span(Box::new(span)));
                let base = self.common(run, "chat");
                for (count, kind) in [(input, "input"), (*output_tokens, "output")] {
                    let mut a = base.clone();
                    a.push(KeyValue::new("gen_ai.token.type", kind));
                    self.send(Msg::Record(Metric::Tokens { count, attrs: a }));
                }
                self.send(Msg::Record(Metric::ChatDuration { secs, attrs: base }));
            }
            Event::ToolCallStarted {
                call_id, arguments, ..
            } => {
                self.tools.insert(
                    call_id.clone(),
                    OpenTool {
                        start: SystemTime::now(),

                        arguments: arguments.clone(),
                        server: String::new(),
                        decision: None,
                        rule: None,
                    },
                );
            }
            Event::PermissionDecided {
                call_id,
                server,
                decision,
                rule,
                ..
            } => {
                if let Some(open) = self.tools.get_mut(call_id) {
                    open.server = server.clone();
                    open.decision = Some(decision.as_str().to_string());
                    open.rule = Some(rule.clone());
                }
            }
            Event::ToolCallFinished {
                call_id,
                tool,
                is_error,
                error_type,
                output,
                ..
            } => {
                let open = self.tools.remove(call_id).unwrap_or(OpenTool {
                    start: SystemTime::now(),
                    arguments: serde_json::Value::Null,
                    server: String::new(),
                    decision: None,
                    rule: None,
                });
                let mut attrs = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", tool.clone()),
                    KeyValue::new("gen_ai.tool.call.id", call_id.clone()),
                    KeyValue::new("gen_ai.tool.type", "function"),
                    KeyValue::new("mcp.method.name", "tools/call"),
                ];
                if !open.server.is_empty() {
                    attrs.push(KeyValue::new("tern.mcp.server", open.server.clone()));
                }
                if let Some(d) = &open.decision {
                    attrs.push(KeyValue::new("tern.permission.decision", d.clone()));
                }
                if let Some(r) = &open.rule {
                    attrs.push(KeyValue::new("tern.permission.rule", self.text(r)));
                }
                let error = match (is_error, error_type) {
                    (_, Some(kind)) => Some(kind.as_str().to_string()),
                    (true, None) => Some("tool_error".to_string()),
                    (false, None) => None,
                };
                if let Some(err) = &error {
                    attrs.push(KeyValue::new("error.type", err.clone()));
                }
                if self.capture {
                    attrs.push(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        self.text(&open.arguments.to_string()),
                    ));
                    attrs.push(KeyValue::new("gen_ai.tool.call.result", self.text(output)));
                }
                let status = match &error {
                    Some(err) => Status::error(err.clone()),
                    None => Status::Unset,
                };
                let span = self.span(
                    run,
                    format!("execute_tool {tool}"),
                    SpanKind::Internal,
                    ids::tool_span(&run.id, call_id),
                    ids::run_span(&run.id),
                    open.start,
                    attrs,
                    status,
                );
                let secs = span
                    .end_time
                    .duration_since(open.start)
                    .unwrap_or_default()
                    .as_secs_f64();
                self.send(Msg::Span(Box::new(span)));
                let mut a = vec![
                    KeyValue::new("mcp.method.name", "tools/call"),
                    KeyValue::new("gen_ai.tool.name", tool.clone()),
                ];
                if let Some(err) = error {
                    a.push(KeyValue::new("error.type", err));
                }
                self.send(Msg::Record(Metric::ToolDuration { secs, attrs: a }));
            }
            Event::RunFinished {
                status,
                steps,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                cost_usd,
                answer,
                error,
                ..
            } => {
                // A model request that never got its answer (the request failed).
                let open: Vec<(u32, (u32, SystemTime))> = self.requests.drain().collect();
                for (step, (n, start)) in open {
                    let mut attrs = self.common(run, "chat");
                    attrs.push(KeyValue::new("error.type", "model_error"));
                    let span = self.span(
                        run,
                        format!("chat {}", run.model),
                        SpanKind::Client,
                        ids::chat_span(&run.id, step, n),
                        ids::run_span(&run.id),
                        start,
                        attrs,
                        Status::error("the model request failed"),
                    );
                    self.send(Msg::Span(Box::new(span)));
                }
                let mut attrs = self.common(run, "invoke_agent");
                attrs.extend([
                    KeyValue::new("gen_ai.agent.name", "tern"),
                    KeyValue::new("gen_ai.agent.id", run.id.clone()),
                    KeyValue::new("gen_ai.conversation.id", run.session.clone()),
                    KeyValue::new(
                        "gen_ai.usage.input_tokens",
                        (input_tokens + cache_read_tokens + cache_creation_tokens) as i64,
                    ),
                    KeyValue::new("gen_ai.usage.output_tokens", *output_tokens as i64),
                    KeyValue::new("tern.run.status", status.as_str()),
                    KeyValue::new("tern.run.steps", i64::from(*steps)),
                ]);
                if let Some(cost) = cost_usd {
                    attrs.push(KeyValue::new("tern.cost_usd", *cost));
                }
                if let Some(parent) = &run.parent_run_id {
                    attrs.push(KeyValue::new("tern.parent_run_id", parent.clone()));
                }
                if self.capture {
                    let input = json!([{"role": "user",
                        "parts": [{"type": "text", "content": run.goal}]}]);
                    attrs.push(KeyValue::new(
                        "gen_ai.input.messages",
                        self.text(&input.to_string()),
                    ));
                    if let Some(answer) = answer {
                        let output = json!([{"role": "assistant",
                            "parts": [{"type": "text", "content": answer}]}]);
                        attrs.push(KeyValue::new(
                            "gen_ai.output.messages",
                            self.text(&output.to_string()),
                        ));
                    }
                }
                let failed = !matches!(status, RunStatus::Success);
                if failed {
                    attrs.push(KeyValue::new("error.type", status.as_str()));
                }
                let status = if failed {
                    Status::error(
                        error
                            .as_deref()
                            .map(|e| self.redactor.redact(e))
                            .unwrap_or_else(|| status.as_str().to_string()),
                    )
                } else {
                    Status::Ok
                };
                let span = self.span(
                    run,
                    "invoke_agent tern".into(),
                    SpanKind::Internal,
                    ids::run_span(&run.id),
                    SpanId::INVALID,
                    run.start,
                    attrs,
                    status,
                );
                self.send(Msg::Span(Box::new(span)));
                self.send(Msg::Flush);
            }
            _ => {}
        }
    }
}

impl Subscriber for OtelSubscriber {
    fn on_event(&mut self, event: &Envelope) {
        self.on(event);
    }

    /// Exports what is left and waits (boundedly) for the exporters to finish.
    fn close(&mut self) {
        let Some(tx) = self.tx.take() else {
            return;
        };
        let (ack, done) = mpsc::channel();
        if tx.send(Msg::Shutdown(ack)).is_ok() && done.recv_timeout(SHUTDOWN_WAIT).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        } else {
            tracing::warn!("telemetry export did not finish in time; some spans may be lost");
        }
    }
}
