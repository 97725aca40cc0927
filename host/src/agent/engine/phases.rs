//! The helpers of [`Engine::start`]'s phases: the settings of a model the caller gave, the
//! servers starting (phase 2) and the checkpoint store opening beside them.

use std::sync::Arc;

use tern_mcp::ServerPool;
use tern_model::{ModelAdapter, tokens::Tokenizer};
use tern_protocol::{Envelope, Event, now_rfc3339};

use super::EngineOptions;
use crate::{
    agent::{
        bus::{EventBus, Subscriber},
        checkpoints::{self, Checkpointer},
        context,
        inherit::ParentPolicy,
        resources::RunResources,
        run_loop::AgentSettings,
        servers::{
            PoolHooks, link_agent_servers, link_todo_servers, point_todo_at, specs, start_pool,
            todo_pointer_path, todo_state_path,
        },
    },
    error::UsageError,
    workspace::Workspace,
};

/// The settings of a model the caller gave: its name and provider, the `[model]` output budget,
/// and no endpoint or key (the engine never sends anything itself). The context window is the
/// model's to report ([`ModelAdapter::context_window`]): a replay reports the recorded one, so
/// the conversation is compacted where the recorded run compacted it.
pub(super) fn given_model_settings(
    ws: &Workspace,
    given: &dyn ModelAdapter,
) -> tern_model::ResolvedModelConfig {
    tern_model::ResolvedModelConfig {
        provider: given.provider(),
        model: given.name().to_string(),
        base_url: String::new(),
        api_key: None,
        api_key_var: None,
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
        vision: ws.config.model.vision,
    }
}

