//! What the `run` tool returns: the sub-agent's answer as text for the calling model, and a
//! [`RunReport`] as `structuredContent` (declared as the tool's output schema) for programs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tern_protocol::{RunStatus, Usage};

use crate::units::{format_cost, format_tokens};

/// How a sub-agent's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// It gave a final answer.
    Success,
    /// It used all its steps without an answer.
    MaxSteps,
    /// Its answer was cut off by the output limit.
    Truncated,
    /// It used up its token budget.
    TokenBudget,
    /// It failed (the model, a server it needed).
    Error,
    /// The call was cancelled.
    Cancelled,
}

impl ReportStatus {
    /// The report's status for a run that ended with `status`.
    pub fn of(status: RunStatus, over_budget: bool) -> Self {
        match status {
            _ if over_budget => Self::TokenBudget,
            RunStatus::Success => Self::Success,
            RunStatus::MaxSteps => Self::MaxSteps,
            RunStatus::Truncated => Self::Truncated,
            RunStatus::Error => Self::Error,
            RunStatus::Cancelled => Self::Cancelled,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::MaxSteps => "max_steps",
            Self::Truncated => "truncated",
            Self::TokenBudget => "token_budget",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One sub-agent run, as the `run` tool reports it (`structuredContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct RunReport {
    /// The sub-agent's run id; `tern trace RUN_ID` shows what it did.
    pub run_id: String,
    /// How it ended.
    pub status: ReportStatus,
    /// Its final answer, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why it stopped without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The profile it ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The model it used.
    pub model: String,
    /// The directory it worked in.
    pub cwd: String,
    /// Model turns it took.
    pub steps: u32,
    /// Uncached prompt tokens (its own sub-agents' included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation_tokens: u64,
    /// What it cost in US dollars, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// How long it took.
    pub duration_ms: u64,
}

impl RunReport {
    /// Its tokens.
    pub fn usage(&self) -> Usage {
        Usage {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_tokens,
            cache_creation: self.cache_creation_tokens,
        }
    }

    /// Whether the calling model should see the result as a failure.
    pub fn is_error(&self) -> bool {
        self.status != ReportStatus::Success
    }

    /// The text the calling model reads: the answer (or what went wrong), then one line with
    /// the run id — the link from the caller's trace to this run — and the rest of the report
    /// in words, so the text mirrors the structured report (a client may show either).
    pub fn text(&self) -> String {
        let body = match (&self.answer, &self.error) {
            (Some(answer), _) if self.status == ReportStatus::Success => answer.clone(),
            (_, Some(error)) => format!(
                "The sub-agent stopped without an answer ({}): {error}",
                self.status.as_str()
            ),
            _ => format!(
                "The sub-agent stopped without an answer ({}).",
                self.status.as_str()
            ),
        };
        let cost = self
            .cost_usd
            .map(|c| format!(" · {}", format_cost(c)))
            .unwrap_or_default();
        let profile = self
            .profile
            .as_deref()
            .map(|p| format!(" · {p}"))
            .unwrap_or_default();
        let usage = self.usage();
        format!(
            "{body}\n\n[sub-agent run {}{profile} · {} · {} step(s) · {} tokens{cost} · {} in {}]",
            self.run_id,
            self.status.as_str(),
            self.steps,
            format_tokens(usage.total_input() + usage.output),
            self.model,
            self.cwd,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(status: ReportStatus) -> RunReport {
        RunReport {
            run_id: "20260101-000000-abc".into(),
            status,
            answer: Some("It is in src/lib.rs:12.".into()),
            error: None,
            profile: Some("explore".into()),
            model: "m".into(),
            cwd: "/w".into(),
            steps: 3,
            input_tokens: 1000,
            output_tokens: 200,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            cost_usd: Some(0.0123),
            duration_ms: 5,
        }
    }

    #[test]
    fn the_text_is_the_answer_and_a_line_naming_the_run() {
        let r = report(ReportStatus::Success);
        assert!(!r.is_error());
        let text = r.text();
        assert!(text.starts_with("It is in src/lib.rs:12.\n\n[sub-agent run 20260101-000000-abc · explore · success · 3 step(s) · "), "{text}");
        let r = RunReport {
            answer: None,
            error: Some("stopped after max_steps = 3 model turns".into()),
            ..report(ReportStatus::MaxSteps)
        };
        assert!(r.is_error());
        assert!(
            r.text()
                .starts_with("The sub-agent stopped without an answer (max_steps): stopped after"),
            "{}",
            r.text()
        );
    }

    #[test]
    fn absent_values_are_left_out_and_the_schema_needs_no_nulls() {
        let r = RunReport {
            answer: None,
            cost_usd: None,
            profile: None,
            ..report(ReportStatus::Cancelled)
        };
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("answer").is_none() && json.get("cost_usd").is_none());
        assert_eq!(json["status"], "cancelled");
        let schema = serde_json::to_value(schemars::schema_for!(RunReport)).unwrap();
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        let required = schema["required"].as_array().unwrap();
        assert!(required.contains(&"run_id".into()) && !required.contains(&"answer".into()));
    }
}
