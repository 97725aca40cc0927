//! Sub-agents: tern as an MCP server (`tern serve agent`) driven by the official Python SDK,
//! and tern's own runs delegating to it through the pool — against the mock model, which
//! answers the parent's and the children's requests by what they contain.

mod delegation;
mod hooks;
mod inherit;
mod server;

use std::path::Path;

use serde_json::Value;
use tern_model::mock::RecordedRequest;

/// Every run under `$TERN_HOME/runs`, oldest first: (run id, its events).
fn runs(home: &Path) -> Vec<(String, Vec<Value>)> {
    let mut dirs: Vec<_> = std::fs::read_dir(home.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("events.jsonl").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| {
            let text = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
            let events = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                events,
            )
        })
        .collect()
}

/// The one event of type `t` (panics unless there is exactly one).
fn only<'a>(events: &'a [Value], t: &str) -> &'a Value {
    let found: Vec<&Value> = events.iter().filter(|e| e["type"] == t).collect();
    assert_eq!(found.len(), 1, "{t}: {found:?}");
    found[0]
}

/// The text of a message's content (a string, or its text blocks joined).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The first text of the first user message of a model request: the goal of the run that sent
/// it (tern may add notes after it, e.g. servers still starting).
fn goal_of(req: &RecordedRequest) -> String {
    let content = &req.json()["messages"][0]["content"];
    match content {
        serde_json::Value::Array(blocks) => blocks
            .first()
            .and_then(|b| b["text"].as_str())
            .unwrap_or_default()
            .to_string(),
        other => text_of(other),
    }
}

/// How many messages a model request carries (1: the run's first step).
fn messages(req: &RecordedRequest) -> usize {
    req.json()["messages"].as_array().map_or(0, Vec::len)
}

/// The system prompt of a model request, as one text.
fn system_of(req: &RecordedRequest) -> String {
    text_of(&req.json()["system"])
}

/// The names of the tools a model request offered.
fn tools_of(req: &RecordedRequest) -> Vec<String> {
    req.json()["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results in the last message of a model request: (tool_use_id, text, is_error).
fn tool_results(req: &RecordedRequest) -> Vec<(String, String, bool)> {
    let body = req.json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                text_of(&b["content"]),
                b["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}
