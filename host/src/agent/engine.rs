//! The engine of a run: bus, pool, gateway and agent loop, assembled once and driven through a
//! small API — the REPL and `tern run` (and, later, the agent server) use nothing else.
//!
//! Every run ends with [`Engine::finish`], which writes `run_finished` on success, error,
//! `max_steps` and Ctrl-C alike.

use std::{sync::Arc, time::Instant};

use tern_gateway::{Approver, Gateway, GatewaySettings, Redactor};
use tern_mcp::{PromptInfo, ServerPool, ServerState, ServerStatus, ToolTable};
use tern_model::Message;
use tern_protocol::{Event, RunStatus, Usage, now_rfc3339};
use tokio_util::sync::CancellationToken;

use super::{
    bus::{EventBus, Subscriber},
    context,
    gateway_tools::GatewayTools,
    model,
    run_loop::{Agent, AgentSettings, TurnOutcome},
    secrets,
    servers::{specs, start_pool},
    session,
    trace_file::EventWriter,
};
use crate::{error::UsageError, workspace::Workspace};

/// How long the first model request waits for servers still starting; later ones join the
/// table at the next request.
const SERVER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a run is asked to do besides what the workspace's config says.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// What `run_started` records as the goal (`(interactive)` for the REPL).
    pub goal: String,
    /// Continue this session: its messages come first.
    pub session: Option<String>,
}

/// One run's engine, ready for turns.
pub struct Engine {
    bus: EventBus,
    agent: Agent,
    gateway: Arc<Gateway>,
    pool: Arc<ServerPool>,
    transcript: Vec<Message>,
    session_id: String,
    sessions_dir: std::path::PathBuf,
    started: Instant,
    /// Applied to everything written to disk (events, session transcript).
    redactor: Arc<Redactor>,
    usage: Usage,
    steps: u32,
}

impl Engine {
    /// Assembles a run: model adapter, events file, pool (waiting briefly for servers), gateway.
    /// `printer` renders the events; the events file is always written.
    pub async fn start(
        ws: &Workspace,
        opts: EngineOptions,
        printer: Box<dyn Subscriber>,
        approver: Arc<dyn Approver>,
    ) -> anyhow::Result<Engine> {
        let (model, resolved) = model::adapter(ws)?;
        let sessions_dir = ws.paths.sessions_dir();
        let (session_id, transcript) = match &opts.session {
            Some(id) => (id.clone(), session::load(&sessions_dir, id)?),
            None => (session::new_session_id(), Vec::new()),
        };
        let run_id = session::new_run_id();
        let bus = EventBus::new(&run_id, &session_id);
        let redactor = Arc::new(Redactor::new(secrets::from_env(&ws.env)));
        let writer = EventWriter::create(
            &ws.paths.run_dir(&run_id).join("events.jsonl"),
            redactor.clone(),
        )?;
        bus.subscribe(Box::new(writer));
        bus.subscribe(printer);

        let server_specs = specs(&ws.config, &ws.tern_exe, &ws.env, None)
            .map_err(|e| UsageError(e.to_string()))?;
        bus.emit(Event::RunStarted {
            goal: opts.goal.clone(),
            model: model.name().to_string(),
            provider: model.provider().to_string(),
            servers: server_specs.iter().map(|s| s.name.clone()).collect(),
            cwd: ws.cwd.display().to_string(),
        });
        for notice in ws.notices() {
            bus.emit(Event::Notice { message: notice });
        }
        let pool = start_pool(
            server_specs,
            &ws.config,
            &ws.paths,
            &ws.cwd,
            ws.env.clone(),
            Some(bus.sink()),
        )?
        .pool;
        let _ = tokio::time::timeout(SERVER_WAIT, pool.wait_settled()).await;

        let settings = GatewaySettings::from_config(
            &ws.config,
            &ws.paths,
            ws.cwd.clone(),
            vec![ws.cwd.clone()],
            ws.var("HOME").map(Into::into),
            secrets::from_env(&ws.env),
        );
        let gateway = Arc::new(Gateway::new(pool.clone(), settings, approver, bus.sink())?);
        let agent = Agent {
            model,
            tools: Arc::new(GatewayTools {
                gateway: gateway.clone(),
                bus: bus.clone(),
            }),
            bus: bus.clone(),
            settings: AgentSettings {
                system: context::system_blocks(&ws.cwd, &now_rfc3339()[..10]),
                max_steps: ws.config.agent.max_steps,
                max_tokens: resolved.max_tokens,
            },
        };
        Ok(Engine {
            bus,
            agent,
            gateway,
            pool,
            transcript,
            session_id,
            sessions_dir,
            started: Instant::now(),
            redactor,
            usage: Usage::default(),
            steps: 0,
        })
    }

