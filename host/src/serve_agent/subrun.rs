//! One sub-agent run: the config for its directory shaped by its profile, the engine run
//! headless to its end, and what its events say about it.
//!
//! A sub-run is an ordinary tern run (its own `runs/<id>/events.jsonl`, session, audit lines)
//! whose `run_started` names its parent. It never waits for a person: asks become denials
//! with the hint (the headless approver), and it runs in the server's permission mode
//! (read-only unless the server was started with another `--mode`).

use std::{
    collections::BTreeSet,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use tern_config::{AgentProfile, Builtin, Config, ConfigPaths, Launch, Transport};
use tern_gateway::HeadlessApprover;
use tern_protocol::{Envelope, Event, RunStatus};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{
    Settings,
    report::{ReportStatus, RunReport},
};
use crate::{
    agent::{Engine, EngineOptions, Subscriber, TurnOutcome},
    workspace::Workspace,
};

/// What a `run` call asks for, checked.
pub struct Call {
    pub goal: String,
    /// Inside the server's roots.
    pub cwd: PathBuf,
    pub profile: Option<String>,
    pub max_steps: Option<u32>,
}

/// Runs `call` to its end. `Err` is a call that could not start a run at all (a bad profile,
/// a config that does not load); a run that started always gives a report, whatever its end.
pub async fn run(
    settings: &Settings,
    call: Call,
    cancel: &CancellationToken,
    progress: UnboundedSender<String>,
) -> Result<RunReport, String> {
    let mut ws = workspace(settings, call.cwd.clone())?;
    let profile = match &call.profile {
        Some(name) => Some(ws.config.agents.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = ws.config.agents.keys().map(String::as_str).collect();
            format!(
                "no agent profile `{name}` (profiles: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?),
        None => None,
    };
    shape(&mut ws.config, profile.as_ref(), call.max_steps, settings);

    // Stopped by the caller's cancellation, or by the watcher when the budget runs out.
    let stop = cancel.child_token();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let watch = Watch {
        seen: seen.clone(),
        progress: Some(progress),
        budget: profile
            .as_ref()
            .and_then(|p| p.token_budget)
            .or(settings.token_budget),
        stop: stop.clone(),
    };
    let options = EngineOptions {
        goal: call.goal.clone(),
        parent_run_id: settings.parent_run_id.clone(),
        system_extra: profile.as_ref().and_then(|p| p.instructions.clone()),
        tool_allow: profile.as_ref().and_then(|p| p.tools.clone()),
        ..EngineOptions::default()
    };
    let outputs = crate::agent::Outputs::for_workspace(&ws, Box::new(watch))
        .map_err(|e| format!("the sub-agent could not start: {e}"))?;
    let mut engine = Engine::start(&ws, options, outputs, Arc::new(HeadlessApprover))
        .await
        .map_err(|e| format!("the sub-agent could not start: {e:#}"))?;
    let mut outcome = match engine.required_failure() {
        Some(message) => {
            engine.report_error(message.clone());
            TurnOutcome::failed(message)
        }
        None => engine.submit(&call.goal, &stop).await,
    };
    let over_budget = lock(&seen).over_budget.clone();
    if let Some(message) = &over_budget {
        outcome.status = RunStatus::Error;
        outcome.answer = None;
        outcome.error = Some(message.clone());
    }
    engine.finish(outcome.status, Some(&outcome)).await;

    let seen = lock(&seen);
    let (Some(run_id), Some(finished)) = (&seen.run_id, &seen.finished) else {
        return Err("the sub-agent's run ended without reporting its end".into());
    };
    let Event::RunFinished {
        status,
        steps,
        duration_ms,
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_creation_tokens,
        cost_usd,
        answer,
        error,
    } = finished.clone()
    else {
        return Err("the sub-agent's run ended without reporting its end".into());
    };
    Ok(RunReport {
        run_id: run_id.clone(),
        status: ReportStatus::of(status, over_budget.is_some()),
        answer,
        error,
        profile: profile.map(|p| p.name),
        model: seen.model.clone(),
        cwd: seen.cwd.clone(),
        steps,
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_creation_tokens,
        cost_usd,
        duration_ms,
    })
}

/// The workspace of a sub-run in `cwd`: the config of that directory (user, trusted project,
/// the server's own `--config`/`-c`/rules), in the server's permission mode.
fn workspace(settings: &Settings, cwd: PathBuf) -> Result<Workspace, String> {
    let env = settings.env.clone();
    let lookup = |k: &str| env.get(k).cloned();
    let paths = ConfigPaths::resolve(&cwd, &lookup).map_err(|e| format!("config: {e}"))?;
    let config =
        Config::load(&paths, &settings.options, &lookup).map_err(|e| format!("config: {e}"))?;
    Ok(Workspace {
        cwd,
        env,
        paths,
        config,
        tern_exe: settings.tern_exe.clone(),
        cli: settings.options.clone(),
    })
}

/// Lays the profile and the call over the sub-run's config: model, step budget, the depth of
/// its own agent servers, and only the servers its tools can come from.
fn shape(
    config: &mut Config,
    profile: Option<&AgentProfile>,
    max_steps: Option<u32>,
    settings: &Settings,
) {
    if let Some(model) = profile.and_then(|p| p.model.clone()) {
        config.model.name = Some(model);
    }
    let cap = profile
        .and_then(|p| p.max_steps)
        .unwrap_or(config.agent.max_steps);
    config.agent.max_steps = max_steps.map_or(cap, |n| n.clamp(1, cap));
    for server in config.mcp_servers.values_mut() {
        if let Transport::Stdio {
            launch: Launch::Builtin(Builtin::Agent),
            args,
            ..
        } = &mut server.transport
        {
            // Last on the line, so they win over anything the config's `args` say.
            args.extend([
                "--depth".to_string(),
                (settings.depth + 1).to_string(),
                "--max-depth".to_string(),
                settings.max_depth.to_string(),
            ]);
        }
    }
    if let Some(needed) = profile
        .and_then(|p| p.tools.as_deref())
        .and_then(servers_of)
    {
        for server in config.mcp_servers.values_mut() {
            if !needed.contains(&server.name) {
                server.enabled = false;
            }
        }
    }
}

/// The servers `patterns` can match tools of, when every pattern names its server literally
/// (`fs__read_*`); `None` when one could match any server (`*`, `*__grep`).
fn servers_of(patterns: &[String]) -> Option<BTreeSet<String>> {
    patterns
        .iter()
        .map(|p| {
            let (server, _) = p.split_once("__")?;
            (!server.contains(['*', '?'])).then(|| server.to_string())
        })
        .collect()
}

/// What the sub-run's events said.
#[derive(Default)]
struct Seen {
    run_id: Option<String>,
    model: String,
    cwd: String,
    step: u32,
    tokens: u64,
    /// Set (with the message) when the token budget ran out.
    over_budget: Option<String>,
    finished: Option<Event>,
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Subscribes to the sub-run: progress for every tool call, the budget, the run's end.
struct Watch {
    seen: Arc<Mutex<Seen>>,
    /// Dropped at the run's end, so the forwarder knows nothing more comes.
    progress: Option<UnboundedSender<String>>,
    budget: Option<u64>,
    stop: CancellationToken,
}

impl Subscriber for Watch {
    fn on_event(&mut self, envelope: &Envelope) {
        let mut seen = lock(&self.seen);
        match &envelope.event {
            Event::RunStarted { model, cwd, .. } => {
                seen.run_id = Some(envelope.run_id.clone());
                seen.model = model.clone();
                seen.cwd = cwd.clone();
            }
            Event::State { step, .. } => seen.step = *step,
            Event::ToolCallStarted {
                tool, arguments, ..
            } => {
                if let Some(progress) = &self.progress {
                    let _ = progress.send(format!(
                        "step {}: {tool} {}",
                        seen.step,
                        crate::agent::summary(&arguments.to_string())
                    ));
                }
            }
            Event::ModelResponse {
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                ..
            } => {
                seen.tokens +=
                    input_tokens + output_tokens + cache_read_tokens + cache_creation_tokens;
                if let Some(budget) = self.budget
                    && seen.tokens > budget
                    && seen.over_budget.is_none()
                {
                    seen.over_budget = Some(format!(
                        "stopped after using {} tokens of its token budget of {budget}",
                        seen.tokens
                    ));
                    self.stop.cancel();
                }
            }
            Event::RunFinished { .. } => {
                seen.finished = Some(envelope.event.clone());
                self.progress = None;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use tern_config::{LoadOptions, PermissionMode};

    use super::*;

    fn config(user: &str) -> Config {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), user).unwrap();
        let paths = ConfigPaths::with_home(dir.path().to_path_buf(), dir.path());
        Config::load(&paths, &LoadOptions::default(), &|_| None).unwrap()
    }

    fn settings() -> Settings {
        Settings {
            roots: Vec::new(),
            here: PathBuf::from("/"),
            depth: 1,
            max_depth: 3,
            parent_run_id: None,
            token_budget: None,
            options: LoadOptions::default(),
            mode: PermissionMode::ReadOnly,
            env: Default::default(),
            tern_exe: PathBuf::from("/bin/tern"),
            active: tokio::sync::watch::channel(0).0,
        }
    }

    #[test]
    fn a_profile_sets_the_model_caps_the_steps_and_keeps_only_the_servers_it_needs() {
        let mut c = config(
            "[agent]\nmax_steps = 40\n[mcp_servers.agent]\nenabled = true\n\
             [mcp_servers.agent2]\nbuiltin = \"agent\"\nargs = [\"--depth\", \"0\"]\n\
             [agents.explore]\nmodel = \"small\"\n",
        );
        let explore = c.agents["explore"].clone();
        shape(&mut c, Some(&explore), Some(100), &settings());
        assert_eq!(c.model.name.as_deref(), Some("small"));
        assert_eq!(
            c.agent.max_steps, 25,
            "the profile's cap wins over the call"
        );
        let enabled: Vec<&str> = c.enabled_servers().map(|s| s.name.as_str()).collect();
        assert_eq!(enabled, ["fs"]);

        // No profile: every server; the config's steps cap the call; the agent servers of the
        // sub-run are one level deeper, whatever their args said.
        let mut c = config(
            "[agent]\nmax_steps = 40\n[mcp_servers.agent]\nenabled = true\n\
             [mcp_servers.agent2]\nbuiltin = \"agent\"\nargs = [\"--depth\", \"0\"]\n",
        );
        shape(&mut c, None, Some(7), &settings());
        assert_eq!(c.agent.max_steps, 7);
        assert_eq!(c.model.name, None);
        for name in ["agent", "agent2"] {
            let Transport::Stdio { args, .. } = &c.mcp_servers[name].transport else {
                panic!()
            };
            assert!(
                args.ends_with(&[
                    "--depth".into(),
                    "2".into(),
                    "--max-depth".into(),
                    "3".into()
                ]),
                "{args:?}"
            );
        }
        assert!(c.mcp_servers["shell"].enabled);
        let mut c = config("[agent]\nmax_steps = 40\n");
        shape(&mut c, None, Some(0), &settings());
        assert_eq!(c.agent.max_steps, 1, "at least one step");
    }

    #[test]
    fn only_servers_named_by_every_pattern_are_needed() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            servers_of(&p(&["fs__read_file", "fs__grep", "git__log*"])),
            Some(["fs".to_string(), "git".to_string()].into())
        );
        assert_eq!(servers_of(&p(&["fs__read_file", "*__grep"])), None);
        assert_eq!(servers_of(&p(&["*"])), None);
        assert_eq!(servers_of(&p(&["f?__read"])), None);
    }
}
