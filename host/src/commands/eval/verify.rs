//! Judging a trial: tern's check command, or Harbor's verifier and its reward files.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use super::{
    isolate::Layout,
    task::{HarborVerifier, harbor::resolve_env},
};

/// What the verifier said.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    /// Harbor's rewards (`{"reward": 1.0}` for `reward.txt`); tern's check gives 1 or 0.
    pub rewards: BTreeMap<String, f64>,
    /// The check's exit code (none when it could not run or timed out).
    pub exit: Option<i32>,
    /// Why it did not pass, when it did not.
    pub error: Option<String>,
}

impl Verdict {
    fn failed(error: String, exit: Option<i32>) -> Self {
        Verdict {
            passed: false,
            rewards: BTreeMap::new(),
            exit,
            error: Some(error),
        }
    }
}

/// The trial's files both verifiers can read.
pub struct TrialFiles<'a> {
    /// The workspace copy the agent worked in.
    pub workspace: &'a Path,
    /// `agent/` of the trial directory (`/logs/agent`): trajectory, answer, events.
    pub agent: &'a Path,
    /// `verifier/` of the trial directory (`/logs/verifier`).
    pub verifier: &'a Path,
    /// A scratch directory of the trial (the tests' copy, the new root).
    pub scratch: &'a Path,
}

/// The last lines of a verifier's output, on one line.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    let lines: Vec<&str> = lines.into_iter().rev().collect();
    lines.join(" ⏎ ")
}

/// tern's check: `sh -c COMMAND` in the workspace, with `TERN_EVAL_ANSWER` and
/// `TERN_EVAL_EVENTS` set; its output is kept in `verifier/test-stdout.txt` as Harbor keeps a
/// test's.
pub async fn check(command: &str, timeout: Duration, files: &TrialFiles<'_>) -> Verdict {
    let run = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(files.workspace)
        .env("TERN_EVAL_ANSWER", files.agent.join("answer.txt"))
        .env("TERN_EVAL_EVENTS", files.agent.join("events.jsonl"))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(o)) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            let _ = std::fs::write(files.verifier.join("test-stdout.txt"), &text);
            let code = o.status.code();
            let passed = code == Some(0);
            Verdict {
                passed,
                rewards: [("reward".to_string(), if passed { 1.0 } else { 0.0 })].into(),
                exit: code,
                error: (!passed).then(|| {
                    format!(
                        "check `{command}` exited {}: {}",
                        code.map_or("by a signal".into(), |c| c.to_string()),
                        tail(&text)
                    )
                }),
            }
        }
        Ok(Err(e)) => Verdict::failed(format!("cannot run the check: {e}"), None),
        Err(_) => Verdict::failed(
            format!("the check did not finish in {} s", timeout.as_secs()),
            None,
        ),
    }
}

/// The Harbor layout of a trial: the workspace at the task's workdir, the tests at `/tests`,
/// the trial's logs at `/logs/agent` and `/logs/verifier`, and `extra` binds.
pub fn layout(
    h: &HarborVerifier,
    files: &TrialFiles<'_>,
    extra: Vec<(String, PathBuf)>,
) -> std::io::Result<Layout> {
    let root = files.scratch.join("root");
    std::fs::create_dir_all(&root)?;
    let mut binds = vec![
        (h.workdir.clone(), files.workspace.to_path_buf()),
        ("/logs/agent".to_string(), files.agent.to_path_buf()),
        ("/logs/verifier".to_string(), files.verifier.to_path_buf()),
    ];
    binds.extend(extra);
    Ok(Layout {
        root,
        binds,
        cwd: h.workdir.clone(),
    })
}

/// Harbor's verifier (`harbor.verifier.verifier.Verifier.verify`): `tests/` is copied in only
/// now, after the agent ran, then `(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1` runs
/// with `[verifier] env`, and the reward is `reward.json` (a flat map of numbers) if the
/// script wrote one, else `reward.txt` (one number).
pub async fn harbor(h: &HarborVerifier, files: &TrialFiles<'_>) -> Verdict {
    let env = match resolve_env(&h.env, |name| std::env::var(name).ok()) {
        Ok(env) => env,
        Err(e) => return Verdict::failed(e, None),
    };
    let tests = files.scratch.join("tests");
    if let Err(e) = std::fs::create_dir_all(&tests)
        .map_err(anyhow::Error::from)
        .and_then(|()| crate::commands::replay::copy_tree(&h.tests, &tests).map(drop))
    {
        return Verdict::failed(format!("cannot copy the tests in: {e:#}"), None);
    }
    for stale in ["reward.txt", "reward.json"] {
        let _ = std::fs::remove_file(files.verifier.join(stale));
    }
    let layout = match layout(h, files, vec![("/tests".to_string(), tests)]) {
        Ok(l) => l,
        Err(e) => return Verdict::failed(format!("cannot prepare the verifier's root: {e}"), None),
    };
    let script = format!(
        "chmod +x /tests/{s} 2>/dev/null; (/tests/{s}) > /logs/verifier/test-stdout.txt 2>&1",
        s = h.script
    );
    let mut cmd = match layout.command(&script) {
        Ok(c) => c,
        Err(e) => return Verdict::failed(format!("{e:#}"), None),
    };
    cmd.envs(&env)
        // What tern's own checks read, at the paths the Harbor adapter writes them to as well.
        .env("TERN_EVAL_ANSWER", "/logs/agent/answer.txt")
        .env("TERN_EVAL_EVENTS", "/logs/agent/events.jsonl")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let exit = match tokio::time::timeout(h.timeout, cmd.output()).await {
        Ok(Ok(o)) => {
            if !o.stderr.is_empty() && o.status.code() == Some(127) {
                return Verdict::failed(
                    String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Some(127),
                );
            }
            o.status.code()
        }
        Ok(Err(e)) => return Verdict::failed(format!("cannot run the verifier: {e}"), None),
        Err(_) => {
            return Verdict::failed(
                format!(
                    "the verifier did not finish in {} s ([verifier] timeout_sec)",
                    h.timeout.as_secs_f64()
                ),
                None,
            );
        }
    };
    let output =
        std::fs::read_to_string(files.verifier.join("test-stdout.txt")).unwrap_or_default();
    match read_rewards(files.verifier) {
        Ok(rewards) => {
            let passed = passes(&rewards);
            Verdict {
                passed,
                error: (!passed)
                    .then(|| format!("reward {}: {}", format_rewards(&rewards), tail(&output))),
                rewards,
                exit,
            }
        }
        Err(e) => Verdict::failed(
            format!(
                "{e} (test.sh exited {}): {}",
                exit.map_or("by a signal".into(), |c| c.to_string()),
                tail(&output)
            ),
            exit,
        ),
    }
}

