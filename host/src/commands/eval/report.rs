//! What an eval measured: one row per task, the totals, the JSON report, and the comparison with
//! an earlier report (`--baseline`).

use serde::{Deserialize, Serialize};

use crate::units::{format_cost, format_tokens};

/// One task's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    /// The check command exited 0.
    pub passed: bool,
    /// How the run ended: `success`, `max_steps`, `error`, `cancelled` or `timeout`.
    #[serde(default)]
    pub status: String,
    /// The check command's exit code (none when it could not run or timed out).
    #[serde(default)]
    pub check_exit: Option<i32>,
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
    /// The run's id (`tern trace` it).
    #[serde(default)]
    pub run_id: Option<String>,
    /// With `--replay`: whether every tool result matched the recording.
    #[serde(default)]
    pub replay_identical: Option<bool>,
    /// Why the task could not run, or how the run failed.
    #[serde(default)]
    pub error: Option<String>,
}

impl TaskResult {
    /// Every token of the task: prompt (cached or not) and output.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens + self.output_tokens
    }

    /// A task that could not run at all.
    pub fn failed(name: &str, kind: &str, error: String) -> Self {
        TaskResult {
            name: name.into(),
            kind: kind.into(),
            passed: false,
            status: "error".into(),
            check_exit: None,
            steps: 0,
            tool_calls: 0,
            tool_errors: 0,
            input_tokens: 0,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            output_tokens: 0,
            cost_usd: None,
            duration_ms: 0,
            run_id: None,
            replay_identical: None,
            error: Some(error),
        }
    }
}

/// Sums over the tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub tasks: usize,
    pub passed: usize,
    pub steps: u64,
    pub tool_calls: usize,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub output_tokens: u64,
    /// Known only when every task's price was.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
}

/// The JSON report (`--report FILE`), also what `--baseline FILE` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bumped when a field changes meaning.
    pub format: u32,
    pub tern_version: String,
    /// The suite directory as given.
    pub suite: String,
    /// `live` (the configured model) or `replay` (the shipped recordings).
    pub mode: String,
    /// When the eval started (RFC 3339, UTC).
    pub started: String,
    pub tasks: Vec<TaskResult>,
    pub totals: Totals,
}

pub const REPORT_FORMAT: u32 = 1;

impl Report {
    pub fn new(suite: String, mode: &str, started: String, tasks: Vec<TaskResult>) -> Self {
        let mut totals = Totals {
            tasks: tasks.len(),
            cost_usd: Some(0.0),
            ..Totals::default()
        };
        for t in &tasks {
            totals.passed += usize::from(t.passed);
            totals.steps += u64::from(t.steps);
            totals.tool_calls += t.tool_calls;
            totals.input_tokens += t.input_tokens;
            totals.cache_read_tokens += t.cache_read_tokens;
            totals.cache_creation_tokens += t.cache_creation_tokens;
            totals.output_tokens += t.output_tokens;
            totals.duration_ms += t.duration_ms;
            totals.cost_usd = match (totals.cost_usd, t.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
        Report {
            format: REPORT_FORMAT,
            tern_version: env!("CARGO_PKG_VERSION").into(),
            suite,
            mode: mode.into(),
            started,
            tasks,
            totals,
        }
    }

    /// The table a person reads.
    pub fn table(&self) -> String {
        let width = self
            .tasks
            .iter()
            .map(|t| t.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<width$}  {:<12}  {:<6}  {:>5}  {:>5}  {:>16}  {:>8}  {:>7}\n",
            "TASK", "KIND", "RESULT", "STEPS", "CALLS", "TOKENS (CACHED)", "COST", "TIME"
        );
        let tokens = |total: u64, cached: u64| {
            format!("{} ({})", format_tokens(total), format_tokens(cached))
        };
        for t in &self.tasks {
            out.push_str(&format!(
                "{:<width$}  {:<12}  {:<6}  {:>5}  {:>5}  {:>16}  {:>8}  {:>7}\n",
                t.name,
                t.kind,
                if t.passed { "pass" } else { "FAIL" },
                t.steps,
                t.tool_calls,
                tokens(t.tokens(), t.cache_read_tokens),
                t.cost_usd.map(format_cost).unwrap_or_else(|| "-".into()),
                format!("{:.1} s", t.duration_ms as f64 / 1000.0),
            ));
            if let Some(e) = &t.error {
                out.push_str(&format!("{:<width$}  ↳ {}\n", "", one_line(e)));
            }
            if t.replay_identical == Some(false) {
                out.push_str(&format!(
                    "{:<width$}  ↳ tool results differ from the recording (`tern replay` the recording to see where)\n",
                    ""
                ));
            }
        }
        let s = &self.totals;
        out.push_str(&format!(
            "{}/{} passed · {} steps · {} tool calls · {} tokens ({} cached) · {} · {:.1} s\n",
            s.passed,
            s.tasks,
            s.steps,
            s.tool_calls,
            format_tokens(
                s.input_tokens + s.cache_read_tokens + s.cache_creation_tokens + s.output_tokens
            ),
            format_tokens(s.cache_read_tokens),
            s.cost_usd
                .map(format_cost)
                .unwrap_or_else(|| "cost unknown".into()),
            s.duration_ms as f64 / 1000.0,
        ));
        out
    }
}

fn one_line(s: &str) -> String {
    let line = s.replace('\n', " ⏎ ");
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line
    }
}

