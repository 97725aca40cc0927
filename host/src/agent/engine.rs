//! The engine of a run: bus, pool, gateway and agent loop, assembled once and driven through a
//! small API — the REPL and `tern run` (and, later, the agent server) use nothing else.
//!
//! Every run ends with [`Engine::finish`], which writes `run_finished` on success, error,
//! `max_steps` and Ctrl-C alike.

use std::{sync::Arc, time::Instant};

use tern_gateway::{Approver, Gateway, GatewaySettings, Redactor};
use tern_mcp::{PromptInfo, ServerPool, ServerState, ServerStatus, ToolTable};
use tern_model::{ModelAdapter, tokens::Tokenizer};
use tern_protocol::{Event, Price, RunStatus, Usage, now_rfc3339};
use tokio_util::sync::CancellationToken;

use super::{
    bus::{EventBus, Subscriber},
    checkpoints::{self, Checkpointer, Rewind, RewindError, Rewound, TurnInfo},
    context::defer::with_tool_search,
    context::{
        self,
        budget::{Breakdown, Budget, Limits},
    },
    conversation::{Ask, Conversation, Reason},
    delegated::{Delegated, DelegatedUsage},
    gateway_tools::{Deferral, GatewayTools, tool_allow},
    model,
    resources::{Outputs, RunResources},
    run_loop::{Agent, AgentSettings, TurnOutcome},
    servers::{
        PoolHooks, link_agent_servers, link_todo_servers, skills_listing, specs, start_pool,
        todo_state_path,
    },
    session,
};
use crate::{error::UsageError, workspace::Workspace};

