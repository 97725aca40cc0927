//! `SubagentStop` (issue 19, item 1): in a sub-agent's run the hooks of Claude Code's
//! `SubagentStop` run where `Stop` would, with its input, and a `decision: "block"` sends the
//! sub-agent back once with the reason, while the parent's own end is `Stop`.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::{MockResponse, RecordedRequest, script::AnthropicTurn};

use super::{goal_of, messages, only, runs, text_of, tool_results};
use crate::suite::hooks::{script, with_hooks};

const PARENT: &str = "Ask a sub-agent where alpha lives.";
const CHILD: &str = "Find alpha.";

/// Answers the run whose goal is `goal` at its `step`-th model request.
fn at_step(env: &RunEnv, goal: &'static str, step: usize, respond: MockResponse) {
    env.server.respond_when(
        move |r: &RecordedRequest| goal_of(r) == goal && messages(r) == 2 * step - 1,
        move |_| respond.clone(),
    );
}

fn answer(text: &str) -> MockResponse {
    AnthropicTurn::new().text(&[text]).finish("end_turn")
}

/// Appends its input to `LOG` and blocks the first time (Claude Code's `decision: "block"`).
const SUBAGENT_STOP: &str = r#"#!/usr/bin/env bash
input=$(cat)
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/subagent-stop.jsonl"
if [ ! -e "$CLAUDE_PROJECT_DIR/blocked-once" ]; then
  touch "$CLAUDE_PROJECT_DIR/blocked-once"
  echo '{"decision": "block", "reason": "also say which file beta is in"}'
fi
exit 0
"#;

const STOP: &str = r#"#!/usr/bin/env bash
cat >> "$CLAUDE_PROJECT_DIR/stop.jsonl"
echo >> "$CLAUDE_PROJECT_DIR/stop.jsonl"
"#;

#[tokio::test]
async fn a_subagent_stop_hook_sees_the_sub_agents_end_and_can_send_it_back_once() {
    let env = RunEnv::new().await;
    let sub = script(&env, "subagent-stop.sh", SUBAGENT_STOP);
    let stop = script(&env, "stop.sh", STOP);
    with_hooks(
        &env,
        &format!(
            "[mcp_servers.agent]\nenabled = true\n\
             [[hooks.SubagentStop]]\ncommand = \"{sub}\"\n[[hooks.Stop]]\ncommand = \"{stop}\"\n"
        ),
    );
    at_step(
        &env,
        PARENT,
        1,
        AnthropicTurn::new()
            .tool_use(
                "p_run",
                "agent__run",
                &[&format!(r#"{{"goal":"{CHILD}","profile":"explore"}}"#)],
            )
            .finish("tool_use"),
    );
    at_step(&env, CHILD, 1, answer("alpha lives in a.txt"));
    at_step(
        &env,
        CHILD,
        2,
        answer("alpha lives in a.txt, beta in b.txt"),
    );
    at_step(&env, PARENT, 2, answer("Alpha is in a.txt."));
    let out = env.run(&["run", PARENT, "--output-format", "jsonl"]).await;
    assert_exit(&out, 0);

    // The child was sent back with the hook's reason, as Claude Code words a Stop block.
    let requests = env.server.model_requests();
    let second = requests
        .iter()
        .find(|r| goal_of(r) == CHILD && messages(r) == 3)
        .expect("the sub-agent was not sent back");
    let body = second.json();
    let feedback = text_of(&body["messages"][2]["content"]);
    // (tern may add a note after it, e.g. servers still starting.)
    assert!(
        feedback.starts_with("SubagentStop hook feedback:\nalso say which file beta is in"),
        "{feedback}"
    );
    // …and its second answer is what the parent got.
    let parent_last = requests.iter().rfind(|r| goal_of(r) == PARENT).unwrap();
    let results = tool_results(parent_last);
    assert!(
        results[0].1.contains("alpha lives in a.txt, beta in b.txt"),
        "{results:?}"
    );

    // The hook ran twice, in the child's session, with Claude Code's fields.
    let all = runs(env.home.path());
    let child = all
        .iter()
        .find(|(_, e)| only(e, "run_started").get("parent_run_id").is_some())
        .expect("no child run");
    let child_session = only(&child.1, "run_started")["session_id"].clone();
    let seen: Vec<Value> = std::fs::read_to_string(env.dir.path().join("subagent-stop.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for (input, active) in seen.iter().zip([false, true]) {
        assert_eq!(input["hook_event_name"], "SubagentStop");
        assert_eq!(input["stop_hook_active"], active, "{input}");
        assert_eq!(input["session_id"], child_session, "{input}");
    }
    // The parent's end is `Stop`, once; the child's end never is.
    let stops: Vec<Value> = std::fs::read_to_string(env.dir.path().join("stop.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert_eq!(stops[0]["hook_event_name"], "Stop");
    assert_ne!(stops[0]["session_id"], child_session);
}
