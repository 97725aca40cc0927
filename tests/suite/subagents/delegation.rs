//! `tern run` delegating to its own agent server (`agent__run`) through the pool: sub-agents
//! in parallel, their denials, the links between the runs, the totals, the trace tree, and
//! the depth limit.

use std::time::{Duration, Instant};

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{Gate, MockResponse, RecordedRequest, script::AnthropicTurn};

use super::{goal_of, messages, only, runs, tool_results, tools_of};

const PARENT_GOAL: &str = "Where do alpha and beta live?";

/// The agent server in the pool (it is off by default).
fn with_agent_server(env: &RunEnv) {
    env.add_servers("[mcp_servers.agent]\nenabled = true\n");
}

/// A model turn that ends in these tool calls (`(id, tool, arguments)`).
fn calls(calls: &[(&str, &str, &str)]) -> MockResponse {
    let mut turn = AnthropicTurn::new();
    for (id, tool, args) in calls {
        turn = turn.tool_use(id, tool, &[args]);
    }
    turn.finish("tool_use")
}

fn answer(text: &str) -> MockResponse {
    AnthropicTurn::new().text(&[text]).finish("end_turn")
}

/// Answers the requests of the run whose goal is `goal` at its `step`-th model call.
fn at_step(
    env: &RunEnv,
    goal: &'static str,
    step: usize,
    respond: impl Fn() -> MockResponse + Send + Sync + 'static,
) {
    env.server.respond_when(
        move |r: &RecordedRequest| goal_of(r) == goal && messages(r) == 2 * step - 1,
        move |_| respond(),
    );
}

/// The run whose `run_started` has no parent.
fn parent(all: &[(String, Vec<Value>)]) -> &(String, Vec<Value>) {
    let top: Vec<_> = all
        .iter()
        .filter(|(_, events)| only(events, "run_started").get("parent_run_id").is_none())
        .collect();
    assert_eq!(
        top.len(),
        1,
        "{:?}",
        all.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    top[0]
}

fn children<'a>(all: &'a [(String, Vec<Value>)], of: &str) -> Vec<&'a (String, Vec<Value>)> {
    all.iter()
        .filter(|(_, events)| only(events, "run_started")["parent_run_id"] == of)
        .collect()
}

fn sum(events: &[Value], t: &str, key: &str) -> u64 {
    events
        .iter()
        .filter(|e| e["type"] == t)
        .map(|e| e[key].as_u64().unwrap())
        .sum()
}

