//! A run, start to finish: assemble config, pool, gateway, model, context and
//! event bus; run the loop; and always write `run_finished`, on success,
//! error, `max_steps` and Ctrl-C alike.

use std::{
    collections::BTreeMap,
    io::{IsTerminal, Read},
    sync::Arc,
    time::{Duration, Instant},
};

use tern_gateway::{Approver, Gateway, GatewayEvent, GatewaySettings, Secret};
use tern_mcp::PoolEvent;
use tern_model::{Message, ModelAdapter, ModelConfig};
use tokio_util::sync::CancellationToken;

use crate::{
    agent::{Agent, AgentSettings, TurnOutcome},
    commands::Ctx,
    context,
    events::{AgentEvent, EventBus, RunStatus, Subscriber, now_rfc3339},
    render::{EventWriter, JsonlPrinter, TerminalPrinter},
    servers::{specs, start_pool},
    session,
    tools::GatewayTools,
};

/// How long the first model request waits for servers still starting; later
/// ones join the table at the next request.
const SERVER_WAIT: Duration = Duration::from_secs(5);

/// `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Streamed text for people.
    Text,
    /// Only the events, one JSON object per line.
    Jsonl,
}

/// A usage or configuration problem found before the run starts: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Model-related flags.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    pub model: Option<String>,
    pub provider: Option<tern_model::Provider>,
}

/// The model adapter for the config and flags.
pub fn model_adapter(
    ctx: &Ctx,
    flags: &ModelFlags,
) -> Result<(Arc<dyn ModelAdapter>, u32), UsageError> {
    let m = &ctx.config.model;
    let cfg = ModelConfig {
        provider: flags.provider.or(m.provider.map(|p| match p {
            tern_config::Provider::Anthropic => tern_model::Provider::Anthropic,
            tern_config::Provider::Openai => tern_model::Provider::Openai,
        })),
        name: flags.model.clone().or_else(|| m.name.clone()),
        base_url: m.base_url.clone(),
        api_key_env: m.api_key_env.clone(),
        max_tokens: m.max_tokens,
        context_window: m.context_window,
        max_retries: m.max_retries,
        ..ModelConfig::default()
    };
    let env = |k: &str| ctx.env.get(k).cloned();
    let resolved = cfg.resolve(&env).map_err(|e| UsageError(e.to_string()))?;
    let adapter =
        tern_model::adapter_from_resolved(&resolved).map_err(|e| UsageError(e.to_string()))?;
    Ok((Arc::from(adapter), resolved.max_tokens))
}

/// Everything a run is asked to do.
pub struct RunRequest {
    pub goal: String,
    pub output: OutputFormat,
    pub max_steps: Option<u32>,
    pub model: ModelFlags,
    /// Continue this session (its messages come first).
    pub session: Option<String>,
}

/// Reads the goal from the argument, else from stdin when it is not a terminal.
pub fn read_goal(arg: Option<String>) -> Result<String, UsageError> {
    let goal = match arg {
        Some(g) if g != "-" => g,
        _ if !std::io::stdin().is_terminal() => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| UsageError(format!("cannot read the goal from stdin: {e}")))?;
            s
        }
        _ => String::new(),
    };
    if goal.trim().is_empty() {
        return Err(UsageError(
            "no goal: pass it as an argument (`tern run \"fix the tests\"`) or on stdin".into(),
        ));
    }
    Ok(goal)
}

/// The engine of one run: bus, pool, gateway and agent, ready for turns.
pub struct Engine {
    pub bus: EventBus,
    pub agent: Agent,
    pub gateway: Arc<Gateway>,
    pub pool: Arc<tern_mcp::ServerPool>,
    pub transcript: Vec<Message>,
    pub session_id: String,
    pub cancel: CancellationToken,
    started: Instant,
    /// Applied to everything written to disk (events, session transcript).
    redactor: Arc<tern_gateway::Redactor>,
}

