//! One trial: a fresh copy of the task's workspace, the agent's run in it (the configured
//! model, a recording, or the task's reference solution), the verifier, and the trial's
//! directory laid out as Harbor lays out its trials (`harbor.models.trial.paths.TrialPaths`):
//!
//! ```text
//! <trial>/agent/trajectory.json   the run as an ATIF trajectory
//! <trial>/agent/events.jsonl      tern's own events of the run
//! <trial>/agent/answer.txt        the final answer
//! <trial>/verifier/reward.txt     (or reward.json) what the verifier wrote
//! <trial>/verifier/test-stdout.txt
//! <trial>/result.json             the trial's row of the report
//! ```

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Instant,
};

use anyhow::Context as _;
use tern_config::LoadOptions;
use tern_gateway::HeadlessApprover;
use tern_protocol::{Envelope, Event, RunStatus};
use tokio_util::sync::CancellationToken;

use super::{
    report::TaskResult,
    task::{Task, Verifier},
    verify::{self, TrialFiles, Verdict},
};
use crate::{
    agent::{
        Engine, EngineOptions, Subscriber, TurnOutcome,
        replay::{Pacing, replay},
    },
    cli::RunFlags,
    commands::{replay::copy_tree, runs::load_events},
    workspace::Workspace,
};

/// Who does the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// tern with the configured model.
    Live,
    /// tern, its model turns from the task's recording.
    Replay,
    /// The task's `solution/solve.sh` (Harbor's oracle agent): checks the task, not tern.
    Oracle,
}

/// One trial to run.
pub struct Trial<'a> {
    pub task: &'a Task,
    pub load: LoadOptions,
    pub flags: &'a RunFlags,
    pub config: &'a str,
    pub repeat: u32,
    pub agent: Agent,
    /// The trial's directory (kept).
    pub dir: PathBuf,
    /// Its scratch directory (the workspace copy; removed with the eval's scratch).
    pub scratch: PathBuf,
    /// Also write `agent/model_patch.diff` (for `--export swebench`).
    pub patch: bool,
}

/// What a task's run did, counted from its events.
#[derive(Debug, Default, Clone)]
struct Tally {
    run_id: Option<String>,
    tool_calls: usize,
    tool_errors: usize,
    finished: Option<Event>,
}

struct Counter(Arc<Mutex<Tally>>);

impl Subscriber for Counter {
    fn on_event(&mut self, e: &Envelope) {
        let Ok(mut t) = self.0.lock() else {
            return;
        };
        match &e.event {
            Event::RunStarted { .. } => t.run_id = Some(e.run_id.clone()),
            Event::ToolCallFinished { is_error, .. } => {
                t.tool_calls += 1;
                t.tool_errors += usize::from(*is_error);
            }
            Event::RunFinished { .. } => t.finished = Some(e.event.clone()),
            _ => {}
        }
    }
}

/// How the agent's part ended.
struct AgentRun {
    outcome: TurnOutcome,
    identical: Option<bool>,
    timed_out: bool,
    tally: Tally,
    /// The run's events file, when tern ran.
    events: Option<PathBuf>,
    /// Where sub-agents' runs are.
    runs_dir: Option<PathBuf>,
}

