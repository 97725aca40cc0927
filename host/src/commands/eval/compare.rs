//! `--baseline FILE`: this eval against an earlier report, task by task, on pass^k and on the
//! mean tokens and steps per trial.

use super::report::{Report, TaskSummary, label, summarize};

/// How much worse a task may get before it counts as a regression, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub tokens_pct: f64,
    pub steps_pct: f64,
}

/// What changed against the baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// A pass^k that became a fail, tokens or steps up beyond the tolerance: exit 1.
    pub regressions: Vec<String>,
    /// Fails that became passes, tasks only one side has.
    pub notes: Vec<String>,
}

/// Compares `now` with `baseline`, task by task (by name, and by configuration when both sides
/// ran several). Tasks the baseline has and this run does not are noted, not counted: running a
/// part of a suite is allowed.
pub fn compare(now: &Report, baseline: &Report, tolerance: Tolerance) -> Comparison {
    let mut c = Comparison::default();
    let now_rows = summarize(&now.tasks);
    let base_rows = summarize(&baseline.tasks);
    // With one configuration on a side, its label does not matter (a baseline recorded with
    // the configured model is compared with a run of `--model X`).
    let single = |rows: &[TaskSummary]| {
        rows.iter()
            .map(|r| r.config.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            <= 1
    };
    let by_label = !(single(&now_rows) || single(&base_rows));
    let same =
        |a: &TaskSummary, b: &TaskSummary| a.name == b.name && (!by_label || a.config == b.config);
    let name = |s: &TaskSummary| {
        if by_label {
            format!("{} [{}]", s.name, label(&s.config))
        } else {
            s.name.clone()
        }
    };
    for base in base_rows.iter().filter(|b| b.trials > 0) {
        let Some(task) = now_rows.iter().find(|t| same(t, base) && t.trials > 0) else {
            c.notes
                .push(format!("{}: in the baseline, not run now", name(base)));
            continue;
        };
        let n = name(task);
        let verdict = |s: &TaskSummary| {
            if s.trials == 1 {
                if s.pass_hat_k { "passed" } else { "fails" }.to_string()
            } else {
                format!("{}/{} passed", s.passed, s.trials)
            }
        };
        if base.pass_hat_k && !task.pass_hat_k {
            if base.trials == 1 && task.trials == 1 {
                c.regressions
                    .push(format!("{n}: passed in the baseline, fails now"));
            } else {
                c.regressions.push(format!(
                    "{n}: pass^k lost: {} in the baseline, {} now",
                    verdict(base),
                    verdict(task)
                ));
            }
        } else if !base.pass_hat_k && task.pass_hat_k {
            if base.trials == 1 && task.trials == 1 {
                c.notes
                    .push(format!("{n}: failed in the baseline, passes now"));
            } else {
                c.notes.push(format!(
                    "{n}: {} in the baseline, {} now",
                    verdict(base),
                    verdict(task)
                ));
            }
        }
        let beyond = |now: f64, before: f64, pct: f64| now > before * (1.0 + pct / 100.0);
        if beyond(task.tokens, base.tokens, tolerance.tokens_pct) {
            c.regressions.push(format!(
                "{n}: tokens {} → {} (+{:.0}%, tolerance {}%)",
                base.tokens.round(),
                task.tokens.round(),
                increase(task.tokens, base.tokens),
                tolerance.tokens_pct
            ));
        }
        if beyond(task.steps, base.steps, tolerance.steps_pct) {
            c.regressions.push(format!(
                "{n}: steps {} → {} (+{:.0}%, tolerance {}%)",
                trim(base.steps),
                trim(task.steps),
                increase(task.steps, base.steps),
                tolerance.steps_pct
            ));
        }
    }
    for task in now_rows.iter().filter(|t| t.trials > 0) {
        if !base_rows.iter().any(|b| same(task, b) && b.trials > 0) {
            c.notes.push(format!("{}: not in the baseline", name(task)));
        }
    }
    c
}

/// `4` for 4.0, `4.3` otherwise.
fn trim(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
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
    use super::super::report::TaskResult;
    use super::*;

    fn trial(name: &str, passed: bool, steps: u32, tokens: u64) -> TaskResult {
        TaskResult {
            passed,
            steps,
            input_tokens: tokens,
            status: "success".into(),
            cost_usd: Some(0.01),
            ..TaskResult::failed(name, "fix", String::new())
        }
    }

    fn report(repeat: u32, tasks: Vec<TaskResult>) -> Report {
        Report::new("suite".into(), "replay", "t".into(), repeat, tasks)
    }

    const TOL: Tolerance = Tolerance {
        tokens_pct: 10.0,
        steps_pct: 10.0,
    };

    #[test]
    fn a_lost_pass_and_growth_beyond_the_tolerance_are_regressions() {
        let base = report(
            1,
            vec![
                trial("a", true, 4, 1000),
                trial("b", true, 4, 1000),
                trial("c", false, 4, 1000),
                trial("gone", true, 1, 1),
            ],
        );
        let now = report(
            1,
            vec![
                trial("a", false, 4, 1000),
                trial("b", true, 5, 1101),
                trial("c", true, 4, 1050),
                trial("new", true, 1, 1),
            ],
        );
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
    fn with_repeats_the_baseline_compares_pass_hat_k() {
        let rows = |results: &[bool]| -> Vec<TaskResult> {
            results
                .iter()
                .enumerate()
                .map(|(k, p)| TaskResult {
                    repeat: k as u32 + 1,
                    ..trial("fix", *p, 4, 1000)
                })
                .collect()
        };
        let base = report(3, rows(&[true, true, true]));
        let flaky = report(3, rows(&[true, false, true]));
        let c = compare(&flaky, &base, TOL);
        assert_eq!(
            c.regressions,
            ["fix: pass^k lost: 3/3 passed in the baseline, 2/3 passed now"]
        );
        assert!(compare(&base, &flaky, TOL).regressions.is_empty());
    }

    #[test]
    fn several_configurations_compare_label_by_label() {
        let row = |config: &str, passed| TaskResult {
            config: config.into(),
            ..trial("fix", passed, 4, 1000)
        };
        let base = report(1, vec![row("a", true), row("b", true)]);
        let now = report(1, vec![row("a", true), row("b", false)]);
        let c = compare(&now, &base, TOL);
        assert_eq!(
            c.regressions,
            ["fix [b]: passed in the baseline, fails now"]
        );
        // One configuration on a side: labels are ignored.
        let single = report(1, vec![row("", false)]);
        let c = compare(&single, &report(1, vec![row("x", true)]), TOL);
        assert_eq!(c.regressions, ["fix: passed in the baseline, fails now"]);
    }
}