/// The checkpointer of a run: a store for the workspace when `[checkpoints]` is on (pruned by
/// age and size in the background once it is open), none for a sub-agent's run (its parent's
/// turn checkpoint covers what it does) or when the store cannot be opened (a notice says why).
pub(super) async fn open_checkpointer(
    ws: &Workspace,
    opts: &EngineOptions,
    bus: &EventBus,
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

/// Phase 2 of [`Engine::start`](super::Engine::start): the servers of `config` starting, with
/// `run_started` and the config's notices emitted first (the servers' own events follow them on
/// the bus).
pub(super) fn start_servers(
    ws: &Workspace,
    config: &tern_config::Config,
    res: &RunResources,
    opts: &EngineOptions,
    model: &dyn ModelAdapter,
    run_id: &str,
) -> anyhow::Result<Arc<ServerPool>> {
    let mut server_specs =
        specs(config, &ws.tern_exe, &ws.env, None).map_err(|e| UsageError(e.to_string()))?;
    let policy = ParentPolicy::of(&ws.cli, config.permissions.mode, &config.sandbox, &ws.cwd);
    link_agent_servers(&mut server_specs, config, run_id, &policy);
    let todo_state = todo_state_path(&ws.paths.sessions_dir(), &res.bus.session_id());
    let pointer = todo_pointer_path(&ws.paths.run_dir(run_id));
    point_todo_at(&pointer, &todo_state)
        .map_err(|e| anyhow::anyhow!("cannot write the todo pointer {}: {e}", pointer.display()))?;
    link_todo_servers(&mut server_specs, config, &pointer);
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

/// Builds an exact tokenizer's vocabulary on a spare thread once the run's first model request
/// is emitted. Building it (tens of milliseconds of CPU for o200k) while the servers start
/// competed with them for the cores and delayed the first request; after it, the build overlaps
/// the model's answer, and the budget waits for it only when a decision needs the exact count
/// (it builds it itself then: [`Tokenizer::load`] is idempotent). A run that never sends a
/// request never builds it.
pub(super) struct VocabularyAfterFirstRequest {
    tokenizer: Option<Tokenizer>,
}

impl VocabularyAfterFirstRequest {
    pub(super) fn new(tokenizer: Tokenizer) -> Self {
        Self {
            tokenizer: Some(tokenizer),
        }
    }
}

impl Subscriber for VocabularyAfterFirstRequest {
    fn on_event(&mut self, event: &Envelope) {
        if !matches!(event.event, Event::ModelRequest { .. }) {
            return;
        }
        let Some(tokenizer) = self.tokenizer.take() else {
            return;
        };
        if tokenizer.is_ready() {
            return;
        }
        // A lower priority: the request being sent and the answer being read come first.
        let _ = std::thread::Builder::new()
            .name("tern-vocabulary".into())
            .spawn(move || {
                // Linux: `who = 0` is this thread only. Failing leaves the default priority.
                let _ = rustix::process::setpriority_process(None, 10);
                tokenizer.load();
            });
    }
}

/// The context window of the run: what the user configured, else what a local server reported
/// (`reported`, asked while the servers started), else the model family's. When a server was
/// asked and could not say, a notice says so once, at the start: a silent default would govern
/// the whole session.
pub(super) fn context_window(
    resolved: &tern_model::ResolvedModelConfig,
    reported: Option<u32>,
    model: &dyn ModelAdapter,
    bus: &EventBus,
) -> Option<u64> {
    let known = tern_model::catalog::lookup(model.name());
    let window = resolved
        .context_window
        .or(reported)
        .or(known.map(|k| k.context_window))
        .map(u64::from);
    if resolved.context_window.is_none() && reported.is_none() && model.probes_window() {
        bus.emit(Event::Notice {
            message: match window {
                Some(n) => {
                    format!("context window unknown: assuming {n}; set [model] context_window")
                }
                None => "context window unknown: compacting only when the server refuses a \
                         request; set [model] context_window"
                    .to_owned(),
            },
        });
    }
    window
}

/// The agent's fixed settings: the system prompt (tern's blocks, the skills listing, the
/// caller's extra), the step and output budgets, where cut results spill, how tool calls are
/// written and the hint for a refused key.
pub(super) fn agent_settings(
    ws: &Workspace,
    opts: &EngineOptions,
    resolved: &tern_model::ResolvedModelConfig,
    run_id: &str,
    skills: Vec<String>,
) -> AgentSettings {
    let mut system = context::system_blocks(&ws.cwd, &now_rfc3339()[..10]);
    system.extend(skills);
    system.extend(opts.system_extra.clone());
    let run_dir = ws.paths.run_dir(run_id);
    AgentSettings {
        system,
        max_steps: ws.config.agent.max_steps,
        max_tokens: resolved.max_tokens,
        spill_dir: Some(run_dir.join("spill")),
        spill_readable: run_dir.starts_with(&ws.cwd),
        tool_calls: resolved.tool_calls,
        auth_hint: resolved.auth_hint(),
    }
}

/// The gate that records a checkpoint before each shell call — off in a read-only sandbox,
/// where a shell call cannot change the workspace.
pub(super) fn checkpoint_gate(
    ws: &Workspace,
    bus: &EventBus,
    redactor: &Arc<tern_gateway::Redactor>,
) -> Arc<checkpoints::Gate> {
    let shell_points = if ws.config.sandbox.mode == tern_sandbox::Mode::ReadOnly {
        checkpoints::ShellPoints::Off
    } else {
        checkpoints::ShellPoints::On
    };
    Arc::new(checkpoints::Gate::new(
        bus.clone(),
        shell_points,
        redactor.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn envelope(event: Event) -> Envelope {
        Envelope {
            run_id: "r".into(),
            session_id: "s".into(),
            seq: 0,
            ts: String::new(),
            event,
        }
    }

    /// The vocabulary is not built while the run starts, and is built once the first request
    /// is emitted. (`glm4`: no other test of this crate builds it, so its readiness is ours.)
    #[test]
    fn the_vocabulary_is_built_only_after_the_first_request() {
        let tokenizer = Tokenizer::Bpe("glm4");
        let mut loader = VocabularyAfterFirstRequest::new(tokenizer);
        loader.on_event(&envelope(Event::Notice {
            message: "servers starting".into(),
        }));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!tokenizer.is_ready(), "built before any request");
        loader.on_event(&envelope(Event::ModelRequest {
            step: 1,
            messages: 1,
            tools: 0,
            estimated_tokens: 10,
            request: serde_json::Value::Null,
        }));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !tokenizer.is_ready() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            tokenizer.is_ready(),
            "the first request did not start the build"
        );
    }
}
