//! tern's events → an ATIF trajectory.

use std::{collections::HashMap, path::Path};

use serde_json::{Value, json};
use tern_protocol::{Envelope, Event};

use super::{
    Agent, FinalMetrics, Metrics, Observation, ObservationResult, SCHEMA_VERSION, Source, Step,
    SubagentRef, ToolCall, Trajectory,
};
use crate::commands::runs::child_runs;

/// How deep sub-agent runs are embedded (as `tern trace` nests them).
const MAX_DEPTH: usize = 8;

/// The trajectory of a run and, found in `runs_dir`, the runs of its sub-agents.
pub fn from_run(runs_dir: &Path, events: &[Envelope]) -> Trajectory {
    build(events, Some(runs_dir), 0, &mut Vec::new())
}

/// The trajectory of a run's events alone (no sub-agent runs looked up).
pub fn from_events(events: &[Envelope]) -> Trajectory {
    build(events, None, 0, &mut Vec::new())
}

fn build(
    events: &[Envelope],
    runs_dir: Option<&Path>,
    depth: usize,
    seen: &mut Vec<String>,
) -> Trajectory {
    let run_id = events.first().map(|e| e.run_id.clone()).unwrap_or_default();
    seen.push(run_id.clone());
    let session_id = events.first().map(|e| e.session_id.clone());
    let mut subagents: Vec<Trajectory> = Vec::new();
    // Finding children reads the first line of every run in the directory: done only for a run
    // whose calls started sub-agents (a result names one), so a trial's conversion stays cheap
    // in a `$TERN_HOME` with thousands of runs.
    let delegated = events.iter().any(|e| {
        matches!(&e.event, Event::ToolCallFinished { output, .. } if output.contains("[sub-agent run "))
    });
    if let Some(dir) = runs_dir
        && depth < MAX_DEPTH
        && delegated
    {
        for (id, child) in child_runs(dir, &run_id) {
            if !seen.contains(&id) {
                subagents.push(build(&child, runs_dir, depth + 1, seen));
            }
        }
    }
    let mut model = None;
    let mut agent_extra = serde_json::Map::new();
    let mut tools = None;
    let mut steps: Vec<Step> = Vec::new();
    let mut results: HashMap<&str, &Event> = HashMap::new();
    let mut decisions: HashMap<&str, (&str, &str)> = HashMap::new();
    for e in events {
        match &e.event {
            Event::ToolCallFinished { call_id, .. } => {
                results.insert(call_id.as_str(), &e.event);
            }
            Event::PermissionDecided {
                call_id,
                decision,
                rule,
                ..
            } => {
                decisions.insert(call_id.as_str(), (decision.as_str(), rule.as_str()));
            }
            _ => {}
        }
    }
    let mut finished = None;
    for e in events {
        let at = Some(e.ts.clone());
        match &e.event {
            Event::RunStarted {
                goal,
                model: m,
                provider,
                servers,
                cwd,
                parent_run_id,
            } => {
                model = Some(m.clone());
                agent_extra.insert("provider".into(), json!(provider));
                agent_extra.insert("servers".into(), json!(servers));
                agent_extra.insert("cwd".into(), json!(cwd));
                if let Some(p) = parent_run_id {
                    agent_extra.insert("parent_run_id".into(), json!(p));
                }
                steps.push(Step {
                    step_id: 0,
                    timestamp: at,
                    source: Source::User,
                    model_name: None,
                    message: goal.clone(),
                    tool_calls: None,
                    observation: None,
                    metrics: None,
                    llm_call_count: None,
                    extra: None,
                });
            }
            Event::ModelRequest { request, .. } if tools.is_none() => {
                tools = request
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(|list| list.iter().map(function_definition).collect());
            }
            Event::ModelResponse {
                stop_reason,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                latency_ms,
                request_id,
                text,
                calls,
                incomplete,
                ..
            } => {
                let tool_calls: Vec<ToolCall> = calls
                    .iter()
                    .map(|c| ToolCall {
                        tool_call_id: c.id.clone(),
                        function_name: c.name.clone(),
                        arguments: match &c.arguments {
                            Value::Object(_) => c.arguments.clone(),
                            other => json!({ "value": other }),
                        },
                    })
                    .collect();
                let observed: Vec<ObservationResult> = calls
                    .iter()
                    .filter_map(|c| {
                        let result = results.get(c.id.as_str())?;
                        Some(observation(
                            &c.id,
                            result,
                            decisions.get(c.id.as_str()),
                            &subagents,
                        ))
                    })
                    .collect();
                let mut extra = serde_json::Map::new();
                extra.insert("stop_reason".into(), json!(stop_reason));
                extra.insert("latency_ms".into(), json!(latency_ms));
                if let Some(id) = request_id {
                    extra.insert("request_id".into(), json!(id));
                }
                if !incomplete.is_empty() {
                    extra.insert("incomplete_calls".into(), json!(incomplete));
                }
                steps.push(Step {
                    step_id: 0,
                    timestamp: at,
                    source: Source::Agent,
                    model_name: None,
                    message: text.clone(),
                    tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
                    observation: (!observed.is_empty())
                        .then_some(Observation { results: observed }),
                    metrics: Some(Metrics {
                        prompt_tokens: input_tokens + cache_read_tokens + cache_creation_tokens,
                        completion_tokens: *output_tokens,
                        cached_tokens: *cache_read_tokens,
                        extra: Some(json!({ "cache_creation_tokens": cache_creation_tokens })),
                    }),
                    llm_call_count: Some(1),
                    extra: Some(Value::Object(extra)),
                });
            }
            Event::Compaction {
                reason,
                stage,
                before_tokens,
                after_tokens,
                summary,
                ..
            } => steps.push(system(
                at,
                format!(
                    "context compacted ({reason}, {stage}): {before_tokens} → {after_tokens} tokens"
                ),
                Some(json!({ "compaction": { "reason": reason, "stage": stage,
                    "before_tokens": before_tokens, "after_tokens": after_tokens,
                    "summary": summary } })),
            )),
            Event::Error { message } => steps.push(system(at, format!("error: {message}"), None)),
            Event::RunFinished { .. } => finished = Some(&e.event),
            _ => {}
        }
    }
    for (i, step) in steps.iter_mut().enumerate() {
        step.step_id = i + 1;
    }
    if steps.is_empty() {
        // ATIF needs at least one step; an events file without `run_started` has none.
        steps.push(system(None, "the run recorded no steps".into(), None));
        steps[0].step_id = 1;
    }
    let total_steps = steps.len();
    let mut final_metrics = FinalMetrics {
        total_prompt_tokens: 0,
        total_completion_tokens: 0,
        total_cached_tokens: 0,
        total_cost_usd: None,
        total_steps,
        extra: None,
    };
    let mut root_extra = serde_json::Map::new();
    if let Some(Event::RunFinished {
        status,
        steps: model_turns,
        duration_ms,
        input_tokens,
        output_tokens,
        cache_read_tokens,
        cache_creation_tokens,
        cost_usd,
        error,
        ..
    }) = finished
    {
        final_metrics.total_prompt_tokens =
            input_tokens + cache_read_tokens + cache_creation_tokens;
        final_metrics.total_completion_tokens = *output_tokens;
        final_metrics.total_cached_tokens = *cache_read_tokens;
        // The run's own cost plus its sub-agents', known only when every part is.
        final_metrics.total_cost_usd = subagents.iter().fold(*cost_usd, |sum, s| {
            match (sum, s.final_metrics.total_cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            }
        });
        final_metrics.extra = Some(json!({
            "cache_creation_tokens": cache_creation_tokens,
            "model_turns": model_turns,
        }));
        root_extra.insert("status".into(), json!(status.as_str()));
        root_extra.insert("duration_ms".into(), json!(duration_ms));
        if let Some(err) = error {
            root_extra.insert("error".into(), json!(err));
        }
    } else {
        root_extra.insert("status".into(), json!("unfinished"));
    }
    // Embedded sub-agents must carry unique ids (they are their run ids); keep the order runs
    // started in.
    subagents.dedup_by(|a, b| a.trajectory_id == b.trajectory_id);
    Trajectory {
        schema_version: SCHEMA_VERSION,
        session_id,
        trajectory_id: run_id,
        agent: Agent {
            name: "tern".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            model_name: model,
            tool_definitions: tools,
            extra: Some(Value::Object(agent_extra)),
        },
        steps,
        notes: None,
        final_metrics,
        extra: Some(Value::Object(root_extra)),
        subagent_trajectories: subagents,
    }
}

