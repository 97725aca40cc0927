//! tern's own task format, `task.toml`: one task per directory, next to its fixture project and
//! its recording.
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

use std::path::Path;

use serde::Deserialize;
use tern_config::PermissionMode;

use super::{DEFAULT_TIMEOUT, TASK_FILE, Task, TaskError, TaskFormat, Verifier};

/// `task.toml` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTask {
    pub(crate) goal: String,
    pub(crate) check: String,
    #[serde(default)]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) project: Option<String>,
    #[serde(default)]
    pub(crate) recording: Option<String>,
    #[serde(default)]
    pub(crate) max_steps: Option<u32>,
    #[serde(default)]
    pub(crate) timeout_sec: Option<u64>,
    #[serde(default)]
    pub(crate) check_timeout_sec: Option<u64>,
    #[serde(default)]
    pub(crate) mode: Option<PermissionMode>,
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    #[serde(default)]
    pub(crate) deny: Vec<String>,
}

const DEFAULT_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Reads `dir/task.toml` in tern's format.
pub fn load(dir: &Path) -> Result<Task, TaskError> {
    let path = dir.join(TASK_FILE);
    let text = super::read(&path)?;
    let raw: RawTask = super::parse_toml(&text, &path)?;
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
    let rules = super::rules(&raw.allow, &raw.ask, &raw.deny).map_err(invalid)?;
    let secs = |v: Option<u64>, key: &str, default| {
        super::seconds(v.map(|s| s as f64), key, default).map_err(invalid)
    };
    if raw.max_steps == Some(0) {
        return Err(invalid("`max_steps` must be at least 1".into()));
    }
    Ok(Task {
        name: super::dir_name(dir),
        dir: dir.to_path_buf(),
        format: TaskFormat::Tern,
        kind: raw.kind.unwrap_or_default(),
        goal: raw.goal,
        project,
        exclude: Vec::new(),
        recording: dir.join(raw.recording.as_deref().unwrap_or("recording.jsonl")),
        max_steps: raw.max_steps,
        timeout: secs(raw.timeout_sec, "timeout_sec", DEFAULT_TIMEOUT)?,
        mode: raw.mode,
        rules,
        overrides: Vec::new(),
        verifier: Verifier::Check {
            command: raw.check,
            timeout: secs(
                raw.check_timeout_sec,
                "check_timeout_sec",
                DEFAULT_CHECK_TIMEOUT,
            )?,
        },
        instance_id: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tern_config::{LoadOptions, RuleList};

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
        let task = load(dir.path()).unwrap();
        assert_eq!(task.goal, "fix it");
        assert_eq!(task.kind, "fix");
        assert_eq!(task.max_steps, Some(8));
        assert_eq!(task.timeout, Duration::from_secs(30));
        assert_eq!(
            task.verifier,
            Verifier::Check {
                command: "sh test.sh".into(),
                timeout: DEFAULT_CHECK_TIMEOUT
            }
        );
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
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("task.toml:3:1"), "{err}");
        assert!(err.contains("max_step"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nmode = \"careful\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("task.toml:3"), "{err}");

        let dir = task_dir("goal = \"g\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("check"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nallow = [\"shell__run(\"]\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("`allow` rule"), "{err}");

        let dir = task_dir("goal = \"g\"\ncheck = \"true\"\nproject = \"nowhere\"\n");
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}
