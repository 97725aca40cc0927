//! `tern eval convert SRC DEST`: tern's task format → Harbor's, so a suite written here runs
//! under Harbor as it is (and still under `tern eval`, which reads both).
//!
//! - `goal` → `instruction.md`; the fixture `project/` → `environment/` (the workspace);
//! - `check` → `tests/test.sh`, which runs it in the workspace (`/app`) and writes `1` or `0`
//!   to `/logs/verifier/reward.txt`; `TERN_EVAL_ANSWER` and `TERN_EVAL_EVENTS` point into
//!   `/logs/agent/`, where both `tern eval` and tern's Harbor agent leave the answer and events;
//! - `check_timeout_sec` → `[verifier] timeout_sec`, `timeout_sec` → `[agent] timeout_sec`,
//!   `kind` → `[metadata] category`, and what Harbor has no key for (`mode`, rules,
//!   `max_steps`) → `[metadata.tern]`;
//! - `recording.jsonl` is copied, so `--replay` works on the converted task.
//!
//! No Dockerfile is written: the converted task runs on this machine under `tern eval`; add
//! `environment/Dockerfile` (`WORKDIR /app`, `COPY . /app`) to run it in Harbor's containers.

use std::{io::Write, path::Path};

use anyhow::Context as _;
use tern_config::RuleList;

use super::task::{Task, TaskFormat, Verifier, discover, harbor::TernMetadata};
use crate::{commands::replay::copy_tree, error::UsageError};

/// Single-quotes `s` for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The Harbor `task.toml` of a tern task.
fn task_toml(task: &Task) -> anyhow::Result<String> {
    let Verifier::Check { timeout, .. } = &task.verifier else {
        anyhow::bail!("{} is already a Harbor task", task.name);
    };
    let list = |which: RuleList| -> Vec<String> {
        task.rules
            .iter()
            .filter(|(l, _)| *l == which)
            .map(|(_, r)| r.clone())
            .collect()
    };
    let tern = TernMetadata {
        mode: task.mode,
        allow: list(RuleList::Allow),
        ask: list(RuleList::Ask),
        deny: list(RuleList::Deny),
        max_steps: task.max_steps,
        recording: None,
    };
    let mut metadata = toml::map::Map::new();
    if !task.kind.is_empty() {
        metadata.insert("category".into(), task.kind.clone().into());
    }
    metadata.insert("tern".into(), toml::Value::try_from(&tern)?);
    let mut doc = toml::map::Map::new();
    doc.insert("schema_version".into(), "1.4".into());
    let mut package = toml::map::Map::new();
    package.insert("name".into(), format!("tern/{}", task.name).into());
    let description = task
        .goal
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if !description.is_empty() {
        package.insert("description".into(), description.into());
    }
    doc.insert("task".into(), package.into());
    doc.insert("metadata".into(), metadata.into());
    let mut verifier = toml::map::Map::new();
    verifier.insert("timeout_sec".into(), timeout.as_secs_f64().into());
    doc.insert("verifier".into(), verifier.into());
    let mut agent = toml::map::Map::new();
    agent.insert("timeout_sec".into(), task.timeout.as_secs_f64().into());
    doc.insert("agent".into(), agent.into());
    doc.insert("environment".into(), toml::map::Map::new().into());
    Ok(format!(
        "# Converted from tern's task format by `tern eval convert`.\n{}",
        toml::to_string(&toml::Value::Table(doc))?
    ))
}

/// The verifier script that runs a tern check and writes Harbor's reward.
fn test_sh(check: &str) -> String {
    format!(
        "#!/bin/bash\n\
         # Converted from tern's task format by `tern eval convert`: the task's check, run in the\n\
         # workspace; exit 0 is a reward of 1.\n\
         cd /app || exit 1\n\
         export TERN_EVAL_ANSWER=\"${{TERN_EVAL_ANSWER:-/logs/agent/answer.txt}}\"\n\
         export TERN_EVAL_EVENTS=\"${{TERN_EVAL_EVENTS:-/logs/agent/events.jsonl}}\"\n\
         if sh -c {}; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n",
        sh_quote(check)
    )
}