impl Engine {
    /// Assembles a run. `printer` renders the events; the events file is always written.
    pub async fn start(
        ctx: &Ctx,
        req: &RunRequest,
        printer: Box<dyn Subscriber>,
        approver: Arc<dyn Approver>,
    ) -> anyhow::Result<Engine> {
        let (model, max_tokens) = model_adapter(ctx, &req.model)?;
        let (session_id, transcript) = match &req.session {
            Some(id) => (id.clone(), session::load(&ctx.paths.sessions_dir(), id)?),
            None => (session::new_session_id(), Vec::new()),
        };
        let run_id = session::new_run_id();
        let bus = EventBus::new(&run_id, &session_id);
        let redactor = Arc::new(tern_gateway::Redactor::new(secrets(&ctx.env)));
        let writer = EventWriter::create(
            &ctx.paths.run_dir(&run_id).join("events.jsonl"),
            redactor.clone(),
        )?;
        bus.subscribe(Box::new(writer));
        bus.subscribe(printer);

        let server_specs = specs(&ctx.config, &ctx.tern_exe, &ctx.env, None)
            .map_err(|e| UsageError(e.to_string()))?;
        let server_names: Vec<String> = server_specs.iter().map(|s| s.name.clone()).collect();
        bus.emit(AgentEvent::RunStarted {
            goal: req.goal.clone(),
            model: model.name().to_string(),
            provider: model.provider().to_string(),
            servers: server_names,
            cwd: ctx.cwd.display().to_string(),
        });
        for notice in ctx.notices() {
            bus.emit(AgentEvent::Notice { message: notice });
        }
        let pool_bus = bus.clone();
        let sink: tern_mcp::EventSink = Arc::new(move |e| {
            if let Some(ev) = pool_event(e) {
                pool_bus.emit(ev);
            }
        });
        let started_pool = start_pool(
            server_specs,
            &ctx.paths,
            &ctx.cwd,
            ctx.env.clone(),
            Some(sink),
        )?;
        let pool = started_pool.pool;
        let _ = tokio::time::timeout(SERVER_WAIT, pool.wait_settled()).await;
        // One bad tool schema never breaks the run, but it is never dropped silently.
        for d in pool.table().1 {
            bus.emit(AgentEvent::Notice {
                message: format!("{}: tool `{}` left out: {}", d.server, d.tool, d.reason),
            });
        }

        let settings = GatewaySettings::from_config(
            &ctx.config,
            &ctx.paths,
            ctx.cwd.clone(),
            vec![ctx.cwd.clone()],
            ctx.env.get("HOME").map(Into::into),
            secrets(&ctx.env),
        );
        let gw_bus = bus.clone();
        let gateway = Arc::new(Gateway::new(
            pool.clone(),
            settings,
            approver,
            Arc::new(move |e| gw_bus.emit(gateway_event(e))),
        )?);
        let agent = Agent {
            model,
            tools: Arc::new(GatewayTools {
                gateway: gateway.clone(),
                bus: bus.clone(),
            }),
            bus: bus.clone(),
            settings: AgentSettings {
                system: context::system_blocks(&ctx.cwd, &now_rfc3339()[..10]),
                max_steps: req.max_steps.unwrap_or(ctx.config.agent.max_steps),
                max_tokens,
            },
        };
        Ok(Engine {
            bus,
            agent,
            gateway,
            pool,
            transcript,
            session_id,
            cancel: CancellationToken::new(),
            started: Instant::now(),
            redactor,
        })
    }

    /// A required server that failed: the run must not start.
    pub fn required_failure(&self) -> Option<String> {
        self.pool.required_failure().map(|s| {
            let reason = match &s.state {
                tern_mcp::ServerState::Failed { reason } => reason.clone(),
                _ => "failed".into(),
            };
            let mut msg = format!("required server `{}` failed: {reason}", s.name);
            for l in &s.stderr_tail {
                msg.push_str(&format!("\n  {l}"));
            }
            msg
        })
    }

    /// Runs one user input and saves the new messages to the session.
    pub async fn turn(&mut self, input: &str, ctx: &Ctx) -> TurnOutcome {
        let before = self.transcript.len();
        let cancel = self.cancel.clone();
        let outcome = self
            .agent
            .run_turn(&mut self.transcript, input, &cancel)
            .await;
        if let Err(e) = session::append(
            &ctx.paths.sessions_dir(),
            &self.session_id,
            &self.transcript[before..],
            &|line| self.redactor.redact(line),
        ) {
            self.bus.emit(AgentEvent::Error {
                message: format!("session not saved: {e}"),
            });
        }
        outcome
    }