#[tokio::test]
async fn a_parent_delegates_to_two_explore_sub_agents_that_run_in_parallel() {
    let env = RunEnv::new().await;
    with_agent_server(&env);
    at_step(&env, PARENT_GOAL, 1, || {
        calls(&[
            (
                "p_alpha",
                "agent__run",
                r#"{"goal":"Find alpha.","profile":"explore"}"#,
            ),
            (
                "p_beta",
                "agent__run",
                r#"{"goal":"Find beta.","profile":"explore"}"#,
            ),
        ])
    });
    // Each child's first step (a write, which its profile does not allow) is held until both
    // children have asked: if they ran one after the other, the second would never ask.
    let gates = [Gate::new(), Gate::new()];
    for ((goal, file), gate) in [("Find alpha.", "alpha.txt"), ("Find beta.", "beta.txt")]
        .into_iter()
        .zip(gates.clone())
    {
        let args = format!(r#"{{"path":"{file}","content":"x"}}"#);
        at_step(&env, goal, 1, move || {
            MockResponse::sse_chunks(
                AnthropicTurn::new()
                    .tool_use("c_write", "fs__write_file", &[&args])
                    .finish_events("tool_use"),
            )
            .pause_after(1, &gate)
        });
    }
    at_step(&env, "Find alpha.", 2, || answer("alpha lives in a.txt"));
    at_step(&env, "Find beta.", 2, || answer("beta lives in b.txt"));
    at_step(&env, PARENT_GOAL, 2, || {
        answer("Alpha is in a.txt, beta in b.txt.")
    });

    let both_asked = async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let first_steps = || {
            env.server
                .model_requests()
                .iter()
                .filter(|r| goal_of(r).starts_with("Find ") && messages(r) == 1)
                .count()
        };
        while first_steps() < 2 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let parallel = first_steps() == 2;
        for gate in &gates {
            gate.open();
        }
        parallel
    };
    let (out, parallel) = tokio::join!(
        env.run(&["run", PARENT_GOAL, "--output-format", "jsonl"]),
        both_asked
    );
    assert_exit(&out, 0);
    assert!(parallel, "the two sub-agents did not run at the same time");
    for file in ["alpha.txt", "beta.txt"] {
        assert!(!env.dir.path().join(file).exists(), "{file} was written");
    }

    let all = runs(env.home.path());
    assert_eq!(all.len(), 3, "a parent and two children");
    let audit = std::fs::read_to_string(env.home.path().join("audit.jsonl")).unwrap();
    let refused = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["call_id"] == "c_write" && r["decision"] == "deny" && r["rule"] == "profile")
        .count();
    assert_eq!(refused, 2, "each child's refused write is audited: {audit}");
    let (parent_id, parent_events) = parent(&all);
    let kids = children(&all, parent_id);
    assert_eq!(kids.len(), 2);

    // The delegations were tool calls like any other: allowed because `run` is read-only here.
    let decided = of_type(parent_events, "permission_decided");
    assert_eq!(decided.len(), 2, "{decided:?}");
    for d in &decided {
        assert_eq!(d["tool"], "agent__run");
        assert_eq!(d["decision"], "allow");
        assert_eq!(d["rule"], "annotation:readOnlyHint");
    }
    let finished = of_type(parent_events, "tool_call_finished");
    assert_eq!(finished.len(), 2);
    for call in &finished {
        // The child's run id is in the parent's tool result: that is the link.
        let output = call["output"].as_str().unwrap();
        assert_eq!(call["is_error"], false, "{call}");
        let named: Vec<_> = kids
            .iter()
            .filter(|(id, _)| output.contains(&format!("[sub-agent run {id} · explore · success")))
            .collect();
        assert_eq!(named.len(), 1, "{output}");
        let (_, child_events) = named[0];
        let child_goal = only(child_events, "run_started")["goal"].as_str().unwrap();
        let answer = only(child_events, "run_finished")["answer"]
            .as_str()
            .unwrap();
        assert!(output.starts_with(answer), "{output}");
        assert_eq!(
            call["call_id"],
            if child_goal == "Find alpha." {
                "p_alpha"
            } else {
                "p_beta"
            }
        );
        // Each child tried to write and was refused: its profile has no write tool.
        let write = only(child_events, "tool_call_finished");
        assert_eq!(write["tool"], "fs__write_file");
        assert_eq!(write["is_error"], true);
        assert_eq!(write["error_type"], "denied", "{write}");
        // Refused by the gateway's permission stage, so it has a decision and an audit line.
        let decided = only(child_events, "permission_decided");
        assert_eq!(decided["decision"], "deny", "{decided}");
        assert_eq!(decided["rule"], "profile", "{decided}");
        assert_eq!(only(child_events, "run_finished")["status"], "success");
        // Only the servers its profile's tools come from were started.
        assert_eq!(
            only(child_events, "run_started")["servers"],
            serde_json::json!(["fs"])
        );
    }

    // The parent model offered `agent__run` and got both answers back.
    let requests = env.server.model_requests();
    let parent_requests: Vec<_> = requests
        .iter()
        .filter(|r| goal_of(r) == PARENT_GOAL)
        .collect();
    assert_eq!(parent_requests.len(), 2);
    assert!(tools_of(parent_requests[0]).contains(&"agent__run".to_string()));
    let results = tool_results(parent_requests[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].1.starts_with("alpha lives in a.txt") && !results[0].2);
    assert!(results[1].1.starts_with("beta lives in b.txt") && !results[1].2);

    // The parent's totals include what its sub-agents spent.
    let run_finished = only(parent_events, "run_finished");
    for (model_key, run_key) in [
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
    ] {
        let own = sum(parent_events, "model_response", model_key);
        let delegated: u64 = kids
            .iter()
            .map(|(_, e)| only(e, "run_finished")[run_key].as_u64().unwrap())
            .sum();
        assert!(delegated > 0);
        assert_eq!(run_finished[run_key], own + delegated, "{run_key}");
        assert_eq!(
            only(parent_events, "turn_finished")[run_key],
            own + delegated
        );
    }
    let child_cost: f64 = kids
        .iter()
        .map(|(_, e)| only(e, "run_finished")["cost_usd"].as_f64().unwrap())
        .sum();
    let total_cost = run_finished["cost_usd"].as_f64().unwrap();
    assert!(
        total_cost > child_cost && child_cost > 0.0,
        "{total_cost} {child_cost}"
    );

    // `tern trace` shows each child's run under the call that started it.
    let trace = env.run(&["trace", parent_id]).await;
    assert!(
        trace.status.success(),
        "{}",
        String::from_utf8_lossy(&trace.stderr)
    );
    let trace = String::from_utf8_lossy(&trace.stdout).into_owned();
    let cwd = env.dir.path().canonicalize().unwrap();
    // Servers start without holding the first request back, so where their line falls is
    // timing: left out here (the children's servers are checked above).
    let mut filters = vec![(
        r"(?m)^ *(↳ )?\+\s*\d+\.\d{3}s servers ready: .*\n".to_string(),
        String::new(),
    )];
    filters.extend(crate::suite::snapshots::filters(&cwd.to_string_lossy()));
    insta::with_settings!({filters => filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect::<Vec<_>>()}, {
        insta::assert_snapshot!("trace_tree", trace);
    });
    for (child_id, _) in &kids {
        assert!(
            trace.contains(&format!("            ↳ run {child_id}")),
            "{trace}"
        );
    }
}

