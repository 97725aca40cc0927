//! What an eval measured: one row per trial (a task, under one configuration, one repeat), the
//! summaries per task and per configuration (pass@1, pass^k), the table, and the JSON report.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One trial's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    /// The configuration's label (`--model`, `--variant`); empty for the configured one.
    #[serde(default)]
    pub config: String,
    /// Which repeat (1-based, `--repeat K`).
    #[serde(default = "one")]
    pub repeat: u32,
    /// The verifier passed: the check exited 0, or the Harbor reward is 1.
    pub passed: bool,
    /// How the run ended: `success`, `max_steps`, `error`, `cancelled`, `timeout`, or
    /// `skipped` (the task needs what this machine lacks: it counts neither way).
    #[serde(default)]
    pub status: String,
    /// The check command's exit code, or the Harbor test script's.
    #[serde(default)]
    pub check_exit: Option<i32>,
    /// Harbor's rewards (`reward.txt` is `{"reward": x}`); 1 or 0 for a check.
    #[serde(default)]
    pub rewards: BTreeMap<String, f64>,
    #[serde(default)]
    pub steps: u32,
    #[serde(default)]
    pub tool_calls: usize,
    /// Calls whose result was an error (the model saw it and had to recover).
    #[serde(default)]
    pub tool_errors: usize,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_creation_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub duration_ms: u64,
    /// Of `duration_ms`: the agent's run (the model and its tools), so the harness's own
    /// overhead (copies, verifier, trajectory) is the rest.
    #[serde(default)]
    pub agent_ms: u64,
    /// The run's id (`tern trace` it).
    #[serde(default)]
    pub run_id: Option<String>,
    /// With `--replay`: whether every tool result matched the recording.
    #[serde(default)]
    pub replay_identical: Option<bool>,
    /// The trial's directory: `agent/trajectory.json`, `verifier/reward.txt`, ….
    #[serde(default)]
    pub trial_dir: Option<String>,
    /// Why the task could not run, or how the run failed.
    #[serde(default)]
    pub error: Option<String>,
}

fn one() -> u32 {
    1
}

impl TaskResult {
    /// Every token of the trial: prompt (cached or not) and output.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens + self.output_tokens
    }

    pub fn skipped(&self) -> bool {
        self.status == "skipped"
    }

    /// A trial that could not run at all.
    pub fn failed(name: &str, kind: &str, error: String) -> Self {
        TaskResult {
            name: name.into(),
            kind: kind.into(),
            config: String::new(),
            repeat: 1,
            passed: false,
            status: "error".into(),
            check_exit: None,
            rewards: BTreeMap::new(),
            steps: 0,
            tool_calls: 0,
            tool_errors: 0,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            output_tokens: 0,
            cost_usd: None,
            duration_ms: 0,
            agent_ms: 0,
            run_id: None,
            replay_identical: None,
            trial_dir: None,
            error: Some(error),
        }
    }
}

/// Sums over the trials.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Trials (with one repeat and one configuration: tasks).
    pub tasks: usize,
    pub passed: usize,
    #[serde(default)]
    pub skipped: usize,
    pub steps: u64,
    pub tool_calls: usize,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub output_tokens: u64,
    /// Known only when every trial's price was.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
}

impl Totals {
    fn of<'a>(trials: impl Iterator<Item = &'a TaskResult>) -> Totals {
        let mut totals = Totals {
            cost_usd: Some(0.0),
            ..Totals::default()
        };
        for t in trials {
            totals.tasks += 1;
            totals.passed += usize::from(t.passed);
            totals.skipped += usize::from(t.skipped());
            totals.steps += u64::from(t.steps);
            totals.tool_calls += t.tool_calls;
            totals.input_tokens += t.input_tokens;
            totals.cache_read_tokens += t.cache_read_tokens;
            totals.cache_creation_tokens += t.cache_creation_tokens;
            totals.output_tokens += t.output_tokens;
            totals.duration_ms += t.duration_ms;
            if !t.skipped() {
                totals.cost_usd = match (totals.cost_usd, t.cost_usd) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
            }
        }
        totals
    }

    pub(super) fn tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens + self.output_tokens
    }
}

/// One task under one configuration, over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub name: String,
    pub kind: String,
    pub config: String,
    /// Trials that ran (skipped ones left out).
    pub trials: usize,
    pub passed: usize,
    /// The chance one trial passes: passed / trials.
    pub pass_at_1: f64,
    /// Every trial passed (τ-bench's pass^k, k = trials).
    pub pass_hat_k: bool,
    /// Means per trial.
    pub steps: f64,
    pub tokens: f64,
    pub cost_usd: Option<f64>,
    pub duration_ms: f64,
}