/// Reads `reward.json`, else `reward.txt`, with Harbor's rules: an empty file, text that is
/// not a number, a non-numeric or non-finite value are errors.
pub fn read_rewards(verifier: &Path) -> Result<BTreeMap<String, f64>, String> {
    let json = verifier.join("reward.json");
    let txt = verifier.join("reward.txt");
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    if json.is_file() {
        let text = read(&json)?;
        if text.trim().is_empty() {
            return Err("reward.json is empty".into());
        }
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("reward.json is not JSON: {e}"))?;
        let map = match value {
            serde_json::Value::Object(map) => map,
            other => return Err(format!("reward.json is not a flat map of numbers: {other}")),
        };
        let mut rewards = BTreeMap::new();
        for (key, v) in map {
            match v.as_f64() {
                Some(n) if n.is_finite() => {
                    rewards.insert(key, n);
                }
                _ => return Err(format!("reward.json: {key} is not a finite number: {v}")),
            }
        }
        return Ok(rewards);
    }
    if txt.is_file() {
        let text = read(&txt)?;
        if text.trim().is_empty() {
            return Err("reward.txt is empty".into());
        }
        let n: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("reward.txt is not a number: {:?}", text.trim()))?;
        if !n.is_finite() {
            return Err(format!("reward.txt is not finite: {n}"));
        }
        return Ok([("reward".to_string(), n)].into());
    }
    Err(
        "no reward file: the verifier wrote neither /logs/verifier/reward.txt nor reward.json"
            .into(),
    )
}

/// A trial passes when its reward is 1: the `reward` value, or, when the verifier wrote
/// several keys and none is `reward`, every one of them. (Harbor's own pass@k is defined only
/// for a single 0/1 reward; this extends it the strict way.)
pub fn passes(rewards: &BTreeMap<String, f64>) -> bool {
    match rewards.get("reward") {
        Some(r) => *r >= 1.0,
        None => !rewards.is_empty() && rewards.values().all(|r| *r >= 1.0),
    }
}

pub fn format_rewards(rewards: &BTreeMap<String, f64>) -> String {
    if rewards.len() == 1
        && let Some(r) = rewards.get("reward")
    {
        return format!("{r}");
    }
    rewards
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reward_files_are_read_with_harbors_rules() {
        let dir = tempfile::tempdir().unwrap();
        let v = dir.path();
        assert!(read_rewards(v).unwrap_err().contains("no reward file"));
        std::fs::write(v.join("reward.txt"), "1\n").unwrap();
        assert_eq!(read_rewards(v).unwrap(), [("reward".into(), 1.0)].into());
        std::fs::write(v.join("reward.txt"), "").unwrap();
        assert!(read_rewards(v).unwrap_err().contains("empty"));
        std::fs::write(v.join("reward.txt"), "pass").unwrap();
        assert!(read_rewards(v).unwrap_err().contains("not a number"));
        // reward.json wins over reward.txt.
        std::fs::write(v.join("reward.json"), r#"{"tests": 1, "style": 0.5}"#).unwrap();
        let r = read_rewards(v).unwrap();
        assert_eq!(r, [("style".into(), 0.5), ("tests".into(), 1.0)].into());
        assert!(!passes(&r));
        std::fs::write(v.join("reward.json"), r#"{"tests": "1"}"#).unwrap();
        assert!(read_rewards(v).unwrap_err().contains("not a finite number"));
        std::fs::write(v.join("reward.json"), "[1]").unwrap();
        assert!(read_rewards(v).unwrap_err().contains("flat map"));
    }

    #[test]
    fn a_pass_is_a_reward_of_one() {
        let r = |pairs: &[(&str, f64)]| -> BTreeMap<String, f64> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        assert!(passes(&r(&[("reward", 1.0)])));
        assert!(!passes(&r(&[("reward", 0.75)])));
        assert!(passes(&r(&[("reward", 1.0), ("style", 0.0)])));
        assert!(passes(&r(&[("a", 1.0), ("b", 1.0)])));
        assert!(!passes(&r(&[("a", 1.0), ("b", 0.0)])));
        assert!(!passes(&r(&[])));
        assert_eq!(format_rewards(&r(&[("reward", 0.5)])), "0.5");
        assert_eq!(format_rewards(&r(&[("a", 1.0), ("b", 0.0)])), "a=1, b=0");
    }
}