fn system(timestamp: Option<String>, message: String, extra: Option<Value>) -> Step {
    Step {
        step_id: 0,
        timestamp,
        source: Source::System,
        model_name: None,
        message,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra,
    }
}

/// A tool of tern's request (`{name, description, input_schema}`) in OpenAI's function shape.
fn function_definition(tool: &Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.get("name").cloned().unwrap_or(Value::Null),
            "description": tool.get("description").cloned().unwrap_or(Value::Null),
            "parameters": tool.get("input_schema").cloned().unwrap_or_else(|| json!({})),
        }
    })
}

/// The result of one call, with what the gateway decided and, for a call that started a
/// sub-agent, a reference to its embedded trajectory.
fn observation(
    call_id: &str,
    finished: &Event,
    decision: Option<&(&str, &str)>,
    subagents: &[Trajectory],
) -> ObservationResult {
    let Event::ToolCallFinished {
        is_error,
        error_type,
        duration_ms,
        output,
        diff,
        ..
    } = finished
    else {
        return ObservationResult {
            source_call_id: Some(call_id.into()),
            content: None,
            subagent_trajectory_ref: None,
            extra: None,
        };
    };
    let refs: Vec<SubagentRef> = subagents
        .iter()
        .filter(|s| output.contains(&format!("sub-agent run {}", s.trajectory_id)))
        .map(|s| SubagentRef {
            trajectory_id: s.trajectory_id.clone(),
            session_id: s.session_id.clone(),
        })
        .collect();
    let mut extra = serde_json::Map::new();
    extra.insert("is_error".into(), json!(is_error));
    if let Some(kind) = error_type {
        extra.insert("error_type".into(), json!(kind.as_str()));
    }
    extra.insert("duration_ms".into(), json!(duration_ms));
    if let Some((d, rule)) = decision {
        extra.insert("permission".into(), json!({ "decision": d, "rule": rule }));
    }
    if let Some(diff) = diff {
        extra.insert("diff".into(), json!(diff));
    }
    ObservationResult {
        source_call_id: Some(call_id.into()),
        content: Some(output.clone()),
        subagent_trajectory_ref: (!refs.is_empty()).then_some(refs),
        extra: Some(Value::Object(extra)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(seq: u64, event: Value) -> Envelope {
        let mut v = event;
        v["run_id"] = json!("r1");
        v["session_id"] = json!("s1");
        v["seq"] = json!(seq);
        v["ts"] = json!("2026-12-01T00:00:00.000Z");
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_run_becomes_user_agent_and_system_steps() {
        let events = vec![
            envelope(
                1,
                json!({"type": "run_started", "goal": "fix it", "model": "m",
                "provider": "anthropic", "servers": ["fs"], "cwd": "/w"}),
            ),
            envelope(
                2,
                json!({"type": "model_request", "step": 1, "messages": 1, "tools": 1,
                "estimated_tokens": 10, "request": {"tools": [{"name": "fs__read_file",
                "description": "Read", "input_schema": {"type": "object"}}]}}),
            ),
            envelope(
                3,
                json!({"type": "model_response", "step": 1, "stop_reason": "tool_use",
                "input_tokens": 100, "output_tokens": 20, "cache_read_tokens": 50,
                "cache_creation_tokens": 5, "latency_ms": 3, "request_id": null, "text": "Look.",
                "tool_calls": 1, "calls": [{"id": "c1", "name": "fs__read_file",
                "arguments": {"path": "a"}}]}),
            ),
            envelope(
                4,
                json!({"type": "permission_decided", "call_id": "c1",
                "tool": "fs__read_file", "decision": "allow", "rule": "annotation:readOnlyHint"}),
            ),
            envelope(
                5,
                json!({"type": "tool_call_finished", "call_id": "c1",
                "tool": "fs__read_file", "is_error": false, "error_type": null,
                "duration_ms": 2, "summary": "x", "output": "1\tx", "diff": null}),
            ),
            envelope(
                6,
                json!({"type": "compaction", "reason": "threshold", "stage": "elide",
                "before_tokens": 900, "after_tokens": 300, "elided_results": 1,
                "summarized_messages": 0}),
            ),
            envelope(
                7,
                json!({"type": "model_response", "step": 2, "stop_reason": "end_turn",
                "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 150,
                "cache_creation_tokens": 0, "latency_ms": 3, "request_id": "req",
                "text": "Done.", "tool_calls": 0}),
            ),
            envelope(
                8,
                json!({"type": "run_finished", "status": "success", "steps": 2,
                "duration_ms": 40, "input_tokens": 110, "output_tokens": 25,
                "cache_read_tokens": 200, "cache_creation_tokens": 5, "cost_usd": 0.01,
                "answer": "Done.", "error": null}),
            ),
        ];
        let t = from_events(&events);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["schema_version"], "ATIF-v1.7");
        assert_eq!(v["trajectory_id"], "r1");
        assert_eq!(v["agent"]["name"], "tern");
        assert_eq!(v["agent"]["model_name"], "m");
        assert_eq!(
            v["agent"]["tool_definitions"][0]["function"]["name"],
            "fs__read_file"
        );
        let steps = v["steps"].as_array().unwrap();
        let sources: Vec<&str> = steps
            .iter()
            .map(|s| s["source"].as_str().unwrap())
            .collect();
        assert_eq!(sources, ["user", "agent", "system", "agent"]);
        let ids: Vec<u64> = steps
            .iter()
            .map(|s| s["step_id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(steps[0]["message"], "fix it");
        assert_eq!(steps[1]["tool_calls"][0]["tool_call_id"], "c1");
        assert_eq!(
            steps[1]["observation"]["results"][0]["source_call_id"],
            "c1"
        );
        assert_eq!(steps[1]["observation"]["results"][0]["content"], "1\tx");
        assert_eq!(
            steps[1]["observation"]["results"][0]["extra"]["permission"]["decision"],
            "allow"
        );
        assert_eq!(steps[1]["metrics"]["prompt_tokens"], 155);
        assert_eq!(steps[1]["metrics"]["cached_tokens"], 50);
        assert!(steps[0].get("metrics").is_none() && steps[2].get("metrics").is_none());
        assert_eq!(v["final_metrics"]["total_prompt_tokens"], 315);
        assert_eq!(v["final_metrics"]["total_completion_tokens"], 25);
        assert_eq!(v["final_metrics"]["total_steps"], 4);
        assert_eq!(v["final_metrics"]["total_cost_usd"], 0.01);
        assert!(v.get("subagent_trajectories").is_none());
    }

    #[test]
    fn a_sub_agents_run_is_embedded_and_referenced_from_its_call() {
        let runs = tempfile::tempdir().unwrap();
        let child = "20261201-000001-child1";
        let write = |id: &str, lines: &[Value]| {
            let dir = runs.path().join(id);
            std::fs::create_dir_all(&dir).unwrap();
            let text: Vec<String> = lines.iter().map(Value::to_string).collect();
            std::fs::write(dir.join("events.jsonl"), text.join("\n") + "\n").unwrap();
        };
        let sub = |seq: u64, mut v: Value| {
            v["run_id"] = json!(child);
            v["session_id"] = json!("s2");
            v["seq"] = json!(seq);
            v["ts"] = json!("2026-12-01T00:00:01.000Z");
            v
        };
        write(
            child,
            &[
                sub(
                    1,
                    json!({"type": "run_started", "goal": "count files", "model": "m",
                    "provider": "anthropic", "servers": ["fs"], "cwd": "/w",
                    "parent_run_id": "r1"}),
                ),
                sub(
                    2,
                    json!({"type": "model_response", "step": 1, "stop_reason": "end_turn",
                    "input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0,
                    "cache_creation_tokens": 0, "latency_ms": 1, "request_id": null,
                    "text": "3 files", "tool_calls": 0}),
                ),
                sub(
                    3,
                    json!({"type": "run_finished", "status": "success", "steps": 1,
                    "duration_ms": 5, "input_tokens": 10, "output_tokens": 2,
                    "cache_read_tokens": 0, "cache_creation_tokens": 0, "cost_usd": 0.002,
                    "answer": "3 files", "error": null}),
                ),
            ],
        );
        let events = vec![
            envelope(
                1,
                json!({"type": "run_started", "goal": "delegate", "model": "m",
                "provider": "anthropic", "servers": ["agent"], "cwd": "/w"}),
            ),
            envelope(
                2,
                json!({"type": "model_response", "step": 1, "stop_reason": "tool_use",
                "input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0,
                "cache_creation_tokens": 0, "latency_ms": 1, "request_id": null, "text": "",
                "tool_calls": 1, "calls": [{"id": "c1", "name": "agent__run",
                "arguments": {"goal": "count files"}}]}),
            ),
            envelope(
                3,
                json!({"type": "tool_call_finished", "call_id": "c1",
                "tool": "agent__run", "is_error": false, "error_type": null,
                "duration_ms": 9, "summary": "3 files",
                "output": format!("3 files\n\n[sub-agent run {child} · 1 steps]"), "diff": null}),
            ),
            envelope(
                4,
                json!({"type": "run_finished", "status": "success", "steps": 1,
                "duration_ms": 20, "input_tokens": 10, "output_tokens": 2,
                "cache_read_tokens": 0, "cache_creation_tokens": 0, "cost_usd": 0.001,
                "answer": "3", "error": null}),
            ),
        ];
        let v = serde_json::to_value(from_run(runs.path(), &events)).unwrap();
        let embedded = &v["subagent_trajectories"][0];
        assert_eq!(embedded["trajectory_id"], child);
        assert_eq!(embedded["steps"][0]["message"], "count files");
        assert_eq!(embedded["agent"]["extra"]["parent_run_id"], "r1");
        let r = &v["steps"][1]["observation"]["results"][0];
        assert_eq!(r["subagent_trajectory_ref"][0]["trajectory_id"], child);
        assert_eq!(r["subagent_trajectory_ref"][0]["session_id"], "s2");
        // The total cost includes the sub-agent's.
        assert!((v["final_metrics"]["total_cost_usd"].as_f64().unwrap() - 0.003).abs() < 1e-9);
        // Without a runs directory nothing is embedded.
        assert!(
            serde_json::to_value(from_events(&events)).unwrap()["subagent_trajectories"].is_null()
        );
    }

    #[test]
    fn an_empty_events_file_still_has_one_step() {
        let t = from_events(&[]);
        assert_eq!(t.steps.len(), 1);
        assert_eq!(t.steps[0].step_id, 1);
    }
}
