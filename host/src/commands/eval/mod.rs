//! `tern eval DIR`: runs a suite of tasks, each in a fresh copy of its fixture project, checks
//! each with its command, and reports pass/fail, steps, tool calls, tokens, cost and time — as a
//! table, as JSON (`--report`), and against an earlier report (`--baseline`).
//!
//! Each task runs with the configured model, or with `--replay` from the recording shipped next
//! to it (no model, no key: what CI runs). The run itself is an ordinary tern run — real
//! servers, gateway, rules, audit, `runs/<run_id>/events.jsonl` — with the task's permission
//! rules laid over the config, headless (what would be asked is denied; in a replay, answered
//! with the recorded decision).
//!
//! The check runs `sh -c CHECK` in the task's copy after the run, with `TERN_EVAL_ANSWER` (a file
//! holding the final answer) and `TERN_EVAL_EVENTS` (the run's events file) in its environment.
//!
//! Exit codes: without `--baseline`, 0 when every task passed, else 1; with it, 1 on a
//! regression (a pass that became a fail, tokens or steps up beyond the tolerance), else 0;
//! 2 for a usage error (a bad task file, a missing suite).

mod report;
mod task;

use std::{
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Instant,
};

use anyhow::Context as _;
use futures::StreamExt;
use tern_config::LoadOptions;
use tern_gateway::HeadlessApprover;
use tern_protocol::{Envelope, Event, RunStatus, now_rfc3339};
use tokio_util::sync::CancellationToken;

pub use report::{Comparison, Report, TaskResult, Tolerance, compare};
pub use task::{TASK_FILE, Task, TaskError, discover};

use super::{replay::copy_tree, runs::load_events};
use crate::{
    agent::{
        Engine, EngineOptions, Subscriber, TurnOutcome,
        replay::{Pacing, replay},
    },
    cli::RunFlags,
    error::UsageError,
    workspace::Workspace,
};

/// `tern eval`'s arguments.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    /// The suite (a directory of task directories) or one task directory.
    pub dir: PathBuf,
    /// Re-drive the shipped recordings instead of calling the model.
    pub replay: bool,
    /// Tasks run at once.
    pub jobs: usize,
    /// Write the JSON report here.
    pub report: Option<PathBuf>,
    /// Compare with this earlier report.
    pub baseline: Option<PathBuf>,
    pub tolerance: Tolerance,
    /// `--model`, `--provider`, `--max-steps`, `--sandbox` for every task (a task's own
    /// `max_steps` wins).
    pub flags: RunFlags,
}

/// Runs `tern eval` and returns the exit code.
pub async fn run(
    ws: &Workspace,
    load: &LoadOptions,
    args: EvalArgs,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let suite = ws.cwd.join(&args.dir);
    let tasks = discover(&suite).map_err(|e| UsageError(e.to_string()))?;
    let baseline = match &args.baseline {
        Some(path) => {
            let path = ws.cwd.join(path);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
            let report: Report = serde_json::from_str(&text).map_err(|e| {
                UsageError(format!("{} is not a tern eval report: {e}", path.display()))
            })?;
            Some(report)
        }
        None => None,
    };
    let mode = if args.replay { "replay" } else { "live" };
    let jobs = args.jobs.max(1);
    writeln!(
        out,
        "eval {}: {} task(s), {mode}, {jobs} at a time",
        args.dir.display(),
        tasks.len()
    )?;
    let scratch = tempfile::Builder::new()
        .prefix("tern-eval-")
        .tempdir()
        .context("cannot create a scratch directory")?;
    let started = now_rfc3339();
    let (flags, replaying) = (&args.flags, args.replay);
    let mut runs = futures::stream::iter(tasks.iter().map(|task| {
        let dir = scratch.path().join(&task.name);
        async move {
            run_task(load, flags, task, &dir, replaying)
                .await
                .unwrap_or_else(|e| TaskResult::failed(&task.name, &task.kind, format!("{e:#}")))
        }
    }))
    .buffered(jobs);
    let mut results = Vec::new();
    while let Some(result) = runs.next().await {
        writeln!(
            out,
            "  {} {} ({} steps, {:.1} s)",
            if result.passed { "✓" } else { "✗" },
            result.name,
            result.steps,
            result.duration_ms as f64 / 1000.0
        )?;
        results.push(result);
    }
    let report = Report::new(args.dir.display().to_string(), mode, started, results);
    writeln!(out, "\n{}", report.table())?;
    if let Some(path) = &args.report {
        let path = ws.cwd.join(path);
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("cannot write the report {}", path.display()))?;
        writeln!(out, "report: {}", path.display())?;
    }
    let all_passed = report.totals.passed == report.totals.tasks;
    let Some(baseline) = baseline else {
        return Ok(if all_passed { 0 } else { 1 });
    };
    let c = compare(&report, &baseline, args.tolerance);
    for note in &c.notes {
        writeln!(out, "note: {note}")?;
    }
    if c.regressions.is_empty() {
        writeln!(out, "no regression against the baseline")?;
        return Ok(0);
    }
    writeln!(
        out,
        "{} regression(s) against the baseline:",
        c.regressions.len()
    )?;
    for r in &c.regressions {
        writeln!(out, "  {r}")?;
    }
    Ok(1)
}

