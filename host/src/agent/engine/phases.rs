//! The helpers of [`Engine::start`]'s phases: the settings of a model the caller gave, the
//! servers starting (phase 2) and the checkpoint store opening beside them.

use std::sync::Arc;

use tern_mcp::ServerPool;
use tern_model::ModelAdapter;
use tern_protocol::Event;

use super::EngineOptions;
use crate::{
    agent::{
        bus::EventBus,
        checkpoints::{self, Checkpointer},
        inherit::ParentPolicy,
        resources::RunResources,
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
