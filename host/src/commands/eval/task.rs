//! The eval task file, `task.toml`: one task per directory, next to its fixture project and its
//! recording.
//!
//! ```toml
//! goal = "The tests fail. Fix the bug without changing the tests."   # required
//! check = "sh test.sh"          # required: run by `sh -c` in the task's copy; exit 0 = pass
//! kind = "fix"                  # optional label for the table
//! project = "project"           # the fixture directory (default "project")
//! recording = "recording.jsonl" # what --replay re-drives (default "recording.jsonl")
//! max_steps = 10                # optional: model turns before the run stops
//! timeout_sec = 300             # optional: the whole run (default 600)
//! check_timeout_sec = 60        # optional: the check command (default 120)
//! mode = "accept-edits"         # optional permission mode: default | accept-edits | read-only | yolo
//! allow = ["shell__run(sh test.sh)"]   # optional rules, as in config.toml [permissions]
//! ask = []
//! deny = []
//! ```
//!
//! Unknown keys are errors naming the file, line and key: a typo must not silently change what
//! a suite measures.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;
use tern_config::{LoadOptions, PermissionMode, RuleList, check_rule_shape};

/// The file that makes a directory a task.
pub const TASK_FILE: &str = "task.toml";

/// `task.toml` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    goal: String,
    check: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    recording: Option<String>,
    #[serde(default)]
    max_steps: Option<u32>,
    #[serde(default)]
    timeout_sec: Option<u64>,
    #[serde(default)]
    check_timeout_sec: Option<u64>,
    #[serde(default)]
    mode: Option<PermissionMode>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

/// A task, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The directory's name.
    pub name: String,
    pub kind: String,
    pub goal: String,
    pub check: String,
    /// The fixture, copied fresh for every run.
    pub project: PathBuf,
    pub recording: PathBuf,
    pub max_steps: Option<u32>,
    pub timeout: Duration,
    pub check_timeout: Duration,
    pub mode: Option<PermissionMode>,
    pub rules: Vec<(RuleList, String)>,
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
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(120);

impl Task {
    /// Reads `dir/task.toml`.
    pub fn load(dir: &Path) -> Result<Task, TaskError> {
        let path = dir.join(TASK_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| TaskError::Read {
            path: path.clone(),
            source,
        })?;
        let raw: RawTask = toml::from_str(&text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| line_column(&text, s.start))
                .unwrap_or((1, 1));
            TaskError::Parse {
                path: path.clone(),
                line,
                column,
                message: e.message().to_string(),
            }
        })?;
        let invalid = |message: String| TaskError::Invalid {
            path: path.clone(),
            message,
        };
        if raw.goal.trim().is_empty() {
            return Err(invalid("`goal` is empty".into()));
        }
        if raw.check.trim().is_empty() {
            return Err(invalid("`check` is empty".into()));
        }
        let project = dir.join(raw.project.as_deref().unwrap_or("project"));
        if !project.is_dir() {
            return Err(invalid(format!(
                "the project directory {} does not exist",
                project.display()
            )));
        }
        let mut rules = Vec::new();
        for (list, items) in [
            (RuleList::Allow, &raw.allow),
            (RuleList::Ask, &raw.ask),
            (RuleList::Deny, &raw.deny),
        ] {
            for rule in items {
                check_rule_shape(rule)
                    .map_err(|e| invalid(format!("`{}` rule {rule:?}: {e}", list.key())))?;
                rules.push((list, rule.clone()));
            }
        }
        let secs = |v: Option<u64>, key: &str, default: Duration| match v {
            Some(0) => Err(invalid(format!("`{key}` must be at least 1"))),
            Some(s) => Ok(Duration::from_secs(s)),
            None => Ok(default),
        };
        if raw.max_steps == Some(0) {
            return Err(invalid("`max_steps` must be at least 1".into()));
        }
        Ok(Task {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string()),
            kind: raw.kind.unwrap_or_default(),
            goal: raw.goal,
            check: raw.check,
            project,
            recording: dir.join(raw.recording.as_deref().unwrap_or("recording.jsonl")),
            max_steps: raw.max_steps,
            timeout: secs(raw.timeout_sec, "timeout_sec", DEFAULT_TIMEOUT)?,
            check_timeout: secs(
                raw.check_timeout_sec,
                "check_timeout_sec",
                DEFAULT_CHECK_TIMEOUT,
            )?,
            mode: raw.mode,
            rules,
        })
    }

    /// The config layers of this task over the command line's: its rules added, its mode
    /// replacing the command line's when it sets one.
    pub fn load_options(&self, base: &LoadOptions) -> LoadOptions {
        let mut options = base.clone();
        options.rules.extend(self.rules.iter().cloned());
        if self.mode.is_some() {
            options.mode = self.mode;
        }
        options
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

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_dir(toml: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("project")).unwrap();
        std::fs::write(dir.path().join(TASK_FILE), toml).unwrap();
        dir
    }

    #[test]
    fn a_full_task_file_loads() {
        let dir = task_dir(
            "goal = \"fix it\"\ncheck = \"sh test.sh\"\nkind = \"fix\"\nmax_steps = 8\n\
             timeout_sec = 30\nmode = \"accept-edits\"\nallow = [\"shell__run(sh test.sh)\"]\n\
             deny = [\"fs__read_file(**/.env)\"]\n",
        );
        let task = Task::load(dir.path()).unwrap();
        assert_eq!(task.goal, "fix it");
        assert_eq!(task.kind, "fix");
        assert_eq!(task.max_steps, Some(8));
        assert_eq!(task.timeout, Duration::from_secs(30));
        assert_eq!(task.check_timeout, DEFAULT_CHECK_TIMEOUT);
        assert_eq!(task.mode, Some(PermissionMode::AcceptEdits));
        assert_eq!(task.rules.len(), 2);
        assert_eq!(task.recording, dir.path().join("recording.jsonl"));
        let options = task.load_options(&LoadOptions {
            rules: vec![(RuleList::Deny, "web__*".into())],
            ..LoadOptions::default()
        });
        assert_eq!(options.rules.len(), 3);
        assert_eq!(options.mode, Some(PermissionMode::AcceptEdits));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors_naming_the_place() {
        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nmax_step = 3\n");
        let err = Task::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("task.toml:3:1"), "{err}");
        assert!(err.contains("max_step"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nmode = \"careful\"\n");
        let err = Task::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("task.toml:3"), "{err}");

        let dir = task_dir("goal = \"g\"\n");
        let err = Task::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("check"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nallow = [\"shell__run(\"]\n");
        let err = Task::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("`allow` rule"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nproject = \"nowhere\"\n");
        let err = Task::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn a_suite_is_every_task_directory_by_name() {
        let suite = tempfile::tempdir().unwrap();
        for name in ["b-task", "a-task"] {
            let d = suite.path().join(name);
            std::fs::create_dir_all(d.join("project")).unwrap();
            std::fs::write(d.join(TASK_FILE), "goal = \"g\"\ncheck = \"true\"\n").unwrap();
        }
        std::fs::create_dir(suite.path().join("not-a-task")).unwrap();
        let tasks = discover(suite.path()).unwrap();
        let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a-task", "b-task"]);
        assert_eq!(discover(&suite.path().join("a-task")).unwrap().len(), 1);
        assert!(discover(&suite.path().join("not-a-task")).is_err());
    }
}
