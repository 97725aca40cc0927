//! `tern eval DIR`: runs a suite of tasks — tern's own format or Harbor's (Terminal-Bench 2.0)
//! — each trial in a fresh copy of its workspace, judges each with its verifier, and reports
//! pass/fail (pass@1 and pass^k with `--repeat`), steps, tool calls, tokens, cost and time — as
//! a table, as JSON (`--report`), against an earlier report (`--baseline`), and for several
//! configurations side by side (`--model A --model B`, `--variant FILE`).
//!
//! Each trial runs with the configured model, with `--replay` from the recording shipped next
//! to the task (no model, no key: what CI runs), or with `--oracle` from the task's reference
//! solution. The run itself is an ordinary tern run — real servers, gateway, rules, audit,
//! `runs/<run_id>/events.jsonl` — with the task's permission rules laid over the config,
//! headless (what would be asked is denied; in a replay, answered with the recorded
//! decision). Every trial leaves a directory as Harbor's trials do (see [`trial`]), with the
//! run as an ATIF trajectory.
//!
//! A Harbor task that names a container (`environment/Dockerfile`, `[environment]
//! docker_image`) is skipped unless `--local` runs it on this machine: tern does not drive
//! containers itself — that is Harbor's job, with tern as its agent (`integrations/harbor`).
//!
//! Exit codes: without `--baseline`, 0 when every trial that ran passed (and one did), else
//! 1; with it, 1 on a regression (a pass^k lost, tokens or steps up beyond the tolerance),
//! else 0; 2 for a usage error (a bad task file, a missing suite).

mod compare;
pub mod convert;
mod export;
pub mod isolate;
mod report;
mod table;
mod task;
mod trial;
mod verify;

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use futures::StreamExt;
use tern_config::LoadOptions;
use tern_protocol::now_rfc3339;

pub use compare::{Comparison, Tolerance, compare};
pub use report::{Report, TaskResult};
pub use task::{TASK_FILE, Task, TaskError, TaskFormat, discover};
pub use trial::Agent;

use crate::{cli::RunFlags, error::UsageError, workspace::Workspace};

/// `tern eval`'s arguments.
#[derive(Debug, Clone)]
pub struct EvalArgs {
    /// The suite (a directory of task directories) or one task directory.
    pub dir: PathBuf,
    /// Who does the tasks: the model, the recordings, or the reference solutions.
    pub agent: Agent,
    /// Run Harbor tasks that name a container on this machine instead of skipping them.
    pub local: bool,
    /// Trials run at once.
    pub jobs: usize,
    /// Trials per task and configuration (pass^k).
    pub repeat: u32,
    /// Write the JSON report here.
    pub report: Option<PathBuf>,
    /// Compare with this earlier report.
    pub baseline: Option<PathBuf>,
    pub tolerance: Tolerance,
    /// `--provider`, `--max-steps`, `--sandbox` for every trial (a task's own `max_steps`
    /// wins); its `model` is the model of the one configuration when `models` is empty.
    pub flags: RunFlags,
    /// `--model` given more than once: one configuration each.
    pub models: Vec<String>,
    /// `--variant FILE`: one configuration per config file, laid over the others.
    pub variants: Vec<PathBuf>,
    /// Where the job's trial directories go (default `$TERN_HOME/evals`).
    pub jobs_dir: Option<PathBuf>,
    /// `--export swebench`.
    pub export_swebench: bool,
}

/// One configuration of the comparison.
#[derive(Debug, Clone)]
struct Config {
    label: String,
    flags: RunFlags,
    load: LoadOptions,
}

fn configs(args: &EvalArgs, load: &LoadOptions) -> Vec<Config> {
    let mut out = Vec::new();
    for model in &args.models {
        let mut flags = args.flags.clone();
        flags.model = Some(model.clone());
        out.push(Config {
            label: model.clone(),
            flags,
            load: load.clone(),
        });
    }
    for file in &args.variants {
        let mut load = load.clone();
        load.config_file = Some(file.clone());
        out.push(Config {
            label: file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.display().to_string()),
            flags: args.flags.clone(),
            load,
        });
    }
    if out.is_empty() {
        out.push(Config {
            label: String::new(),
            flags: args.flags.clone(),
            load: load.clone(),
        });
    }
    out
}