#[tokio::test]
async fn a_sub_agent_cannot_delegate_beyond_the_depth_limit() {
    let env = RunEnv::new().await;
    with_agent_server(&env);
    at_step(&env, "Go deep.", 1, || {
        calls(&[("p_deep", "agent__run", r#"{"goal":"Go deeper."}"#)])
    });
    at_step(&env, "Go deeper.", 1, || {
        calls(&[("c_deeper", "agent__run", r#"{"goal":"Go deeper still."}"#)])
    });
    at_step(&env, "Go deeper.", 2, || answer("I could not delegate."));
    at_step(&env, "Go deep.", 2, || answer("Done."));
    let out = env
        .run(&["run", "Go deep.", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let all = runs(env.home.path());
    assert_eq!(all.len(), 2, "no grandchild run was started");
    let (parent_id, _) = parent(&all);
    let kids = children(&all, parent_id);
    assert_eq!(kids.len(), 1);
    let (_, child_events) = kids[0];
    // The child's own agent server knows it is one level down and refuses, clearly.
    let refused = only(child_events, "tool_call_finished");
    assert_eq!(refused["tool"], "agent__run");
    assert_eq!(refused["is_error"], true);
    let output = refused["output"].as_str().unwrap();
    assert!(
        output.contains("already a sub-agent at the deepest level allowed (max depth 1)"),
        "{output}"
    );
    assert!(
        !env.server
            .model_requests()
            .iter()
            .any(|r| goal_of(r) == "Go deeper still."),
        "the refused goal never reached a model"
    );
}

#[tokio::test]
async fn ctrl_c_in_the_parent_cancels_its_sub_agent() {
    let env = RunEnv::new().await;
    with_agent_server(&env);
    at_step(&env, "Delegate and wait.", 1, || {
        calls(&[("p_wait", "agent__run", r#"{"goal":"Think forever."}"#)])
    });
    // The child's model call never ends by itself.
    let never = Gate::new();
    at_step(&env, "Think forever.", 1, move || {
        MockResponse::sse_chunks(AnthropicTurn::new().text(&["…"]).finish_events("end_turn"))
            .pause_after(1, &never)
    });
    let child = env
        .command(&["run", "Delegate and wait.", "--output-format", "jsonl"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !env
        .server
        .model_requests()
        .iter()
        .any(|r| goal_of(r) == "Think forever.")
    {
        assert!(
            Instant::now() < deadline,
            "the sub-agent never asked its model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("tern did not exit after Ctrl-C")
        .unwrap();
    assert_exit(&out, 130);
    assert!(
        env.server
            .wait_for_disconnect(Duration::from_secs(10))
            .await,
        "the sub-agent's model request was dropped"
    );
    let all = runs(env.home.path());
    assert_eq!(all.len(), 2);
    let (parent_id, parent_events) = parent(&all);
    assert_eq!(only(parent_events, "run_finished")["status"], "cancelled");
    let kids = children(&all, parent_id);
    assert_eq!(kids.len(), 1);
    let (child_id, child_events) = kids[0];
    let last = child_events.last().unwrap();
    assert_eq!(last["type"], "run_finished", "{last}");
    assert_eq!(last["status"], "cancelled", "{last}");
    // No result named the child (the call was cancelled): the trace still shows it.
    let trace = env.run(&["trace", parent_id]).await;
    let trace = String::from_utf8_lossy(&trace.stdout);
    let orphans = trace
        .find("sub-agent runs no call result names")
        .unwrap_or_else(|| panic!("{trace}"));
    assert!(
        trace[orphans..].contains(&format!("↳ run {child_id}")),
        "{trace}"
    );
    // The agent server (its command line names the parent run) and everything under it ended.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !tern_e2e::run_env::pids_with(parent_id).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the agent server is still running"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