/// How much worse a task may get before it counts as a regression, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub tokens_pct: f64,
    pub steps_pct: f64,
}

/// What changed against the baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// A pass that became a fail, tokens or steps up beyond the tolerance: exit 1.
    pub regressions: Vec<String>,
    /// Fails that became passes, tasks only one side has.
    pub notes: Vec<String>,
}

/// Compares `now` with `baseline`, task by task (by name). Tasks the baseline has and this run
/// does not are noted, not counted: running a part of a suite is allowed.
pub fn compare(now: &Report, baseline: &Report, tolerance: Tolerance) -> Comparison {
    let mut c = Comparison::default();
    for base in &baseline.tasks {
        let Some(task) = now.tasks.iter().find(|t| t.name == base.name) else {
            c.notes
                .push(format!("{}: in the baseline, not run now", base.name));
            continue;
        };
        if base.passed && !task.passed {
            c.regressions
                .push(format!("{}: passed in the baseline, fails now", task.name));
        } else if !base.passed && task.passed {
            c.notes
                .push(format!("{}: failed in the baseline, passes now", task.name));
        }
        let beyond = |now: f64, before: f64, pct: f64| now > before * (1.0 + pct / 100.0);
        if beyond(
            task.tokens() as f64,
            base.tokens() as f64,
            tolerance.tokens_pct,
        ) {
            c.regressions.push(format!(
                "{}: tokens {} → {} (+{:.0}%, tolerance {}%)",
                task.name,
                base.tokens(),
                task.tokens(),
                increase(task.tokens() as f64, base.tokens() as f64),
                tolerance.tokens_pct
            ));
        }
        if beyond(
            f64::from(task.steps),
            f64::from(base.steps),
            tolerance.steps_pct,
        ) {
            c.regressions.push(format!(
                "{}: steps {} → {} (+{:.0}%, tolerance {}%)",
                task.name,
                base.steps,
                task.steps,
                increase(f64::from(task.steps), f64::from(base.steps)),
                tolerance.steps_pct
            ));
        }
    }
    for task in &now.tasks {
        if !baseline.tasks.iter().any(|b| b.name == task.name) {
            c.notes.push(format!("{}: not in the baseline", task.name));
        }
    }
    c
}

fn increase(now: f64, before: f64) -> f64 {
    if before == 0.0 {
        100.0
    } else {
        (now - before) * 100.0 / before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, passed: bool, steps: u32, tokens: u64) -> TaskResult {
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
        Report::new("suite".into(), "replay", "t".into(), tasks)
    }

    const TOL: Tolerance = Tolerance {
        tokens_pct: 10.0,
        steps_pct: 10.0,
    };

    #[test]
    fn totals_add_up_and_cost_is_known_only_when_every_price_is() {
        let r = report(vec![task("a", true, 3, 100), task("b", false, 2, 50)]);
        assert_eq!(r.totals.passed, 1);
        assert_eq!(r.totals.steps, 5);
        assert_eq!(r.totals.input_tokens, 150);
        assert!((r.totals.cost_usd.unwrap() - 0.02).abs() < 1e-9);
        let mut unknown = task("c", true, 1, 1);
        unknown.cost_usd = None;
        assert_eq!(report(vec![unknown]).totals.cost_usd, None);
        let table = r.table();
        assert!(table.contains("1/2 passed"), "{table}");
        assert!(table.contains("FAIL"), "{table}");
    }

    #[test]
    fn a_lost_pass_and_growth_beyond_the_tolerance_are_regressions() {
        let base = report(vec![
            task("a", true, 4, 1000),
            task("b", true, 4, 1000),
            task("c", false, 4, 1000),
            task("gone", true, 1, 1),
        ]);
        let now = report(vec![
            task("a", false, 4, 1000),
            task("b", true, 5, 1101),
            task("c", true, 4, 1050),
            task("new", true, 1, 1),
        ]);
        let c = compare(&now, &base, TOL);
        assert_eq!(
            c.regressions,
            [
                "a: passed in the baseline, fails now",
                "b: tokens 1000 → 1101 (+10%, tolerance 10%)",
                "b: steps 4 → 5 (+25%, tolerance 10%)",
            ]
        );
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        let lenient = compare(
            &now,
            &base,
            Tolerance {
                tokens_pct: 50.0,
                steps_pct: 50.0,
            },
        );
        assert_eq!(lenient.regressions.len(), 1);
    }

    #[test]
    fn the_report_round_trips_as_json() {
        let r = report(vec![task("a", true, 3, 100)]);
        let text = serde_json::to_string_pretty(&r).unwrap();
        let back: Report = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
