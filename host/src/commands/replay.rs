//! `tern replay RUN_ID|FILE`: re-drives a recorded run — model turns from the recording, tool
//! calls re-executed for real — and reports where the tools' results differ.
//!
//! The recording holds the model's side of the run but not the workspace, so the replay starts
//! from a scratch copy of a directory: by default the recorded run's directory *as it is now*
//! (`--workspace DIR` names another, e.g. a pristine checkout; `--in-place` works in it
//! directly). A run that changed its files therefore diverges when replayed from the changed
//! directory — the report names the first call whose result differs, which is what makes the
//! divergence explainable.
//!
//! Exit codes: 0 identical, 1 diverged (or the replay failed), 2 usage error, 130 interrupted.

use std::{
    io::{IsTerminal, Write},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context as _;
use tern_config::LoadOptions;
use tern_protocol::{Envelope, Event, ReplayVerdict, RunStatus};
use tokio_util::sync::CancellationToken;

use super::runs::{find_run, load_events};
use crate::{
    agent::{
        Subscriber,
        replay::{Pacing, ReplayOutcome, replay},
    },
    cli::OutputFormat,
    error::UsageError,
    render::{JsonlPrinter, Mode, Screen, TerminalPrinter, sanitize},
    workspace::Workspace,
};

/// `tern replay`'s arguments.
#[derive(Debug, Clone)]
pub struct ReplayArgs {
    /// A run id (or a unique prefix) or an events file.
    pub source: String,
    /// Replay in the directory itself instead of a scratch copy.
    pub in_place: bool,
    /// The directory to start from, instead of the recorded run's.
    pub workspace: Option<PathBuf>,
    /// Keep the scratch copy (its path is printed).
    pub keep: bool,
    pub output: OutputFormat,
}

/// Runs `tern replay` and returns the exit code.
pub async fn run(ws: &Workspace, load: &LoadOptions, args: ReplayArgs) -> anyhow::Result<i32> {
    let file = {
        let as_path = ws.cwd.join(&args.source);
        if as_path.is_file() {
            as_path
        } else {
            find_run(ws, &args.source)?
        }
    };
    let events = load_events(&file)?;
    let recorded_cwd = events.iter().find_map(|e| match &e.event {
        Event::RunStarted { cwd, .. } => Some(PathBuf::from(cwd)),
        _ => None,
    });
    let source = match (&args.workspace, recorded_cwd) {
        (Some(dir), _) => ws.cwd.join(dir),
        (None, Some(cwd)) => cwd,
        (None, None) => {
            return Err(UsageError(format!(
                "{} is not a tern run's events file (it has no run_started event)",
                file.display()
            ))
            .into());
        }
    };
    if !source.is_dir() {
        return Err(UsageError(format!(
            "the recorded run's directory {} does not exist any more; pass --workspace DIR to \
             replay from another one",
            source.display()
        ))
        .into());
    }
    let scratch = if args.in_place {
        None
    } else {
        // 0700: the copy holds the project's files (tempfile's directories follow the umask).
        let tmp = tempfile::Builder::new()
            .prefix("tern-replay-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .context("cannot create a scratch directory")?;
        let skipped = copy_tree(&source, tmp.path())?;
        if !skipped.is_empty() {
            let names: Vec<String> = skipped.iter().map(|p| p.display().to_string()).collect();
            let _ = writeln!(
                std::io::stderr(),
                "note: not copied into the replay's workspace (not regular files): {}",
                names.join(", ")
            );
        }
        Some(tmp)
    };
    let dir = scratch
        .as_ref()
        .map_or(source.clone(), |t| t.path().to_path_buf());
    let ws = Workspace::load(Some(&dir), load)?;
    let printer: Box<dyn Subscriber> = match args.output {
        OutputFormat::Jsonl => Box::new(JsonlPrinter),
        OutputFormat::Text => Box::new(ReplayPrinter::auto()),
    };
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let result = replay(&ws, &events, Pacing::Instant, printer, Vec::new(), &cancel).await;
    ctrl_c.abort();
    let outcome = result?;
    if let Some(tmp) = scratch
        && args.keep
    {
        let kept = tmp.keep();
        let mut err = std::io::stderr();
        let _ = writeln!(err, "the replay's workspace is kept in {}", kept.display());
    }
    Ok(exit_code(&outcome))
}

/// The exit code of a replay: 0 identical, 130 interrupted, else 1.
pub fn exit_code(outcome: &ReplayOutcome) -> i32 {
    match outcome.outcome.status {
        RunStatus::Cancelled => 130,
        _ if outcome.identical => 0,
        _ => 1,
    }
}

/// Copies the files of `from` into `to` (which exists): what `.gitignore` and `.ignore` leave
/// out stays out (build output, dependencies), `.git` too; symlinks are copied as links. FIFOs,
/// sockets and devices are not copied (opening a FIFO would hang the copy; a device is no
/// project file): they are returned, for the caller to say.
pub fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut skipped = Vec::new();
    let walk = ignore::WalkBuilder::new(from)
        .hidden(false)
        .git_global(false)
        .parents(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(from) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = to.join(rel);
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot read {}", path.display()))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(path)
                .with_context(|| format!("cannot read the link {}", path.display()))?;
            std::os::unix::fs::symlink(&link, &target)
                .with_context(|| format!("cannot create {}", target.display()))?;
        } else if kind.is_dir() {
            std::fs::create_dir_all(&target)
                .with_context(|| format!("cannot create {}", target.display()))?;
        } else if kind.is_file() {
            std::fs::copy(path, &target)
                .with_context(|| format!("cannot copy {}", path.display()))?;
        } else {
            skipped.push(rel.to_path_buf());
        }
    }
    Ok(skipped)
}