    /// Writes `run_finished`, closes the event stream and stops the servers.
    pub async fn finish(&self, outcome: &TurnOutcome, totals: &tern_model::Usage, steps: u32) {
        self.bus.emit(AgentEvent::RunFinished {
            status: outcome.status,
            steps,
            duration_ms: self.started.elapsed().as_millis() as u64,
            input_tokens: totals.input,
            output_tokens: totals.output,
            cache_read_tokens: totals.cache_read,
            cache_creation_tokens: totals.cache_creation,
            answer: outcome.answer.clone(),
            error: outcome.error.clone(),
        });
        self.bus.close();
        self.pool.shutdown().await;
    }
}

/// API keys and other secrets in the environment, for the redactor.
fn secrets(env: &BTreeMap<String, String>) -> Vec<Secret> {
    env.iter()
        .filter(|(k, v)| {
            v.len() >= 8
                && (k.ends_with("_API_KEY")
                    || k.ends_with("_TOKEN")
                    || k.ends_with("_SECRET")
                    || k.ends_with("_PASSWORD"))
        })
        .map(|(_, v)| Secret::new(v.clone()))
        .collect()
}

fn pool_event(e: PoolEvent) -> Option<AgentEvent> {
    match e {
        PoolEvent::ServerReady {
            server,
            tools,
            startup_ms,
            ..
        } => Some(AgentEvent::ServerReady {
            server,
            tools,
            startup_ms,
        }),
        PoolEvent::ServerFailed {
            server,
            reason,
            stderr_tail,
            will_restart,
            ..
        } => Some(AgentEvent::ServerFailed {
            server,
            reason,
            stderr_tail,
            will_restart,
        }),
        PoolEvent::ToolDropped {
            server,
            tool,
            reason,
        } => Some(AgentEvent::Notice {
            message: format!("{server}: tool `{tool}` left out: {reason}"),
        }),
        PoolEvent::ServerLog {
            server,
            level,
            data,
            ..
        } => Some(AgentEvent::ServerLog {
            server,
            level,
            data,
        }),
        PoolEvent::ServerRestarting { .. } | PoolEvent::ToolsChanged { .. } => None,
    }
}

fn gateway_event(e: GatewayEvent) -> AgentEvent {
    match e {
        GatewayEvent::PermissionDecided {
            call_id,
            tool,
            decision,
            rule,
            ..
        } => AgentEvent::PermissionDecided {
            call_id,
            tool,
            decision: serde_json::to_value(decision)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            rule,
        },
        GatewayEvent::ToolCallFinished(record) => AgentEvent::Audit {
            record: serde_json::to_value(record).unwrap_or_default(),
        },
        GatewayEvent::Notice { message } => AgentEvent::Notice { message },
    }
}

/// `tern run`: one goal, headless. Returns the exit code.
pub async fn run_headless(ctx: &Ctx, req: RunRequest) -> anyhow::Result<i32> {
    let printer: Box<dyn Subscriber> = match req.output {
        OutputFormat::Jsonl => Box::new(JsonlPrinter),
        OutputFormat::Text => Box::new(TerminalPrinter::auto()),
    };
    // Headless: "ask" becomes "deny", and the result says which --allow would permit it.
    let approver: Arc<dyn Approver> = Arc::new(tern_gateway::HeadlessApprover);
    let mut engine = Engine::start(ctx, &req, printer, approver).await?;

    let cancel = engine.cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });

    let outcome = if let Some(msg) = engine.required_failure() {
        engine.bus.emit(AgentEvent::Error {
            message: msg.clone(),
        });
        TurnOutcome {
            status: RunStatus::Error,
            steps: 0,
            usage: Default::default(),
            answer: None,
            error: Some(msg),
        }
    } else {
        engine.turn(&req.goal, ctx).await
    };
    ctrl_c.abort();
    let usage = outcome.usage;
    engine.finish(&outcome, &usage, outcome.steps).await;
    Ok(outcome.status.exit_code())
}