/// What a run is asked to do besides what the workspace's config says.
#[derive(Clone, Default)]
pub struct EngineOptions {
    /// What `run_started` records as the goal (`(interactive)` for the REPL).
    pub goal: String,
    /// Continue this session: its messages come first.
    pub session: Option<String>,
    /// Talk to this model instead of the one `[model]` configures (a replay of recorded turns).
    pub model: Option<Arc<dyn ModelAdapter>>,
    /// The run that started this one (a sub-agent's run), recorded in `run_started`.
    pub parent_run_id: Option<String>,
    /// Text appended to the system prompt (an agent profile's instructions).
    pub system_extra: Option<String>,
    /// When set, only tools matching one of these patterns (`server__tool`, `*` globs) are
    /// offered to the model or may be called.
    pub tool_allow: Option<Vec<String>>,
    /// How long to wait for servers that are not `required` before the first request (the
    /// REPL: none; `tern run`: `[agent] startup_grace_sec` when `None`). Later ones join the
    /// table as they come up.
    pub server_grace: Option<std::time::Duration>,
    /// Who answers a server's request for input (the REPL asks the person); `None`: the
    /// `--accept-elicitation-defaults` policy.
    pub elicitor: Option<Arc<dyn tern_mcp::Elicitor>>,
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("goal", &self.goal)
            .field("session", &self.session)
            .field("model", &self.model.as_ref().map(|m| m.name().to_string()))
            .field("parent_run_id", &self.parent_run_id)
            .field("system_extra", &self.system_extra)
            .field("tool_allow", &self.tool_allow)
            .field("server_grace", &self.server_grace)
            .field("elicitor", &self.elicitor.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The settings of a model the caller gave: its name and provider, the `[model]` output budget,
/// and no endpoint or key (the engine never sends anything itself). The context window is the
/// model's to report ([`ModelAdapter::context_window`]): a replay reports the recorded one, so
/// the conversation is compacted where the recorded run compacted it.
fn given_model_settings(
    ws: &Workspace,
    given: &dyn ModelAdapter,
) -> tern_model::ResolvedModelConfig {
    tern_model::ResolvedModelConfig {
        provider: given.provider(),
        model: given.name().to_string(),
        base_url: String::new(),
        api_key: None,
        max_tokens: ws
            .config
            .model
            .max_tokens
            .unwrap_or(tern_model::config::DEFAULT_MAX_TOKENS),
        context_window: None,
        retry: tern_model::RetryPolicy::default(),
        idle_timeout: tern_model::config::DEFAULT_IDLE_TIMEOUT,
        wire_api: tern_model::WireApi::Chat,
        server: None,
        sampling: tern_model::Sampling::default(),
        tool_calls: ws
            .config
            .model
            .tool_calls
            .unwrap_or(tern_model::ToolCallMode::Native),
    }
}

/// One run's engine, ready for turns.
pub struct Engine {
    bus: EventBus,
    agent: Agent,
    gateway: Arc<Gateway>,
    pool: Arc<ServerPool>,
    conv: Conversation,
    session_id: String,
    sessions_dir: std::path::PathBuf,
    /// The directory the sessions of this run belong to (`--continue` looks for them there).
    workspace: std::path::PathBuf,
    started: Instant,
    /// Applied to everything written to disk (events, session transcript).
    redactor: Arc<Redactor>,
    usage: Usage,
    steps: u32,
    /// `[model.price]`, else the catalog's.
    price: Option<Price>,
    /// What sub-agents (tools reporting `tern/usage`) spent for this run.
    delegated: Arc<DelegatedUsage>,
    /// Records the workspace before each turn (`[checkpoints]`).
    checkpointer: Arc<Checkpointer>,
    /// The current turn's checkpoint, shared with the tools (which wait for it).
    gate: Arc<checkpoints::Gate>,
    tern_home: std::path::PathBuf,
    checkpoints: tern_config::CheckpointsSection,
    /// `[[hooks.EVENT]]`, when any (the engine runs the ones that are not about a tool call).
    hooks: Option<Arc<tern_gateway::hooks::Hooks>>,
    /// A sub-agent's run (its `Stop` hooks are `SubagentStop`).
    subagent: bool,
    /// Where custom commands are found (a project's only once it is trusted).
    extension_dirs: tern_config::ExtensionDirs,
    /// The built-in skills servers' names (`/skills` asks them).
    skills_servers: Vec<String>,
    /// What the adapter was built from, so `/model` can build another; `None` when the caller
    /// gave the model (a replay), which cannot be swapped.
    resolved: Option<tern_model::ResolvedModelConfig>,
    /// `[model.price]`: a configured price holds for every model of the run.
    configured_price: Option<Price>,
}

#[path = "hook_points.rs"]
mod hook_points;
#[path = "mention_read.rs"]
mod mention_read;
#[path = "model_swap.rs"]
mod model_swap;

impl Engine {
    /// Assembles a run in four phases, each using only what the ones before it built:
    /// resources (bus, redactor, audit log, events file, `outputs`) → pool (servers starting,
    /// waited for briefly) → gateway → agent. The events file is always written.
    pub async fn start(
        ws: &Workspace,
        opts: EngineOptions,
        outputs: Outputs,
        approver: Arc<dyn Approver>,
    ) -> anyhow::Result<Engine> {
        // A model given by the caller (a replay) needs no provider, key or endpoint.
        let (model, resolved) = match &opts.model {
            Some(given) => (given.clone(), given_model_settings(ws, given.as_ref())),
            None => model::adapter(ws)?,
        };
        let swappable = opts.model.is_none().then(|| resolved.clone());
        let sessions_dir = ws.paths.sessions_dir();
        let (session_id, transcript) = match &opts.session {
            Some(id) => (id.clone(), session::load(&sessions_dir, id)?),
            None => (session::new_session_id(), Vec::new()),
        };
        let run_id = session::new_run_id();
        let trace_context = outputs.exporter.is_some();
        // The model family's vocabulary (when it has a public one) loads in the background while
        // the servers start: the first count waits for it only if it is not ready by then.
        let tokenizer = Tokenizer::for_model(resolved.provider, model.name());
        if tokenizer.is_exact() {
            std::thread::spawn(move || tokenizer.load());
        }

        // 1. Resources.
        let res = RunResources::open(ws, &run_id, &session_id, outputs)?;

        // 2. Pool.
        let catalog = ws.paths.run_dir(&run_id).join("catalog.json");
        let config = with_tool_search(&ws.config, &catalog).map_err(UsageError)?;
        let pool = start_servers(ws, &config, &res, &opts, model.as_ref(), &run_id)?;
        // The window: what the user configured, else what a local server says it runs with
        // (asked while the servers start), else the model family's.
        let probe = async {
            match resolved.context_window {
                Some(_) => None,
                None => model.context_window().await,
            }
        };
        // The checkpoint store opens (a `git init` the first time) while the servers start.
        let (reported, _, checkpointer) = tokio::join!(
            probe,
            async {
                // Required servers are waited for, each within its startup timeout; the others
                // for the grace only: one slow server must not hold the first answer back.
                pool.wait_required().await;
                let grace = opts.server_grace.unwrap_or(ws.config.agent.startup_grace);
                let _ = tokio::time::timeout(grace, pool.wait_for_tools()).await;
            },
            open_checkpointer(ws, &opts, &res.bus)
        );
        let checkpointer = Arc::new(checkpointer);
        let skills = skills_listing(&pool, &config).await;

        // 3. Gateway, with the hooks (a project's are in the config only once it is trusted).
        let hooks = tern_gateway::hooks::Hooks::new(
            &ws.config.hooks,
            &ws.cwd,
            &sessions_dir,
            config.permissions.mode,
            &res.recorders(),
        );
        let settings = GatewaySettings {
            tool_allow: opts.tool_allow.as_deref().map(tool_allow).transpose()?,
            ..GatewaySettings::from_config(
                &config,
                &ws.paths,
                ws.cwd.clone(),
                vec![ws.cwd.clone()],
                ws.var("HOME").map(Into::into),
            )
        };
        let gateway = Arc::new(
            Gateway::new(pool.clone(), settings, approver, res.recorders())?
                .with_hooks(hooks.clone()),
        );

        // 4. Agent.
        let known = tern_model::catalog::lookup(model.name());
        let price = ws.config.model.price.or(known.and_then(|k| k.price));
        let context_window = resolved
            .context_window
            .or(reported)
            .or(known.map(|k| k.context_window))
            .map(u64::from);
        if resolved.context_window.is_none() && reported.is_none() && model.probes_window() {
            // Said once, at the start: a silent default would govern the whole session.
            res.bus.emit(Event::Notice {
                message: match context_window {
                    Some(n) => {
                        format!("context window unknown: assuming {n}; set [model] context_window")
                    }
                    None => "context window unknown: compacting only when the server refuses a \
                             request; set [model] context_window"
                        .to_owned(),
                },
            });
        }
        let budget = Budget::new(
            tokenizer,
            Limits {
                window: context_window,
                reserve: u64::from(resolved.max_tokens),
                compact_at: ws.config.context.compact_at,
                compact_to: ws.config.context.compact_to,
            },
        );
        let conv = Conversation::new(transcript, budget, ws.config.context.summarize);
        let delegated = Arc::new(DelegatedUsage::default());
        let RunResources { bus, redactor, .. } = res;
        let gate = Arc::new(checkpoints::Gate::new(bus.clone()));
        let agent = Agent {
            model,
            tools: Arc::new(GatewayTools {
                gateway: gateway.clone(),
                bus: bus.clone(),
                deferral: Deferral {
                    servers: config.mcp_servers.clone(),
                    context: config.context.clone(),
                    window: context_window,
                    tokenizer,
                    catalog,
                    active: Default::default(),
                    written: Default::default(),
                },
                trace_context,
                delegated: delegated.clone(),
                todo: Default::default(),
                gate: gate.clone(),
                plan: Default::default(),
            }),
            bus: bus.clone(),
            settings: AgentSettings {
                system: {
                    let mut blocks = context::system_blocks(&ws.cwd, &now_rfc3339()[..10]);
                    blocks.extend(skills);
                    blocks.extend(opts.system_extra.clone());
                    blocks
                },
                max_steps: ws.config.agent.max_steps,
                max_tokens: resolved.max_tokens,
                spill_dir: Some(ws.paths.run_dir(&run_id).join("spill")),
                tool_calls: resolved.tool_calls,
            },
        };
        let mut engine = Engine {
            bus,
            agent,
            gateway,
            pool,
            conv,
            session_id,
            sessions_dir,
            workspace: ws.cwd.clone(),
            started: Instant::now(),
            redactor,
            usage: Usage::default(),
            steps: 0,
            price,
            delegated,
            checkpointer,
            gate,
            tern_home: ws.paths.tern_home.clone(),
            checkpoints: ws.config.checkpoints.clone(),
            hooks,
            subagent: opts.parent_run_id.is_some(),
            extension_dirs: ws.config.extension_dirs.clone(),
            skills_servers: config
                .enabled_servers()
                .filter(|s| s.builtin() == Some(tern_config::Builtin::Skills))
                .map(|s| s.name.clone())
                .collect(),
            resolved: swappable,
            configured_price: ws.config.model.price,
        };
        engine.session_start(opts.session.is_some()).await;
        Ok(engine)
    }

    /// The run's gateway, for a driver that must reach it while a turn holds the engine: `tern
    /// acp` switches the permission mode from the editor and reads the tool table to show each
    /// call.
    pub fn gateway(&self) -> Arc<Gateway> {
        self.gateway.clone()
    }

    /// Adds a subscriber to the run's events.
    pub fn subscribe(&self, subscriber: Box<dyn Subscriber>) {
        self.bus.subscribe(subscriber);
    }

    /// This run's id (`runs/<run_id>/`).
    pub fn run_id(&self) -> &str {
        self.bus.run_id()
    }

    /// Where events from outside the engine go (a replay's comparisons with its recording).
    pub fn sink(&self) -> tern_protocol::EventSink {
        self.bus.sink()
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
        // The workspace is recorded while the first request goes out; the first tool call waits
        // for it ([`checkpoints::Gate`]). The message is redacted, like the transcript.
        self.gate
            .start(
                self.checkpointer.clone(),
                self.session_id.clone(),
                self.redactor.redact(input),
            )
            .await;
        self.bus.emit(Event::UserMessage {
            text: self.redactor.redact(input),
        });
        let before = self.conv.transcript.len();
        let delegated_before = self.delegated.total();
        let outcome = self.hooked_turn(input, cancel).await;
        self.gate.wait().await;
        self.usage.add(&outcome.usage);
        self.steps += outcome.steps;
        // Sub-agents' tokens count in the turn that delegated to them.
        let delegated = self.delegated.total().since(&delegated_before);
        let usage = delegated.add_usage(&outcome.usage);
        self.bus.emit(Event::TurnFinished {
            status: outcome.status,
            steps: outcome.steps,
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_tokens: usage.cache_read,
            cache_creation_tokens: usage.cache_creation,
            cost_usd: delegated.add_cost(self.cost(&outcome.usage)),
            context_tokens: outcome.context_tokens,
            context_window: self.conv.budget.limits().window,
        });
        self.save(before);
        let cost = delegated.add_cost(self.cost(&outcome.usage));
        if let Err(e) = session::note_turn(&self.sessions_dir, &self.session_id, cost) {
            tracing::warn!("turn not noted in the session's meta file: {e}");
        }
        outcome
    }

    /// This session's turns, with the files each changed (`/rewind`).
    pub async fn turns(&self) -> Result<Vec<TurnInfo>, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        blocking(move || checkpoints::list_turns(&home, &sessions, &session, &section)).await
    }

    /// Rewinds this session to before `turn` (`/rewind`): the files, the conversation or both.
    /// A rewound conversation is the one the next request sends.
    pub async fn rewind(&mut self, turn: u64, what: Rewind) -> Result<Rewound, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        let done =
            blocking(move || checkpoints::rewind(&home, &sessions, &session, turn, what, &section))
                .await?;
        self.adopt(&done);
        Ok(done)
    }