    /// Adds a subscriber to the run's events.
    pub fn subscribe(&self, subscriber: Box<dyn Subscriber>) {
        self.bus.subscribe(subscriber);
    }

    /// Reports an error the run itself did not produce (e.g. a required server that failed).
    pub fn report_error(&self, message: String) {
        self.bus.emit(Event::Error { message });
    }

    /// A required server that failed, described with its stderr tail: the run must not start.
    pub fn required_failure(&self) -> Option<String> {
        self.pool.required_failure().map(|s| {
            let reason = match &s.state {
                ServerState::Failed { reason } => reason.clone(),
                _ => "failed".into(),
            };
            let mut msg = format!("required server `{}` failed: {reason}", s.name);
            for l in &s.stderr_tail {
                msg.push_str(&format!("\n  {l}"));
            }
            msg
        })
    }

    /// Runs one user input to its end (an answer, `max_steps`, an error or `cancel`) and saves
    /// the new messages to the session.
    pub async fn submit(&mut self, input: &str, cancel: &CancellationToken) -> TurnOutcome {
        let before = self.transcript.len();
        let outcome = self
            .agent
            .run_turn(&mut self.transcript, input, cancel)
            .await;
        self.usage.add(&outcome.usage);
        self.steps += outcome.steps;
        if let Err(e) = session::append(
            &self.sessions_dir,
            &self.session_id,
            &self.transcript[before..],
            &|line| self.redactor.redact(line),
        ) {
            self.bus.emit(Event::Error {
                message: format!("session not saved: {e}"),
            });
        }
        outcome
    }

    /// The tool table as the model sees it now.
    pub fn tools(&self) -> Arc<ToolTable> {
        self.gateway.refresh_table()
    }

    /// Every server and its state.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.pool.statuses()
    }

    /// The prompts the servers offer (`/SERVER:PROMPT` in the REPL).
    pub async fn prompts(&self) -> Vec<PromptInfo> {
        self.pool.prompts().await
    }

    /// Expands one server prompt into text to send as user input.
    pub async fn expand_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, tern_mcp::CallError> {
        self.pool.get_prompt(server, prompt, arguments).await
    }

    /// Allows calls matching `rule` for the rest of this run.
    pub fn allow(&self, rule: &str) -> Result<(), String> {
        self.gateway
            .allow_for_session(rule)
            .map_err(|e| e.to_string())
    }

    /// Starts a fresh conversation (a new session); returns its id.
    pub fn clear(&mut self) -> &str {
        self.transcript.clear();
        self.session_id = session::new_session_id();
        &self.session_id
    }

    /// The session this run appends to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Tokens used by every model call of this run so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Writes `run_finished` with `status` (and the answer or error of the last turn), closes
    /// the event stream and stops the servers.
    pub async fn finish(self, status: RunStatus, last: Option<&TurnOutcome>) {
        self.bus.emit(Event::RunFinished {
            status,
            steps: self.steps,
            duration_ms: self.started.elapsed().as_millis() as u64,
            input_tokens: self.usage.input,
            output_tokens: self.usage.output,
            cache_read_tokens: self.usage.cache_read,
            cache_creation_tokens: self.usage.cache_creation,
            answer: last.and_then(|l| l.answer.clone()),
            error: last.and_then(|l| l.error.clone()),
        });
        self.bus.close();
        self.pool.shutdown().await;
    }
}
