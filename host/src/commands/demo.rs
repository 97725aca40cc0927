//! `tern demo`: a recorded session of tern fixing a bug, replayed offline in a fresh copy of the
//! project — no API key, no config, from any directory.
//!
//! The project (`examples/demo/median`) and the recording (`examples/demo/recording.jsonl`,
//! written by `tern run` against a scripted model; see `tests/suite/demo.rs`) are compiled into
//! the binary. The model's turns come from the recording; everything else is the real stack: the
//! built-in tool servers run the calls, the gateway checks and audits them, the terminal printer
//! renders them, and the run lands in `$TERN_HOME/runs` like any other (`tern trace` shows it).

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use tern_config::{Config, ConfigPaths, LoadOptions};
use tokio_util::sync::CancellationToken;

use super::runs::parse_events;
use crate::{
    agent::replay::{Pacing, replay},
    error::ConfigFailure,
    render::{Mode, TerminalPrinter},
    workspace::Workspace,
};

/// The recorded session.
const RECORDING: &str = include_str!("../../../examples/demo/recording.jsonl");

/// The project, as it was before the session: (path, contents).
const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../examples/demo/median/README.md"),
    ),
    (
        "median.sh",
        include_str!("../../../examples/demo/median/median.sh"),
    ),
    (
        "test.sh",
        include_str!("../../../examples/demo/median/test.sh"),
    ),
    (
        "data/odd.txt",
        include_str!("../../../examples/demo/median/data/odd.txt"),
    ),
    (
        "data/even.txt",
        include_str!("../../../examples/demo/median/data/even.txt"),
    ),
    (
        "data/prices.txt",
        include_str!("../../../examples/demo/median/data/prices.txt"),
    ),
    (
        "data/latencies.txt",
        include_str!("../../../examples/demo/median/data/latencies.txt"),
    ),
];

/// The demo's config: tern's defaults (fs and shell), without the web server, and none of the
/// user's settings — the demo must look the same on every machine.
const CONFIG: &str = "[mcp_servers.web]\nenabled = false\n";

/// Writes the project into a new directory under the system's temp dir; returns the project.
fn lay_out() -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = tempfile::Builder::new()
        .prefix("tern-demo-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("cannot create a directory for the demo")?
        .keep();
    let project = root.join("median");
    for (path, text) in PROJECT {
        let file = project.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    let config = root.join("config.toml");
    std::fs::write(&config, CONFIG)
        .with_context(|| format!("cannot write {}", config.display()))?;
    Ok((project.canonicalize()?, config))
}

/// The workspace of the demo: the project, the user's `$TERN_HOME` for the run's record, and the
/// demo's own config instead of the user's.
fn workspace(ws: &Workspace, project: &Path, config: &Path) -> anyhow::Result<Workspace> {
    let paths = ConfigPaths {
        tern_home: ws.paths.tern_home.clone(),
        user_config: config.to_path_buf(),
        project_dir: None,
        // The demo is still bound by the administrator's policy.
        managed_config: ws.paths.managed_config.clone(),
    };
    let lookup = |k: &str| ws.env.get(k).cloned();
    let config = Config::load(&paths, &LoadOptions::default(), &lookup).map_err(ConfigFailure)?;
    Ok(Workspace {
        cwd: project.to_path_buf(),
        env: ws.env.clone(),
        paths,
        config,
        tern_exe: ws.tern_exe.clone(),
        cli: LoadOptions::default(),
    })
}

/// Runs the demo; `speed` 2.0 plays it twice as fast. Returns the exit code.
pub async fn run(ws: &Workspace, speed: f64, out: &mut dyn Write) -> anyhow::Result<i32> {
    let events = parse_events(RECORDING, Path::new("<demo recording>"))?;
    let (project, config) = lay_out()?;
    let demo = workspace(ws, &project, &config)?;
    let goal = events
        .iter()
        .find_map(|e| match &e.event {
            tern_protocol::Event::RunStarted { goal, .. } => Some(goal.clone()),
            _ => None,
        })
        .unwrap_or_default();
    writeln!(
        out,
        "tern demo — a recorded session, replayed offline: the model's turns come from the \
         recording, the tool calls run for real in {}\n\n> {goal}\n",
        project.display()
    )?;
    out.flush()?;
    let printer = Box::new(TerminalPrinter::auto(Mode::Headless).in_workspace(&demo.cwd));
    let pacing = Pacing::Live { speed };
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let result = replay(&demo, &events, pacing, printer, Vec::new(), &cancel).await;
    ctrl_c.abort();
    let outcome = result?;
    writeln!(out)?;
    if cancel.is_cancelled() {
        // The replay stopped short, so its results cannot match the recording: saying they
        // "differ" would blame tern for the person's Ctrl-C (issue 26, item 7).
        writeln!(
            out,
            "Demo stopped (Ctrl-C). The project as far as it got is in {}
`tern trace {}`              shows the run up to there; `tern demo` starts it again.",
            project.display(),
            outcome.run_id
        )?;
        return Ok(130);
    }
    if !outcome.identical {
        writeln!(
            out,
            "note: some tool results differ from the recording (`tern replay {}` shows how).",
            outcome.run_id
        )?;
    }
    writeln!(
        out,
        "The fixed project is in {}\nTry `sh test.sh` there, `tern trace {}` for the run's \
         timeline, or set ANTHROPIC_API_KEY and run `tern` for a session of your own.",
        project.display(),
        outcome.run_id
    )?;
    Ok(super::replay::exit_code(&outcome))
}