    /// Undoes the last rewind (`/rewind undo`).
    pub async fn undo_rewind(&mut self) -> Result<Rewound, RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        let done =
            blocking(move || checkpoints::undo(&home, &sessions, &session, &section)).await?;
        self.adopt(&done);
        Ok(done)
    }

    /// The diff of the workspace since the checkpoint before `turn` (the latest) — `/diff`.
    pub async fn diff_since(&self, turn: Option<u64>) -> Result<(u64, String), RewindError> {
        let (home, sessions, session, section) = self.rewind_args();
        blocking(move || checkpoints::diff_since(&home, &sessions, &session, turn, &section)).await
    }

    fn rewind_args(
        &self,
    ) -> (
        std::path::PathBuf,
        std::path::PathBuf,
        String,
        tern_config::CheckpointsSection,
    ) {
        (
            self.tern_home.clone(),
            self.sessions_dir.clone(),
            self.session_id.clone(),
            self.checkpoints.clone(),
        )
    }

    /// Takes a rewound conversation as the transcript (already saved to the session).
    fn adopt(&mut self, done: &Rewound) {
        if let Some(messages) = &done.conversation {
            self.conv.transcript = messages.clone();
            self.conv.budget.forget_from(0);
            self.conv.compacted = false;
        }
    }

    /// Appends what joined the transcript since `before` to the session — or, after a
    /// compaction rewrote it, the whole compacted transcript.
    fn save(&mut self, before: usize) {
        let redactor = self.redactor.clone();
        let redact = |line: &str| redactor.redact(line);
        let saved = if self.conv.compacted {
            self.conv.compacted = false;
            session::append_snapshot(
                &self.sessions_dir,
                &self.session_id,
                &self.conv.transcript,
                &redact,
            )
        } else {
            let from = before.min(self.conv.transcript.len());
            session::append(
                &self.sessions_dir,
                &self.session_id,
                &self.conv.transcript[from..],
                &redact,
            )
        };
        let saved = saved.and_then(|()| {
            session::note_workspace(&self.sessions_dir, &self.session_id, &self.workspace)
        });
        if let Err(e) = saved {
            self.bus.emit(Event::Error {
                message: format!("session not saved: {e}"),
            });
        }
    }

    /// Compacts the conversation now (`/compact [focus]`): older tool output elided and older
    /// turns summarized, with `focus` given to the summary.
    pub async fn compact(&mut self, focus: Option<&str>) -> Breakdown {
        let tools = self.agent.tools.tools();
        let mut usage = Usage::default();
        let cancel = CancellationToken::new();
        self.pre_compact(focus).await;
        self.agent
            .compact(
                &mut self.conv,
                &tools,
                Ask {
                    focus,
                    ..Ask::new(Reason::Manual)
                },
                &mut usage,
                &cancel,
            )
            .await;
        self.usage.add(&usage);
        self.save(self.conv.transcript.len());
        self.context()
    }

    /// Where the next request's tokens would go.
    pub fn context(&mut self) -> Breakdown {
        let tools = self.agent.tools.tools();
        self.conv
            .budget
            .breakdown(&self.agent.settings.system, &tools, &self.conv.transcript)
    }

    /// The model's context window and the answer's reserve, when known.
    pub fn window(&self) -> (Option<u64>, u64) {
        let limits = self.conv.budget.limits();
        (limits.window, limits.reserve)
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

    /// The resources the servers offer (`@SERVER:URI` in the REPL, `/mcp`).
    pub async fn resources(&self) -> Vec<tern_mcp::ResourceInfo> {
        self.pool.resources().await
    }

    /// [`Self::resources`] as a task of its own (it holds the pool, not the engine), so the REPL
    /// can refresh its completions while it waits for input.
    pub fn resources_later(
        &self,
    ) -> impl std::future::Future<Output = Vec<tern_mcp::ResourceInfo>> + Send + 'static {
        let pool = self.pool.clone();
        async move { pool.resources().await }
    }

    /// Reads a server's resource for the user's next message; the read is an event, and the
    /// text passes the redactor before it is attached.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<tern_mcp::ResourceText, tern_mcp::CallError> {
        let mut read = self.pool.read_resource(server, uri).await?;
        read.text = self.gateway.redactor().redact(&read.text);
        self.bus.emit(Event::ResourceAttached {
            server: server.to_string(),
            uri: uri.to_string(),
            mime_type: read.mime_type.clone(),
            chars: read.text.chars().count(),
        });
        Ok(read)
    }

    /// Allows calls matching `rule` for the rest of this run.
    pub fn allow(&self, rule: &str) -> Result<(), String> {
        self.gateway
            .allow_for_session(rule)
            .map_err(|e| e.to_string())
    }

    /// Starts a fresh conversation (a new session); returns its id.
    pub fn clear(&mut self) -> &str {
        self.conv.transcript.clear();
        self.conv.budget.forget_from(0);
        self.session_id = session::new_session_id();
        self.bus.set_session_id(&self.session_id);
        &self.session_id
    }

    /// The session's todo list as the tools last reported it (`/todo`); `None` before any.
    pub fn todo(&self) -> Option<tern_protocol::todo::TodoList> {
        self.agent.tools.todo()
    }

    /// The session this run appends to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The custom slash commands (`.tern/commands/NAME.md`, …), read now: a file added
    /// during the session is there the next time.
    pub fn custom_commands(&self) -> Vec<crate::custom_commands::CustomCommand> {
        crate::custom_commands::discover(&self.extension_dirs).0
    }

    /// `/skills`: the skills servers' own report (each skill with its source, and what was
    /// skipped and why), through the gateway like any call: `list` is a read-only tool.
    pub async fn list_skills(&self) -> String {
        let table = self.gateway.refresh_table();
        let names: Vec<String> = table
            .entries()
            .iter()
            .filter(|e| e.tool == "list" && self.skills_servers.contains(&e.server))
            .map(|e| e.name.clone())
            .collect();
        if names.is_empty() {
            return "no Agent Skills found (searched ~/.agents/skills, $TERN_HOME/skills,                     ~/.claude/skills and, in a trusted project, .agents/skills, .tern/skills,                     .claude/skills)"
                .to_string();
        }
        let mut out = Vec::new();
        for name in names {
            let call = tern_protocol::ToolCall {
                id: format!("user-skills-{}", session::random_hex(4)),
                name,
                arguments: serde_json::json!({}),
            };
            let ctx = tern_gateway::CallContext {
                run_id: self.run_id().to_string(),
                session_id: self.session_id.clone(),
                ..Default::default()
            };
            out.push(self.gateway.call(call, ctx).await.result.content);
        }
        out.join("\n")
    }

    /// Tokens used by every model call of this run so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// What sub-agents spent for this run (tool results reporting `tern/usage`); not part of
    /// [`Engine::usage`], which is this run's own model calls.
    pub fn delegated(&self) -> Delegated {
        self.delegated.total()
    }

    /// What `usage` costs with this model, in US dollars, when its price is known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.price.map(|p| p.cost(usage))
    }

    /// Writes `run_finished` with `status` (and the answer or error of the last turn), closes
    /// the event stream and stops the servers. Its tokens and cost include the sub-agents'.
    pub async fn finish(self, status: RunStatus, last: Option<&TurnOutcome>) {
        self.session_end().await;
        let delegated = self.delegated.total();
        let usage = delegated.add_usage(&self.usage);
        self.bus.emit(Event::RunFinished {
            status,
            steps: self.steps,
            duration_ms: self.started.elapsed().as_millis() as u64,
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_tokens: usage.cache_read,
            cache_creation_tokens: usage.cache_creation,
            cost_usd: delegated.add_cost(self.cost(&self.usage)),
            answer: last.and_then(|l| l.answer.clone()),
            error: last.and_then(|l| l.error.clone()),
        });
        self.bus.close();
        self.pool.shutdown().await;
    }
}