/// Writes `task` into `dest` (which must not exist yet) in Harbor's format.
fn convert_one(task: &Task, dest: &Path) -> anyhow::Result<()> {
    let Verifier::Check { command, .. } = &task.verifier else {
        anyhow::bail!("{} is already a Harbor task", task.name);
    };
    let env = dest.join("environment");
    let tests = dest.join("tests");
    for d in [&env, &tests] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    copy_tree(&task.project, &env)?;
    std::fs::write(dest.join("task.toml"), task_toml(task)?)?;
    std::fs::write(
        dest.join("instruction.md"),
        format!("{}\n", task.goal.trim_end()),
    )?;
    let script = tests.join("test.sh");
    std::fs::write(&script, test_sh(command))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))?;
    if task.recording.is_file() {
        std::fs::copy(&task.recording, dest.join("recording.jsonl"))
            .with_context(|| format!("cannot copy {}", task.recording.display()))?;
    }
    Ok(())
}

/// `tern eval convert SRC DEST`: a tern task, or a suite of them, into Harbor's format.
pub fn run(src: &Path, dest: &Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let tasks = discover(src).map_err(|e| UsageError(e.to_string()))?;
    if dest.exists() {
        return Err(UsageError(format!(
            "{} exists: convert writes a new directory",
            dest.display()
        ))
        .into());
    }
    let single = src.join(super::TASK_FILE).is_file();
    let mut converted = 0;
    for task in &tasks {
        if task.format == TaskFormat::Harbor {
            writeln!(out, "  - {} is already a Harbor task: left out", task.name)?;
            continue;
        }
        let to = if single {
            dest.to_path_buf()
        } else {
            dest.join(&task.name)
        };
        convert_one(task, &to).with_context(|| format!("cannot convert {}", task.name))?;
        writeln!(out, "  ✓ {} → {}", task.name, to.display())?;
        converted += 1;
    }
    writeln!(out, "{converted} task(s) converted to Harbor's format")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_converted_task_loads_as_harbor_with_the_same_goal_rules_and_limits() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir(src.path().join("project")).unwrap();
        std::fs::write(src.path().join("project/a.txt"), "x\n").unwrap();
        std::fs::write(
            src.path().join("task.toml"),
            "goal = \"Fix it.\"\ncheck = \"test \\\"$(cat a.txt)\\\" = 'y'\"\nkind = \"fix\"\n\
             max_steps = 4\ntimeout_sec = 30\ncheck_timeout_sec = 9\nmode = \"accept-edits\"\n\
             allow = [\"shell__run(sh test.sh)\"]\n",
        )
        .unwrap();
        std::fs::write(src.path().join("recording.jsonl"), "{}\n").unwrap();
        let out_dir = tempfile::tempdir().unwrap();
        let dest = out_dir.path().join("converted");
        let mut out = Vec::new();
        assert_eq!(run(src.path(), &dest, &mut out).unwrap(), 0);
        let before = Task::load(src.path()).unwrap();
        let after = Task::load(&dest).unwrap();
        assert_eq!(after.format, TaskFormat::Harbor);
        assert_eq!(after.goal, before.goal);
        assert_eq!(after.kind, "fix");
        assert_eq!(after.rules, before.rules);
        assert_eq!(after.mode, before.mode);
        assert_eq!(after.max_steps, Some(4));
        assert_eq!(after.timeout, before.timeout);
        assert_eq!(after.harbor().unwrap().timeout.as_secs(), 9);
        assert!(dest.join("environment/a.txt").is_file());
        assert!(dest.join("recording.jsonl").is_file());
        let script = std::fs::read_to_string(dest.join("tests/test.sh")).unwrap();
        assert!(
            script.contains(r#"sh -c 'test "$(cat a.txt)" = '\''y'\'''"#),
            "{script}"
        );
        // Converting again into an existing directory is refused.
        assert!(run(src.path(), &dest, &mut out).is_err());
    }
}