/// One configuration over the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigSummary {
    pub config: String,
    /// Tasks that ran.
    pub tasks: usize,
    /// Mean of the tasks' pass@1.
    pub pass_at_1: f64,
    /// Share of the tasks that passed every repeat.
    pub pass_hat_k: f64,
    pub tasks_passing_all: usize,
    pub totals: Totals,
}

/// The JSON report (`--report FILE`), also what `--baseline FILE` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bumped when a field changes meaning (2: a row is a trial; repeats and configurations).
    pub format: u32,
    pub tern_version: String,
    /// The suite directory as given.
    pub suite: String,
    /// `live` (the configured model), `replay` (the shipped recordings) or `oracle` (each
    /// task's reference solution).
    pub mode: String,
    /// When the eval started (RFC 3339, UTC).
    pub started: String,
    /// `--repeat K`.
    #[serde(default = "one")]
    pub repeat: u32,
    /// The job's directory (every trial's logs).
    #[serde(default)]
    pub job_dir: Option<String>,
    /// One row per trial.
    pub tasks: Vec<TaskResult>,
    pub totals: Totals,
    #[serde(default)]
    pub summary: Vec<TaskSummary>,
    #[serde(default)]
    pub configs: Vec<ConfigSummary>,
}

pub const REPORT_FORMAT: u32 = 2;

/// The configurations of `trials`, in the order they first appear.
fn config_labels(trials: &[TaskResult]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for t in trials {
        if !labels.contains(&t.config) {
            labels.push(t.config.clone());
        }
    }
    labels
}