/// Runs a blocking checkpoint call on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RewindError> + Send + 'static,
) -> Result<T, RewindError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RewindError::Task(e.to_string()))?
}

/// The checkpointer of a run: a store for the workspace when `[checkpoints]` is on (pruned by
/// age and size in the background once it is open), none for a sub-agent's run (its parent's
/// turn checkpoint covers what it does) or when the store cannot be opened (a notice says why).
async fn open_checkpointer(
    ws: &Workspace,
    opts: &EngineOptions,
    bus: &super::bus::EventBus,
) -> Checkpointer {
    let section = ws.config.checkpoints.clone();
    // Recording a whole home directory (or `/`) before every turn would take minutes and copy
    // gigabytes: there, checkpoints are off and a notice says so.
    let home = ws.var("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    let too_wide = ws.cwd.parent().is_none() || home.is_some_and(|h| h == ws.cwd);
    if section.enabled && too_wide && opts.parent_run_id.is_none() {
        bus.emit(Event::Notice {
            message: format!(
                "checkpoints are off in {} (too large to record before every turn); run tern \
                 in a project directory to be able to rewind",
                ws.cwd.display()
            ),
        });
    }
    let store = if section.enabled && !too_wide && opts.parent_run_id.is_none() {
        let (home, cwd) = (ws.paths.tern_home.clone(), ws.cwd.clone());
        let section2 = section.clone();
        let opened =
            tokio::task::spawn_blocking(move || checkpoints::open_store(&home, &cwd, &section2))
                .await;
        match opened {
            Ok(Ok(store)) => {
                let pruner = store.clone();
                tokio::task::spawn_blocking(move || {
                    if let Err(e) = pruner.prune(section.max_age, section.max_bytes) {
                        tracing::warn!("checkpoints not pruned: {e}");
                    }
                });
                Some(store)
            }
            Ok(Err(e)) => {
                bus.emit(Event::Notice {
                    message: format!("checkpoints are off for this run: {e}"),
                });
                None
            }
            Err(e) => {
                tracing::warn!("checkpoint store not opened: {e}");
                None
            }
        }
    } else {
        None
    };
    Checkpointer {
        store,
        sessions_dir: ws.paths.sessions_dir(),
        workspace: ws.cwd.clone(),
    }
}

/// Phase 2 of [`Engine::start`]: the servers of `config` starting, with `run_started` and the
/// config's notices emitted first (the servers' own events follow them on the bus).
fn start_servers(
    ws: &Workspace,
    config: &tern_config::Config,
    res: &RunResources,
    opts: &EngineOptions,
    model: &dyn ModelAdapter,
    run_id: &str,
) -> anyhow::Result<Arc<ServerPool>> {
    let mut server_specs =
        specs(config, &ws.tern_exe, &ws.env, None).map_err(|e| UsageError(e.to_string()))?;
    let policy = super::inherit::ParentPolicy::of(
        &ws.cli,
        config.permissions.mode,
        &config.sandbox,
        &ws.cwd,
    );
    link_agent_servers(&mut server_specs, config, run_id, &policy);
    let todo_state = todo_state_path(&ws.paths.sessions_dir(), &res.bus.session_id());
    link_todo_servers(&mut server_specs, config, &todo_state);
    res.bus.emit(Event::RunStarted {
        goal: opts.goal.clone(),
        model: model.name().to_string(),
        provider: model.provider().as_str().to_string(),
        servers: server_specs.iter().map(|s| s.name.clone()).collect(),
        cwd: ws.cwd.display().to_string(),
        parent_run_id: opts.parent_run_id.clone(),
    });
    for notice in ws.notices() {
        res.bus.emit(Event::Notice { message: notice });
    }
    let hooks = PoolHooks {
        events: Some(res.bus.sink()),
        secrets: Some(res.secret_sink()),
        elicitor: opts.elicitor.clone(),
    };
    Ok(start_pool(
        server_specs,
        &ws.config,
        &ws.paths,
        &ws.cwd,
        ws.env.clone(),
        hooks,
    )?
    .pool)
}