/// A file-name-safe spelling of a label.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The job's name: when it started, like a run id (`20261201-153000-4f2a1c`).
fn job_name() -> String {
    let ts = now_rfc3339();
    let digits: String = ts.chars().filter(char::is_ascii_digit).collect();
    let stamp = format!(
        "{}-{}",
        digits.get(0..8).unwrap_or("0"),
        digits.get(8..14).unwrap_or("0")
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{stamp}-{:06x}", (nanos ^ std::process::id()) & 0xff_ffff)
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
    if args.agent == Agent::Oracle
        && let Some(t) = tasks
            .iter()
            .find(|t| t.harbor().is_none_or(|h| h.solution.is_none()))
    {
        return Err(UsageError(format!(
            "--oracle runs each task's solution/solve.sh, and {} has none",
            t.name
        ))
        .into());
    }
    // Harbor tasks run in a root of their own; say so once, before any trial, when this
    // machine cannot make one.
    if tasks.iter().any(|t| t.harbor().is_some())
        && let Err(e) = isolate::probe().await
    {
        anyhow::bail!("Harbor tasks need their own root (/app, /tests, /logs): {e}");
    }
    let mode = match args.agent {
        Agent::Live => "live",
        Agent::Replay => "replay",
        Agent::Oracle => "oracle",
    };
    let jobs = args.jobs.max(1);
    let repeat = args.repeat.max(1);
    let configs = configs(&args, load);
    let job_dir = args
        .jobs_dir
        .as_ref()
        .map(|d| ws.cwd.join(d))
        .unwrap_or_else(|| ws.paths.tern_home.join("evals"))
        .join(job_name());
    std::fs::create_dir_all(&job_dir)
        .with_context(|| format!("cannot create {}", job_dir.display()))?;
    writeln!(
        out,
        "eval {}: {} task(s){}{}, {mode}, {jobs} at a time",
        args.dir.display(),
        tasks.len(),
        if repeat > 1 {
            format!(" × {repeat} repeats")
        } else {
            String::new()
        },
        if configs.len() > 1 {
            format!(" × {} configurations", configs.len())
        } else {
            String::new()
        },
    )?;
    let scratch = tempfile::Builder::new()
        .prefix("tern-eval-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("cannot create a scratch directory")?;
    let started = now_rfc3339();
    let container = container_note(&tasks, args.local).await;
    let mut specs = Vec::new();
    for config in &configs {
        for task in &tasks {
            for k in 1..=repeat {
                let mut name = format!("{}__{k}", task.name);
                if configs.len() > 1 {
                    name = format!("{}/{name}", slug(&config.label));
                }
                specs.push((config, task, k, name));
            }
        }
    }
    let agent = args.agent;
    let (job, scratch_dir) = (&job_dir, scratch.path());
    let container = &container;
    let patch = args.export_swebench;
    let mut runs =
        futures::stream::iter(specs.into_iter().map(|(config, task, k, name)| async move {
            let t = trial::Trial {
                task,
                load: config.load.clone(),
                flags: &config.flags,
                config: &config.label,
                repeat: k,
                agent,
                dir: job.join(&name),
                scratch: scratch_dir.join(&name),
                patch,
            };
            let needs_container = task.harbor().is_some_and(|h| h.image.is_some());
            match (needs_container, container) {
                (true, Some(why)) => {
                    let _ = std::fs::create_dir_all(&t.dir);
                    t.skipped(why.clone())
                }
                _ => t.run().await,
            }
        }))
        .buffered(jobs);
    let mut results = Vec::new();
    while let Some(result) = runs.next().await {
        let mark = if result.skipped() {
            "-"
        } else if result.passed {
            "✓"
        } else {
            "✗"
        };
        let mut line = format!("  {mark} {}", result.name);
        if repeat > 1 {
            line.push_str(&format!(" #{}", result.repeat));
        }
        if configs.len() > 1 {
            line.push_str(&format!(" [{}]", report::label(&result.config)));
        }
        if result.skipped() {
            line.push_str(" (skipped)");
        } else {
            line.push_str(&format!(
                " ({} steps, {:.1} s)",
                result.steps,
                result.duration_ms as f64 / 1000.0
            ));
        }
        writeln!(out, "{line}")?;
        results.push(result);
    }
    drop(runs);
    let mut report = Report::new(
        args.dir.display().to_string(),
        mode,
        started,
        repeat,
        results,
    );
    report.job_dir = Some(job_dir.display().to_string());
    writeln!(out, "\n{}", report.table())?;
    if let Some(why) = container
        && report.totals.skipped > 0
    {
        writeln!(out, "skipped: {why}")?;
    }
    let text = serde_json::to_string_pretty(&report)?;
    std::fs::write(job_dir.join("report.json"), text.clone() + "\n")
        .with_context(|| format!("cannot write into {}", job_dir.display()))?;
    writeln!(out, "trials: {}", job_dir.display())?;
    if let Some(path) = &args.report {
        let path = ws.cwd.join(path);
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("cannot write the report {}", path.display()))?;
        writeln!(out, "report: {}", path.display())?;
    }
    if args.export_swebench {
        for file in write_predictions(&report, &tasks, &job_dir)? {
            writeln!(out, "predictions: {}", file.display())?;
        }
    }
    let Some(baseline) = baseline else {
        return Ok(if report.all_passed() { 0 } else { 1 });
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

/// Why tasks that name a container are skipped, or `None` when none is (`--local`, or no such
/// task). Docker is asked only when a task needs it.
async fn container_note(tasks: &[Task], local: bool) -> Option<String> {
    if local
        || !tasks
            .iter()
            .any(|t| t.harbor().is_some_and(|h| h.image.is_some()))
    {
        return None;
    }
    let docker = std::env::var("TERN_EVAL_DOCKER").unwrap_or_else(|_| "docker".into());
    let probe = tokio::process::Command::new(&docker)
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let engine = match tokio::time::timeout(std::time::Duration::from_secs(5), probe).await {
        Ok(Ok(o)) if o.status.success() => None,
        Ok(Ok(o)) => Some(format!(
            "no Docker engine answers (`{docker} info`: {})",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed")
                .trim()
        )),
        Ok(Err(e)) => Some(format!("no Docker here (`{docker}`: {e})")),
        Err(_) => Some(format!("`{docker} info` did not answer in 5 s")),
    };
    Some(match engine {
        Some(why) => format!(
            "the task names a container and {why}.\nhint: `--local` runs it on this machine \
             in a copy of environment/; with Docker, Harbor runs it in its container with tern \
             as the agent (integrations/harbor)"
        ),
        None => "the task names a container: tern eval does not run containers itself.\n\
                 hint: `--local` runs it on this machine in a copy of environment/; Harbor runs \
                 it in its container with tern as the agent (integrations/harbor)"
            .into(),
    })
}

/// Writes SWE-bench predictions, one file per configuration (`predictions.jsonl`, or
/// `predictions-LABEL.jsonl` with several), from each task's first repeat.
fn write_predictions(
    report: &Report,
    tasks: &[Task],
    job_dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut labels: Vec<&str> = Vec::new();
    for t in &report.tasks {
        if !labels.contains(&t.config.as_str()) {
            labels.push(&t.config);
        }
    }
    let mut files = Vec::new();
    for label in &labels {
        let mut lines = String::new();
        for t in report
            .tasks
            .iter()
            .filter(|t| t.config == *label && t.repeat == 1 && !t.skipped())
        {
            let Some(dir) = &t.trial_dir else { continue };
            let patch = std::fs::read_to_string(Path::new(dir).join("agent/model_patch.diff"))
                .unwrap_or_default();
            let instance_id = tasks
                .iter()
                .find(|task| task.name == t.name)
                .and_then(|task| task.instance_id.clone())
                .unwrap_or_else(|| t.name.clone());
            let model = if label.is_empty() {
                format!("tern-{}", env!("CARGO_PKG_VERSION"))
            } else {
                format!("tern-{}/{label}", env!("CARGO_PKG_VERSION"))
            };
            let p = export::Prediction {
                instance_id,
                model_name_or_path: model,
                model_patch: patch,
            };
            lines.push_str(&serde_json::to_string(&p)?);
            lines.push('\n');
        }
        let file = if labels.len() > 1 {
            job_dir.join(format!("predictions-{}.jsonl", slug(label)))
        } else {
            job_dir.join("predictions.jsonl")
        };
        std::fs::write(&file, lines).with_context(|| format!("cannot write {}", file.display()))?;
        files.push(file);
    }
    Ok(files)
}
