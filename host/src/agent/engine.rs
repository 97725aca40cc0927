//! The engine of a run: bus, pool, gateway and agent loop, assembled once and driven through a
//! small API — the REPL and `tern run` (and, later, the agent server) use nothing else.
//!
//! Every run ends with [`Engine::finish`], which writes `run_finished` on success, error,
//! `max_steps` and Ctrl-C alike.
//!
//! This file holds the assembly ([`Engine::start`], four phases); `engine/phases.rs` the phases'
//! helpers, `engine/run.rs` the run API (turns, compaction, what the run has, its end),
//! `engine/history.rs` the session's history (saving, rewind, diff) and `hook_points.rs` the
//! engine's hooks.

use std::{sync::Arc, time::Instant};

use tern_gateway::{Approver, Gateway, GatewaySettings, Redactor};
use tern_mcp::ServerPool;
use tern_model::{ModelAdapter, tokens::Tokenizer};
use tern_protocol::{Price, Usage};

use super::{
    checkpoints::{self, Checkpointer},
    context::budget::{Budget, Limits},
    context::defer::with_tool_search,
    conversation::Conversation,
    delegated::DelegatedUsage,
    gateway_tools::{Deferral, GatewayTools, tool_allow},
    model,
    resources::{Outputs, RunResources},
    run_loop::{Agent, TurnOutcome},
    servers::skills_listing,
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
    /// `/clear` keeps the session id and starts the conversation anew inside it. An ACP
    /// editor names the session by the id it was given, and ACP v1 has no way to tell it of a
    /// new one: with a fresh id its `session/load` would bring back the conversation the
    /// person cleared.
    pub clear_in_place: bool,
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
            .field("clear_in_place", &self.clear_in_place)
            .finish()
    }
}

/// One run's engine, ready for turns.
pub struct Engine {
    bus: super::bus::EventBus,
    agent: Agent,
    gateway: Arc<Gateway>,
    pool: Arc<ServerPool>,
    conv: Conversation,
    session_id: String,
    sessions_dir: std::path::PathBuf,
    /// The pointer the run's todo servers follow to the session's list (`/clear` moves it).
    todo_pointer: std::path::PathBuf,
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
    /// The session id the hooks are told (the loop's automatic `PreCompact` reads it; `/clear`
    /// changes it).
    hook_session: Arc<std::sync::Mutex<String>>,
    /// What `SessionEnd` hooks are told ended the session.
    end_reason: hook_points::EndReason,
    /// The system block `SessionStart` hooks added, replaced when `/clear` starts anew.
    session_context: Option<String>,
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
    /// [`EngineOptions::clear_in_place`].
    clear_in_place: bool,
}

#[path = "attach.rs"]
pub mod attach;
mod history;
#[path = "hook_points.rs"]
pub mod hook_points;
#[path = "mention_read.rs"]
pub mod mention_read;
#[path = "model_swap.rs"]
mod model_swap;
mod phases;
#[path = "plan_todo.rs"]
pub mod plan_todo;
mod run;

use phases::{given_model_settings, open_checkpointer, start_servers};

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
        let tokenizer = Tokenizer::for_model(resolved.provider, model.name());

        // 1. Resources.
        let res = RunResources::open(ws, &run_id, &session_id, outputs)?;
        // The model family's vocabulary (when it has a public one) is built once the first
        // request is on its way: counts are estimates until it is ready (see `context::budget`),
        // so nothing before the first request waits for it or shares the CPU with it.
        if tokenizer.is_exact() {
            res.bus
                .subscribe(Box::new(phases::VocabularyAfterFirstRequest::new(
                    tokenizer,
                )));
        }

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
        let context_window = phases::context_window(&resolved, reported, model.as_ref(), &res.bus);
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
        let hook_session = Arc::new(std::sync::Mutex::new(session_id.clone()));
        let gate = phases::checkpoint_gate(ws, &bus, &redactor);
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
                stop: Default::default(),
            }),
            bus: bus.clone(),
            settings: phases::agent_settings(ws, &opts, &resolved, &run_id, skills),
            before_compact: hooks
                .as_ref()
                .filter(|h| h.wants(tern_config::HookEvent::PreCompact, None))
                .map(|h| {
                    hook_points::auto_compact_hook(
                        h.clone(),
                        hook_session.clone(),
                        bus.clone(),
                        redactor.clone(),
                    )
                }),
        };
        let mut engine = Engine {
            bus,
            agent,
            gateway,
            pool,
            conv,
            session_id,
            sessions_dir,
            todo_pointer: super::servers::todo_pointer_path(&ws.paths.run_dir(&run_id)),
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
            hook_session,
            end_reason: hook_points::EndReason::Other,
            session_context: None,
            subagent: opts.parent_run_id.is_some(),
            clear_in_place: opts.clear_in_place,
            extension_dirs: ws.config.extension_dirs.clone(),
            skills_servers: config
                .enabled_servers()
                .filter(|s| s.builtin() == Some(tern_config::Builtin::Skills))
                .map(|s| s.name.clone())
                .collect(),
            resolved: swappable,
            configured_price: ws.config.model.price,
        };
        let source = if opts.session.is_some() {
            hook_points::StartSource::Resume
        } else {
            hook_points::StartSource::Startup
        };
        engine.session_start(source).await;
        Ok(engine)
    }
}
