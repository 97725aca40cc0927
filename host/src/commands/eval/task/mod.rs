//! Eval tasks, in either of the two formats `tern eval` reads:
//!
//! - **tern's own** ([`tern`]): `task.toml` with `goal` and `check`, beside a fixture `project/`.
//! - **Harbor's** ([`harbor`]): `task.toml` with `[task]`/`[verifier]`/`[agent]`/`[environment]`,
//!   `instruction.md`, `tests/test.sh` (+ files), optional `solution/solve.sh` and
//!   `environment/Dockerfile` — the format of Terminal-Bench 2.0 and the Harbor registry.
//!
//! A directory with an `instruction.md` is a Harbor task; any other with a `task.toml` is a
//! tern task. Both become one [`Task`]: a goal, a workspace to copy fresh for every trial, the
//! permission rules and limits of the run, and a [`Verifier`].

pub mod harbor;
pub mod tern;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use tern_config::{LoadOptions, PermissionMode, RuleList};

/// The file that makes a directory a task.
pub const TASK_FILE: &str = "task.toml";

/// The file that makes a task directory a Harbor task.
pub const INSTRUCTION_FILE: &str = "instruction.md";

/// Which format a task was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskFormat {
    Tern,
    Harbor,
}

/// A task, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The directory's name.
    pub name: String,
    /// The task directory.
    pub dir: PathBuf,
    pub format: TaskFormat,
    pub kind: String,
    pub goal: String,
    /// The workspace, copied fresh for every trial.
    pub project: PathBuf,
    /// Top-level names of `project` left out of the copy (a Harbor task's `Dockerfile`).
    pub exclude: Vec<String>,
    pub recording: PathBuf,
    pub max_steps: Option<u32>,
    /// The agent's run.
    pub timeout: Duration,
    pub mode: Option<PermissionMode>,
    pub rules: Vec<(RuleList, String)>,
    /// `-c` overrides the task adds (the MCP servers a Harbor task names).
    pub overrides: Vec<String>,
    pub verifier: Verifier,
    /// SWE-bench's id of the task (`[metadata] instance_id`), for `--export swebench`; the
    /// task's name otherwise.
    pub instance_id: Option<String>,
}

/// How a trial is judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Verifier {
    /// tern's format: `sh -c COMMAND` in the workspace copy; exit 0 = pass.
    Check { command: String, timeout: Duration },
    /// Harbor's: `tests/` copied in after the agent ran, `test.sh` run, the reward read from
    /// `/logs/verifier/reward.{json,txt}`.
    Harbor(HarborVerifier),
}

/// A Harbor task's verifier and environment.
#[derive(Debug, Clone, PartialEq)]
pub struct HarborVerifier {
    /// `tests/`, copied to `/tests` after the agent ran.
    pub tests: PathBuf,
    /// The test script's path under `tests/` (`test.sh`).
    pub script: String,
    pub timeout: Duration,
    /// `[verifier] env`, with `${VAR}` / `${VAR:-default}` templates as written.
    pub env: BTreeMap<String, String>,
    /// Where the workspace appears to the verifier (`[environment] workdir`, default `/app`).
    pub workdir: String,
    /// `solution/`, what `--oracle` runs instead of the agent.
    pub solution: Option<PathBuf>,
    /// The container the task names, if any.
    pub image: Option<Image>,
}

/// A Harbor task's container.
#[derive(Debug, Clone, PartialEq)]
pub enum Image {
    /// `environment/Dockerfile`, built.
    Dockerfile(PathBuf),
    /// `[environment] docker_image`, pulled.
    Named(String),
}

/// Why a task file is not usable.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{dir}: no {TASK_FILE} here and no task directories under it")]
    NoTasks { dir: PathBuf },
}

/// 10 minutes: a generous bound for one task run.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

impl Task {
    /// Reads the task in `dir`, in whichever format it is written.
    pub fn load(dir: &Path) -> Result<Task, TaskError> {
        if dir.join(INSTRUCTION_FILE).is_file() {
            harbor::load(dir)
        } else {
            tern::load(dir)
        }
    }

