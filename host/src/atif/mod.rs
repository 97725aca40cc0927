//! A run as an ATIF trajectory (Agent Trajectory Interchange Format), the format Harbor reads
//! agents' histories in: `tern trace RUN --format atif`, and every eval trial's
//! `agent/trajectory.json`.
//!
//! The shapes follow Harbor's RFC 0001 ("trajectory format") as its `harbor` package models it
//! (`harbor.models.trajectories`, 0.26.0 on PyPI): a root with `schema_version`, `session_id`,
//! `trajectory_id`, `agent`, `steps`, `final_metrics` and `subagent_trajectories`; each step
//! with `step_id` (1, 2, … in order), `source` (`user`, `agent` or `system`), `message`,
//! `tool_calls`, `observation.results` (each naming its `source_call_id`) and `metrics`.
//! Fields only agent steps may have (`model_name`, `tool_calls`, `metrics`) are never set on
//! others. We write `ATIF-v1.7`, the first version with embedded sub-agent trajectories and
//! `extra` on tool calls and results; Harbor reads v1.0 to v1.8.
//!
//! From tern's events: the goal is the first (user) step; each `model_response` is an agent
//! step with its text, its calls, the results of those calls (`tool_call_finished`) and its
//! tokens (`prompt_tokens` counts cached and cache-written tokens too, as ATIF defines it);
//! compactions and errors are system steps. A sub-agent's run (its `run_started` names this
//! run as parent) is embedded in `subagent_trajectories` and referenced from the result of the
//! call that started it.

mod convert;

use serde::Serialize;
use serde_json::Value;

pub use convert::{from_events, from_run};

/// The version of the format written.
pub const SCHEMA_VERSION: &str = "ATIF-v1.7";

/// The root object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trajectory {
    pub schema_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run id.
    pub trajectory_id: String,
    pub agent: Agent,
    pub steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    pub final_metrics: FinalMetrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagent_trajectories: Vec<Trajectory>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agent {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// OpenAI's function-calling shape: `{"type": "function", "function": {name, description,
    /// parameters}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

/// Who a step comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    System,
    User,
    Agent,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub step_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub source: Source,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub function_name: String,
    /// Always an object (ATIF requires a dict; a non-object argument is wrapped as `value`).
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    pub results: Vec<ObservationResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subagent_trajectory_ref: Option<Vec<SubagentRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentRef {
    pub trajectory_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Every prompt token: uncached, cache read and cache written.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The part of `prompt_tokens` read from the cache.
    pub cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FinalMetrics {
    pub total_prompt_tokens: u64,
    pub total_completion_tokens: u64,
    pub total_cached_tokens: u64,
    /// Includes the sub-agents' cost when they ran on priced models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    pub total_steps: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}