/// Per task and configuration, in the order the trials came.
pub fn summarize(trials: &[TaskResult]) -> Vec<TaskSummary> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for t in trials {
        let key = (t.config.clone(), t.name.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .filter_map(|(config, name)| {
            let ran: Vec<&TaskResult> = trials
                .iter()
                .filter(|t| t.config == config && t.name == name && !t.skipped())
                .collect();
            let kind = trials
                .iter()
                .find(|t| t.config == config && t.name == name)
                .map(|t| t.kind.clone())?;
            let n = ran.len();
            let passed = ran.iter().filter(|t| t.passed).count();
            let mean = |f: &dyn Fn(&TaskResult) -> f64| {
                if n == 0 {
                    0.0
                } else {
                    ran.iter().map(|t| f(t)).sum::<f64>() / n as f64
                }
            };
            let cost = ran
                .iter()
                .try_fold(0.0, |sum, t| t.cost_usd.map(|c| sum + c))
                .map(|sum| if n == 0 { 0.0 } else { sum / n as f64 });
            Some(TaskSummary {
                name,
                kind,
                config,
                trials: n,
                passed,
                pass_at_1: if n == 0 {
                    0.0
                } else {
                    passed as f64 / n as f64
                },
                pass_hat_k: n > 0 && passed == n,
                steps: mean(&|t| f64::from(t.steps)),
                tokens: mean(&|t| t.tokens() as f64),
                cost_usd: cost,
                duration_ms: mean(&|t| t.duration_ms as f64),
            })
        })
        .collect()
}

impl Report {
    pub fn new(
        suite: String,
        mode: &str,
        started: String,
        repeat: u32,
        tasks: Vec<TaskResult>,
    ) -> Self {
        let totals = Totals::of(tasks.iter());
        let summary = summarize(&tasks);
        let configs = config_labels(&tasks)
            .into_iter()
            .map(|config| {
                let rows: Vec<&TaskSummary> = summary
                    .iter()
                    .filter(|s| s.config == config && s.trials > 0)
                    .collect();
                let n = rows.len();
                let all = rows.iter().filter(|s| s.pass_hat_k).count();
                ConfigSummary {
                    tasks: n,
                    pass_at_1: if n == 0 {
                        0.0
                    } else {
                        rows.iter().map(|s| s.pass_at_1).sum::<f64>() / n as f64
                    },
                    pass_hat_k: if n == 0 { 0.0 } else { all as f64 / n as f64 },
                    tasks_passing_all: all,
                    totals: Totals::of(tasks.iter().filter(|t| t.config == config)),
                    config,
                }
            })
            .collect();
        Report {
            format: REPORT_FORMAT,
            tern_version: env!("CARGO_PKG_VERSION").into(),
            suite,
            mode: mode.into(),
            started,
            repeat,
            job_dir: None,
            tasks,
            totals,
            summary,
            configs,
        }
    }

    /// Whether the eval succeeded without a baseline: something ran and everything that ran
    /// passed.
    pub fn all_passed(&self) -> bool {
        let ran = self.totals.tasks - self.totals.skipped;
        ran > 0 && self.totals.passed == ran
    }
}

/// The label shown for a configuration (the configured one has none).
pub fn label(config: &str) -> &str {
    if config.is_empty() {
        "(config)"
    } else {
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn trial(name: &str, passed: bool, steps: u32, tokens: u64) -> TaskResult {
        TaskResult {
            passed,
            steps,
            input_tokens: tokens,
            status: "success".into(),
            cost_usd: Some(0.01),
            ..TaskResult::failed(name, "fix", String::new())
        }
    }

    fn report(tasks: Vec<TaskResult>) -> Report {
        Report::new("suite".into(), "replay", "t".into(), 1, tasks)
    }

    #[test]
    fn totals_add_up_and_cost_is_known_only_when_every_price_is() {
        let r = report(vec![trial("a", true, 3, 100), trial("b", false, 2, 50)]);
        assert_eq!(r.totals.passed, 1);
        assert_eq!(r.totals.steps, 5);
        assert_eq!(r.totals.input_tokens, 150);
        assert!((r.totals.cost_usd.unwrap() - 0.02).abs() < 1e-9);
        assert!(!r.all_passed());
        let mut unknown = trial("c", true, 1, 1);
        unknown.cost_usd = None;
        assert_eq!(report(vec![unknown]).totals.cost_usd, None);
        let table = r.table();
        assert!(table.contains("1/2 passed"), "{table}");
        assert!(table.contains("FAIL"), "{table}");
    }

    #[test]
    fn skipped_trials_count_neither_way() {
        let mut skipped = trial("b", false, 0, 0);
        skipped.status = "skipped".into();
        skipped.cost_usd = None;
        let r = report(vec![trial("a", true, 3, 100), skipped.clone()]);
        assert!(r.all_passed());
        assert_eq!(r.totals.cost_usd, Some(0.01));
        assert!(
            r.table().contains("1/1 passed (1 skipped)"),
            "{}",
            r.table()
        );
        assert!(!report(vec![skipped]).all_passed(), "nothing ran");
    }

    #[test]
    fn repeats_give_pass_at_1_and_pass_hat_k_per_task_and_per_config() {
        let mut rows = Vec::new();
        for (config, results) in [
            ("model-a", [[true, true, true], [true, false, true]]),
            ("model-b", [[true, true, true], [true, true, true]]),
        ] {
            for (name, runs) in ["fix", "rename"].iter().zip(results) {
                for (k, passed) in runs.into_iter().enumerate() {
                    rows.push(TaskResult {
                        config: config.into(),
                        repeat: k as u32 + 1,
                        ..trial(name, passed, 4, 1000)
                    });
                }
            }
        }
        let r = Report::new("suite".into(), "replay", "t".into(), 3, rows);
        let rename_a = r
            .summary
            .iter()
            .find(|s| s.name == "rename" && s.config == "model-a")
            .unwrap();
        assert_eq!(rename_a.trials, 3);
        assert!((rename_a.pass_at_1 - 2.0 / 3.0).abs() < 1e-9);
        assert!(!rename_a.pass_hat_k);
        let a = &r.configs[0];
        assert_eq!(a.config, "model-a");
        assert!((a.pass_at_1 - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-9);
        assert!((a.pass_hat_k - 0.5).abs() < 1e-9);
        assert_eq!(r.configs[1].tasks_passing_all, 2);
        let table = r.table();
        assert!(table.contains("PASS^3"), "{table}");
        assert!(
            table.contains("1/2 0.50") && table.contains("2/2 1.00"),
            "{table}"
        );
        assert!(table.contains("0.67"), "{table}");
    }

    #[test]
    fn the_report_round_trips_as_json_and_old_reports_still_read() {
        let r = report(vec![trial("a", true, 3, 100)]);
        let text = serde_json::to_string_pretty(&r).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        let old = r#"{"format":1,"tern_version":"0.1.0","suite":"s","mode":"replay",
            "started":"t","tasks":[{"name":"a","passed":true,"steps":3}],
            "totals":{"tasks":1,"passed":1,"steps":3,"tool_calls":0,"input_tokens":0,
            "cache_read_tokens":0,"cache_creation_tokens":0,"output_tokens":0,
            "cost_usd":null,"duration_ms":0}}"#;
        let old: Report = serde_json::from_str(old).unwrap();
        assert_eq!(old.tasks[0].repeat, 1);
        assert_eq!(old.repeat, 1);
    }
}