    /// The config layers of this task over the command line's: its rules added, its mode
    /// replacing the command line's when it sets one.
    pub fn load_options(&self, base: &LoadOptions) -> LoadOptions {
        let mut options = base.clone();
        options.rules.extend(self.rules.iter().cloned());
        options.overrides.extend(self.overrides.iter().cloned());
        if self.mode.is_some() {
            options.mode = self.mode;
        }
        options
    }

    /// The Harbor verifier, when the task has one.
    pub fn harbor(&self) -> Option<&HarborVerifier> {
        match &self.verifier {
            Verifier::Harbor(h) => Some(h),
            Verifier::Check { .. } => None,
        }
    }
}

/// The tasks of a suite: `dir` itself when it has a `task.toml`, else every directory under it
/// that has one, by name.
pub fn discover(dir: &Path) -> Result<Vec<Task>, TaskError> {
    if dir.join(TASK_FILE).is_file() {
        return Ok(vec![Task::load(dir)?]);
    }
    let entries = std::fs::read_dir(dir).map_err(|source| TaskError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(TASK_FILE).is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(TaskError::NoTasks {
            dir: dir.to_path_buf(),
        });
    }
    dirs.iter().map(|d| Task::load(d)).collect()
}

/// The task directory's name.
pub(crate) fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}

/// Parses `text` (the file `path`) as TOML into `T`, with errors naming the line and column.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    path: &Path,
) -> Result<T, TaskError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_column(text, s.start))
            .unwrap_or((1, 1));
        TaskError::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: e.message().to_string(),
        }
    })
}

pub(crate) fn read(path: &Path) -> Result<String, TaskError> {
    std::fs::read_to_string(path).map_err(|source| TaskError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Checks the shape of each rule and tags it with its list.
pub(crate) fn rules(
    allow: &[String],
    ask: &[String],
    deny: &[String],
) -> Result<Vec<(RuleList, String)>, String> {
    let mut rules = Vec::new();
    for (list, items) in [
        (RuleList::Allow, allow),
        (RuleList::Ask, ask),
        (RuleList::Deny, deny),
    ] {
        for rule in items {
            tern_config::check_rule_shape(rule)
                .map_err(|e| format!("`{}` rule {rule:?}: {e}", list.key()))?;
            rules.push((list, rule.clone()));
        }
    }
    Ok(rules)
}

/// Seconds from a task file as a duration: 0 (or less, or not a number) is refused.
pub(crate) fn seconds(v: Option<f64>, key: &str, default: Duration) -> Result<Duration, String> {
    match v {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(_) => Err(format!("`{key}` must be more than 0 seconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_mixes_both_formats_by_name() {
        let suite = tempfile::tempdir().unwrap();
        let t = suite.path().join("b-tern");
        std::fs::create_dir_all(t.join("project")).unwrap();
        std::fs::write(t.join(TASK_FILE), "goal = \"g\"\ncheck = \"true\"\n").unwrap();
        let h = suite.path().join("a-harbor");
        std::fs::create_dir_all(h.join("tests")).unwrap();
        std::fs::write(h.join(TASK_FILE), "version = \"1.0\"\n").unwrap();
        std::fs::write(h.join(INSTRUCTION_FILE), "Say hi.\n").unwrap();
        std::fs::write(
            h.join("tests/test.sh"),
            "echo 1 > /logs/verifier/reward.txt\n",
        )
        .unwrap();
        std::fs::create_dir(suite.path().join("not-a-task")).unwrap();
        let tasks = discover(suite.path()).unwrap();
        let names: Vec<(&str, TaskFormat)> =
            tasks.iter().map(|t| (t.name.as_str(), t.format)).collect();
        assert_eq!(
            names,
            [
                ("a-harbor", TaskFormat::Harbor),
                ("b-tern", TaskFormat::Tern)
            ]
        );
        assert_eq!(discover(&suite.path().join("b-tern")).unwrap().len(), 1);
        assert!(discover(&suite.path().join("not-a-task")).is_err());
    }

    #[test]
    fn seconds_must_be_positive() {
        assert_eq!(
            seconds(Some(1.5), "k", DEFAULT_TIMEOUT),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(seconds(None, "k", DEFAULT_TIMEOUT), Ok(DEFAULT_TIMEOUT));
        assert!(seconds(Some(0.0), "k", DEFAULT_TIMEOUT).is_err());
        assert!(seconds(Some(f64::NAN), "k", DEFAULT_TIMEOUT).is_err());
    }
}
