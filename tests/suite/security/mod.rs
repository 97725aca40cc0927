//! Security end to end (issue 15): the rule layer, the sandbox behind it, redaction and the
//! files tern writes — each through the real `tern` binary against the mock model.

mod annotations;
mod files;
mod http_limits;
mod mountview;
mod redaction;
mod rules;
mod sandbox;

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, of_type};
use tern_model::mock::script::AnthropicTurn;

/// One model turn calling `calls` (`(id, tool, arguments)`), all at once.
pub fn turn(env: &RunEnv, calls: &[(&str, &str, Value)]) {
    let mut turn = AnthropicTurn::new();
    for (id, tool, args) in calls {
        turn = turn.tool_use(id, tool, &[&args.to_string()]);
    }
    env.server.enqueue(turn.finish("tool_use"));
}

/// Runs `tern run GOAL --output-format jsonl EXTRA…` and fails with its stderr unless it exits 0.
pub async fn run_ok(env: &RunEnv, goal: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["run", goal, "--output-format", "jsonl"];
    args.extend_from_slice(extra);
    let out = env.run(&args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    env.events()
}

/// The `permission_decided` event of one call.
pub fn decision<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    let found: Vec<&Value> = of_type(events, "permission_decided")
        .into_iter()
        .filter(|e| e["call_id"] == call_id)
        .collect();
    assert_eq!(found.len(), 1, "decisions for {call_id}: {events:#?}");
    found[0]
}

/// The `tool_call_finished` event of one call.
pub fn finished<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    let found: Vec<&Value> = of_type(events, "tool_call_finished")
        .into_iter()
        .filter(|e| e["call_id"] == call_id)
        .collect();
    assert_eq!(found.len(), 1, "results for {call_id}: {events:#?}");
    found[0]
}