/// The terminal printer, plus a line per compared call and the divergence summary.
pub struct ReplayPrinter {
    inner: TerminalPrinter,
    screen: Arc<Screen>,
    color: bool,
}

impl ReplayPrinter {
    /// On the real terminal (colour as for `tern run`).
    pub fn auto() -> Self {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Self::over(TerminalPrinter::auto(Mode::Headless), color)
    }

    /// Over a printer; `color` must match the printer's.
    pub fn over(inner: TerminalPrinter, color: bool) -> Self {
        let screen = inner.screen();
        Self {
            inner,
            screen,
            color,
        }
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn say(&self, line: &str) {
        self.screen.spin(None);
        if self.screen.mid_line() {
            self.screen.write("\n");
        }
        self.screen.write(&format!("{line}\n"));
    }
}

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";

/// The lines `tern replay` shows for a comparison or the summary (`None` for other events).
pub fn replay_lines(event: &Event) -> Option<Vec<(bool, String)>> {
    match event {
        Event::ReplayCompared {
            step,
            call_id,
            tool,
            verdict,
            differences,
        } => {
            let what = match verdict {
                ReplayVerdict::Identical => "matches the recording",
                ReplayVerdict::Diverged => "DIVERGED from the recording",
                ReplayVerdict::NotRun => "recorded but NOT RUN",
                ReplayVerdict::Unrecorded => "NOT IN the recording",
            };
            let ok = *verdict == ReplayVerdict::Identical;
            let mut lines = vec![(ok, format!("  ↺ step {step} · {tool} ({call_id}) {what}"))];
            lines.extend(
                differences
                    .iter()
                    .filter(|_| !ok)
                    .map(|d| (false, format!("      {}", sanitize(d)))),
            );
            Some(lines)
        }
        Event::ReplaySummary {
            recorded_run_id,
            calls,
            identical,
            diverged,
            missing,
            differences,
        } => {
            let same = *diverged == 0 && *missing == 0 && differences.is_empty();
            let mut lines = vec![(
                same,
                format!(
                    "[replay of {recorded_run_id}] {} · {calls} recorded tool call(s): \
                     {identical} identical, {diverged} diverged, {missing} missing",
                    if same { "identical" } else { "DIVERGED" }
                ),
            )];
            lines.extend(differences.iter().map(|d| (false, format!("  {d}"))));
            Some(lines)
        }
        _ => None,
    }
}

impl Subscriber for ReplayPrinter {
    fn on_event(&mut self, event: &Envelope) {
        match replay_lines(&event.event) {
            Some(lines) => {
                for (ok, line) in lines {
                    let line = self.paint(if ok { GREEN } else { RED }, &line);
                    self.say(&line);
                }
            }
            None => self.inner.on_event(event),
        }
    }

    fn close(&mut self) {
        self.inner.close();
    }
}
