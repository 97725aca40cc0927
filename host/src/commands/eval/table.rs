//! The tables a person reads at the end of `tern eval`: one row per trial for a single run of
//! one configuration; per task (pass@1, pass^k) and per configuration otherwise.

use super::report::{Report, TaskResult, label};
use crate::units::{format_cost, format_tokens};

impl Report {
    /// The tables a person reads: one row per trial for a single run of a single
    /// configuration; per task (pass@1, pass^k) and per configuration otherwise.
    pub fn table(&self) -> String {
        if self.repeat <= 1 && self.configs.len() <= 1 {
            self.trial_table()
        } else {
            format!("{}\n{}", self.summary_table(), self.config_table())
        }
    }

    fn trial_table(&self) -> String {
        let width = name_width(self.tasks.iter().map(|t| t.name.as_str()));
        let kw = name_width(self.tasks.iter().map(|t| t.kind.as_str())).max(12);
        let mut out = format!(
            "{:<width$}  {:<kw$}  {:<6}  {:>5}  {:>5}  {:>16}  {:>8}  {:>7}\n",
            "TASK", "KIND", "RESULT", "STEPS", "CALLS", "TOKENS (CACHED)", "COST", "TIME"
        );
        for t in &self.tasks {
            out.push_str(&format!(
                "{:<width$}  {:<kw$}  {:<6}  {:>5}  {:>5}  {:>16}  {:>8}  {:>7}\n",
                t.name,
                t.kind,
                if t.skipped() {
                    "skip"
                } else if t.passed {
                    "pass"
                } else {
                    "FAIL"
                },
                t.steps,
                t.tool_calls,
                tokens(t.tokens(), t.cache_read_tokens),
                t.cost_usd.map(format_cost).unwrap_or_else(|| "-".into()),
                seconds(t.duration_ms as f64),
            ));
            notes(&mut out, t, width);
        }
        let s = &self.totals;
        out.push_str(&format!(
            "{}/{} passed{} · {} steps · {} tool calls · {} tokens ({} cached) · {} · {:.1} s\n",
            s.passed,
            s.tasks - s.skipped,
            if s.skipped > 0 {
                format!(" ({} skipped)", s.skipped)
            } else {
                String::new()
            },
            s.steps,
            s.tool_calls,
            format_tokens(s.tokens()),
            format_tokens(s.cache_read_tokens),
            s.cost_usd
                .map(format_cost)
                .unwrap_or_else(|| "cost unknown".into()),
            s.duration_ms as f64 / 1000.0,
        ));
        out
    }

    fn summary_table(&self) -> String {
        let k = self.repeat;
        let width = name_width(self.summary.iter().map(|t| t.name.as_str()));
        let cwidth = name_width(self.summary.iter().map(|t| label(&t.config))).max(6);
        let mut out = format!(
            "{:<width$}  {:<cwidth$}  {:>6}  {:>6}  {:>6}  {:>9}  {:>8}  {:>7}\n",
            "TASK",
            "CONFIG",
            "PASS@1",
            format!("PASS^{k}"),
            "STEPS",
            "TOKENS",
            "COST",
            "TIME"
        );
        for s in &self.summary {
            out.push_str(&format!(
                "{:<width$}  {:<cwidth$}  {:>6}  {:>6}  {:>6.1}  {:>9}  {:>8}  {:>7}\n",
                s.name,
                label(&s.config),
                if s.trials == 0 {
                    "skip".to_string()
                } else {
                    format!("{:.2}", s.pass_at_1)
                },
                if s.trials == 0 {
                    "-"
                } else if s.pass_hat_k {
                    "pass"
                } else {
                    "FAIL"
                },
                s.steps,
                format_tokens(s.tokens.round() as u64),
                s.cost_usd.map(format_cost).unwrap_or_else(|| "-".into()),
                seconds(s.duration_ms),
            ));
        }
        out
    }

    /// The configurations side by side: the comparison of like with like.
    fn config_table(&self) -> String {
        let k = self.repeat;
        let cwidth = name_width(self.configs.iter().map(|c| label(&c.config))).max(6);
        let mut out = format!(
            "{:<cwidth$}  {:>5}  {:>6}  {:>11}  {:>6}  {:>16}  {:>8}  {:>7}\n",
            "CONFIG",
            "TASKS",
            "PASS@1",
            format!("PASS^{k}"),
            "STEPS",
            "TOKENS (CACHED)",
            "COST",
            "TIME"
        );
        for c in &self.configs {
            let t = &c.totals;
            out.push_str(&format!(
                "{:<cwidth$}  {:>5}  {:>6.2}  {:>11}  {:>6}  {:>16}  {:>8}  {:>7}\n",
                label(&c.config),
                c.tasks,
                c.pass_at_1,
                format!("{}/{} {:.2}", c.tasks_passing_all, c.tasks, c.pass_hat_k),
                t.steps,
                tokens(t.tokens(), t.cache_read_tokens),
                t.cost_usd.map(format_cost).unwrap_or_else(|| "-".into()),
                seconds(t.duration_ms as f64),
            ));
        }
        out
    }
}

fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names.map(|n| n.chars().count()).max().unwrap_or(4).max(4)
}

fn tokens(total: u64, cached: u64) -> String {
    format!("{} ({})", format_tokens(total), format_tokens(cached))
}

fn seconds(ms: f64) -> String {
    format!("{:.1} s", ms / 1000.0)
}

fn notes(out: &mut String, t: &TaskResult, width: usize) {
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

fn one_line(s: &str) -> String {
    let line = s.replace('\n', " ⏎ ");
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line
    }
}