impl Trial<'_> {
    fn result(&self, error: String) -> TaskResult {
        TaskResult {
            config: self.config.to_string(),
            repeat: self.repeat,
            trial_dir: Some(self.dir.display().to_string()),
            ..TaskResult::failed(&self.task.name, &self.task.kind, error)
        }
    }

    /// A trial that does not run here (what it needs is missing), with why.
    pub fn skipped(&self, why: String) -> TaskResult {
        TaskResult {
            status: "skipped".into(),
            ..self.result(why)
        }
    }

    /// Runs the trial; an error is a trial that could not run.
    pub async fn run(&self) -> TaskResult {
        let started = Instant::now();
        let mut result = match self.run_inner().await {
            Ok(r) => r,
            Err(e) => self.result(format!("{e:#}")),
        };
        result.duration_ms = started.elapsed().as_millis() as u64;
        if let Ok(text) = serde_json::to_string_pretty(&result) {
            let _ = std::fs::write(self.dir.join("result.json"), text + "\n");
        }
        result
    }

    async fn run_inner(&self) -> anyhow::Result<TaskResult> {
        let task = self.task;
        let agent_dir = self.dir.join("agent");
        let verifier_dir = self.dir.join("verifier");
        let workspace = self.scratch.join("workspace");
        for d in [&agent_dir, &verifier_dir, &workspace] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        copy_tree(&task.project, &workspace)?;
        for name in &task.exclude {
            let p = workspace.join(name);
            if p.is_file() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
        let files = TrialFiles {
            workspace: &workspace,
            agent: &agent_dir,
            verifier: &verifier_dir,
            scratch: &self.scratch,
        };
        let agent_started = Instant::now();
        let run = match self.agent {
            Agent::Oracle => self.oracle(&files).await?,
            Agent::Live | Agent::Replay => self.tern(&workspace).await?,
        };
        let agent_ms = agent_started.elapsed().as_millis() as u64;
        std::fs::write(
            agent_dir.join("answer.txt"),
            run.outcome.answer.as_deref().unwrap_or(""),
        )
        .with_context(|| format!("cannot write into {}", agent_dir.display()))?;
        if let Some(events) = &run.events {
            let _ = std::fs::copy(events, agent_dir.join("events.jsonl"));
            let recorded = load_events(events)?;
            let runs_dir = run.runs_dir.clone().unwrap_or_default();
            let trajectory = crate::atif::from_run(&runs_dir, &recorded);
            std::fs::write(
                agent_dir.join("trajectory.json"),
                serde_json::to_string_pretty(&trajectory)? + "\n",
            )
            .context("cannot write the trajectory")?;
        }
        let verdict: Verdict = match &task.verifier {
            Verifier::Check { command, timeout } => verify::check(command, *timeout, &files).await,
            Verifier::Harbor(h) => verify::harbor(h, &files).await,
        };
        if self.patch {
            let patch = super::export::workspace_diff(&task.project, &workspace, &task.exclude)?;
            std::fs::write(agent_dir.join("model_patch.diff"), patch)
                .context("cannot write the patch")?;
        }
        let status = if run.timed_out {
            "timeout".to_string()
        } else {
            run.outcome.status.as_str().to_string()
        };
        let run_error = if run.timed_out {
            Some(format!(
                "the run did not finish in {} s",
                task.timeout.as_secs()
            ))
        } else {
            run.outcome.error.clone()
        };
        let mut result = TaskResult {
            passed: verdict.passed,
            status,
            check_exit: verdict.exit,
            rewards: verdict.rewards,
            steps: run.outcome.steps,
            tool_calls: run.tally.tool_calls,
            tool_errors: run.tally.tool_errors,
            agent_ms,
            run_id: run.tally.run_id.clone(),
            replay_identical: run.identical,
            error: if verdict.passed {
                None
            } else {
                run_error.or(verdict.error)
            },
            ..self.result(String::new())
        };
        if let Some(Event::RunFinished {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_creation_tokens,
            cost_usd,
            ..
        }) = run.tally.finished
        {
            result.input_tokens = input_tokens;
            result.output_tokens = output_tokens;
            result.cache_read_tokens = cache_read_tokens;
            result.cache_creation_tokens = cache_creation_tokens;
            result.cost_usd = cost_usd;
        }
        Ok(result)
    }

    /// tern does the task in `workspace`, live or from the recording.
    async fn tern(&self, workspace: &Path) -> anyhow::Result<AgentRun> {
        let task = self.task;
        let mut tws = Workspace::load(Some(workspace), &task.load_options(&self.load))?;
        let _ = self.flags.apply(&mut tws.config);
        if let Some(n) = task.max_steps {
            tws.config.agent.max_steps = n;
        }
        let tally = Arc::new(Mutex::new(Tally::default()));
        let counter = Box::new(Counter(tally.clone()));
        let cancel = CancellationToken::new();
        let timer = {
            let cancel = cancel.clone();
            let timeout = task.timeout;
            tokio::spawn(async move {
                tokio::time::sleep(timeout).await;
                cancel.cancel();
            })
        };
        let (outcome, identical) = if self.agent == Agent::Replay {
            let events = load_events(&task.recording).with_context(|| {
                format!(
                    "task {}: no recording to replay (record one with a live eval or `tern run`)",
                    task.name
                )
            })?;
            let recorded_goal = events.iter().find_map(|e| match &e.event {
                Event::RunStarted { goal, .. } => Some(goal.clone()),
                _ => None,
            });
            if recorded_goal.as_deref() != Some(task.goal.as_str()) {
                anyhow::bail!(
                    "{} records another goal than the task's: re-record it",
                    task.recording.display()
                );
            }
            let r = replay(&tws, &events, Pacing::Instant, counter, Vec::new(), &cancel).await?;
            (r.outcome, Some(r.identical))
        } else {
            let options = EngineOptions {
                goal: task.goal.clone(),
                ..EngineOptions::default()
            };
            let mut engine = Engine::start(
                &tws,
                options,
                crate::agent::Outputs::for_workspace(&tws, counter)?,
                Arc::new(HeadlessApprover),
            )
            .await?;
            let outcome = match engine.required_failure() {
                Some(message) => {
                    engine.report_error(message.clone());
                    TurnOutcome::failed(message)
                }
                None => engine.submit(&task.goal, &cancel).await,
            };
            engine.finish(outcome.status, Some(&outcome)).await;
            (outcome, None)
        };
        let timed_out = timer.is_finished() && outcome.status == RunStatus::Cancelled;
        timer.abort();
        let tally = tally.lock().map(|t| t.clone()).unwrap_or_default();
        let events = tally
            .run_id
            .as_ref()
            .map(|id| tws.paths.run_dir(id).join("events.jsonl"));
        Ok(AgentRun {
            outcome,
            identical,
            timed_out,
            tally,
            events,
            runs_dir: Some(tws.paths.runs_dir()),
        })
    }

    /// Harbor's oracle agent: `solution/` copied to `/solution`, `solve.sh` run in the
    /// workspace, its output in `agent/oracle.txt`.
    async fn oracle(&self, files: &TrialFiles<'_>) -> anyhow::Result<AgentRun> {
        let task = self.task;
        let Verifier::Harbor(h) = &task.verifier else {
            anyhow::bail!("--oracle needs a Harbor task with solution/solve.sh");
        };
        let Some(solution) = &h.solution else {
            anyhow::bail!("the task has no solution/solve.sh to run with --oracle");
        };
        let copy = self.scratch.join("solution");
        std::fs::create_dir_all(&copy)?;
        copy_tree(solution, &copy)?;
        let layout = verify::layout(h, files, vec![("/solution".into(), copy)])?;
        let mut cmd = layout.command(
            "chmod +x /solution/solve.sh 2>/dev/null; (/solution/solve.sh) > /logs/agent/oracle.txt 2>&1",
        )?;
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        let (status, error, timed_out) =
            match tokio::time::timeout(task.timeout, cmd.output()).await {
                Ok(Ok(o)) if o.status.success() => (RunStatus::Success, None, false),
                Ok(Ok(o)) => (
                    RunStatus::Error,
                    Some(format!(
                        "solve.sh exited {}: {}",
                        o.status
                            .code()
                            .map_or("by a signal".into(), |c| c.to_string()),
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                    false,
                ),
                Ok(Err(e)) => (
                    RunStatus::Error,
                    Some(format!("cannot run solve.sh: {e}")),
                    false,
                ),
                Err(_) => (RunStatus::Cancelled, None, true),
            };
        let mut outcome = TurnOutcome::failed(error.clone().unwrap_or_default());
        outcome.status = status;
        outcome.error = error;
        outcome.answer = None;
        Ok(AgentRun {
            outcome,
            identical: None,
            timed_out,
            tally: Tally::default(),
            events: None,
            runs_dir: None,
        })
    }
}