/// What a task's run did, counted from its events.
#[derive(Debug, Default)]
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

/// Runs one task in `dir` (created): the copy, the run, the check.
async fn run_task(
    load: &LoadOptions,
    flags: &RunFlags,
    task: &Task,
    dir: &Path,
    replaying: bool,
) -> anyhow::Result<TaskResult> {
    let started = Instant::now();
    let project = dir.join("project");
    std::fs::create_dir_all(&project)
        .with_context(|| format!("cannot create {}", project.display()))?;
    copy_tree(&task.project, &project)?;
    let mut tws = Workspace::load(Some(&project), &task.load_options(load))?;
    flags.apply(&mut tws.config);
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
    let (outcome, identical) = if replaying {
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

    let tally = tally
        .lock()
        .map(|t| Tally {
            run_id: t.run_id.clone(),
            tool_calls: t.tool_calls,
            tool_errors: t.tool_errors,
            finished: t.finished.clone(),
        })
        .unwrap_or_default();
    let answer_file = dir.join("answer.txt");
    std::fs::write(&answer_file, outcome.answer.as_deref().unwrap_or(""))
        .with_context(|| format!("cannot write {}", answer_file.display()))?;
    let events_file = tally
        .run_id
        .as_ref()
        .map(|id| tws.paths.run_dir(id).join("events.jsonl"))
        .unwrap_or_default();
    let check = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&task.check)
        .current_dir(&project)
        .env("TERN_EVAL_ANSWER", &answer_file)
        .env("TERN_EVAL_EVENTS", &events_file)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let (check_exit, check_error) = match tokio::time::timeout(task.check_timeout, check).await {
        Ok(Ok(o)) => {
            let code = o.status.code();
            let why = (code != Some(0)).then(|| {
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
                let tail: Vec<&str> = text.lines().rev().take(3).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!(
                    "check `{}` exited {}: {}",
                    task.check,
                    code.map_or("by a signal".into(), |c| c.to_string()),
                    tail.join(" ⏎ ")
                )
            });
            (code, why)
        }
        Ok(Err(e)) => (None, Some(format!("cannot run the check: {e}"))),
        Err(_) => (
            None,
            Some(format!(
                "the check did not finish in {} s",
                task.check_timeout.as_secs()
            )),
        ),
    };
    let passed = check_exit == Some(0);
    let status = if timed_out {
        "timeout".to_string()
    } else {
        outcome.status.as_str().to_string()
    };
    let run_error = if timed_out {
        Some(format!(
            "the run did not finish in {} s",
            task.timeout.as_secs()
        ))
    } else {
        outcome.error.clone()
    };
    let mut result = TaskResult {
        passed,
        status,
        check_exit,
        steps: outcome.steps,
        tool_calls: tally.tool_calls,
        tool_errors: tally.tool_errors,
        duration_ms: started.elapsed().as_millis() as u64,
        run_id: tally.run_id,
        replay_identical: identical,
        error: if passed {
            None
        } else {
            run_error.or(check_error)
        },
        ..TaskResult::failed(&task.name, &task.kind, String::new())
    };
    if let Some(Event::RunFinished {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_creation_tokens,
        cost_usd,
        ..
    }) = tally.finished
    {
        result.input_tokens = input_tokens;
        result.output_tokens = output_tokens;
        result.cache_read_tokens = cache_read_tokens;
        result.cache_creation_tokens = cache_creation_tokens;
        result.cost_usd = cost_usd;
    }
    Ok(result)
}
