//! Plan mode (issue 20, item 1): only read-only tools, the todo list and `plan__exit` are
//! offered; a write is refused at the gateway anyway; a successful `plan__exit` ends the turn
//! with a `plan_proposed` event, and a headless run prints the plan and exits 0 having written
//! nothing.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, all_files, assert_exit, of_type};
use tern_model::mock::{RecordedRequest, script::AnthropicTurn};

const PLAN: &str = "# Plan\n\n1. Change `a.txt` to say *changed*.\n2. Check it with `cat a.txt`.";

fn call(env: &RunEnv, id: &str, tool: &str, args: &Value) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(id, tool, &[&args.to_string()])
            .finish("tool_use"),
    );
}

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

fn snapshot(env: &RunEnv) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = all_files(env.dir.path())
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_default();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// Queues: a forced `fs__write_file` (refused), then `plan__exit`. Nothing after it: a loop
/// that went on after the plan would ask the mock for a turn it does not have.
fn queue_plan_run(env: &RunEnv) {
    call(
        env,
        "toolu_w",
        "fs__write_file",
        &serde_json::json!({"path": "a.txt", "content": "changed"}),
    );
    call(
        env,
        "toolu_p",
        "plan__exit",
        &serde_json::json!({"plan": PLAN}),
    );
}

#[tokio::test]
async fn a_headless_plan_run_offers_no_writes_refuses_one_prints_the_plan_and_changes_nothing() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    let before = snapshot(&env);
    queue_plan_run(&env);
    let out = env.run(&["run", "--mode", "plan", "change a.txt"]).await;
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Proposed plan:"), "{stdout}");
    assert!(stdout.contains("Check it with"), "{stdout}");

    let requests = env.server.requests();
    assert_eq!(requests.len(), 2, "the turn ends on plan__exit");
    let offered = tool_names(&requests[0]);
    for wanted in [
        "fs__read_file",
        "fs__grep",
        "todo__write",
        "todo__read",
        "plan__exit",
    ] {
        assert!(
            offered.iter().any(|t| t == wanted),
            "{wanted} in {offered:?}"
        );
    }
    for hidden in ["fs__write_file", "fs__edit_file", "shell__run"] {
        assert!(
            !offered.iter().any(|t| t == hidden),
            "{hidden} in {offered:?}"
        );
    }
    let system = requests[0].json()["system"].to_string();
    assert!(system.contains("The session is in plan mode"), "{system}");
    assert!(system.contains("plan__exit"), "{system}");

    let results = super::run::tool_results(&requests[1]);
    let (_, text, is_error) = results
        .iter()
        .find(|(id, _, _)| id == "toolu_w")
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(is_error, "{text}");
    assert!(text.contains("plan mode"), "{text}");
    assert_eq!(snapshot(&env), before, "a plan run writes nothing");
}

#[tokio::test]
async fn the_jsonl_stream_carries_the_plan_and_other_modes_do_not_offer_plan_exit() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    let before = snapshot(&env);
    queue_plan_run(&env);
    let out = env
        .run(&[
            "run",
            "-c",
            "permissions.mode=\"plan\"",
            "change a.txt",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let proposed = of_type(&events, "plan_proposed");
    assert_eq!(proposed.len(), 1, "{events:?}");
    assert_eq!(proposed[0]["plan"], PLAN);
    let denied: Vec<&Value> = of_type(&events, "permission_decided")
        .into_iter()
        .filter(|e| e["tool"] == "fs__write_file")
        .collect();
    assert_eq!(denied.len(), 1, "{events:?}");
    assert_eq!(denied[0]["decision"], "deny");
    assert_eq!(denied[0]["rule"], "mode:plan");
    assert_eq!(snapshot(&env), before);

    // Outside plan mode there is no plan to hand over: plan__exit is not offered, and the
    // system prompt says nothing of plan mode.
    env.answer("Hello.");
    let out = env.run(&["run", "hi"]).await;
    assert_exit(&out, 0);
    let last = env.server.requests().last().cloned().unwrap();
    let offered = tool_names(&last);
    assert!(offered.iter().any(|t| t == "fs__write_file"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "plan__exit"), "{offered:?}");
    assert!(!last.json()["system"].to_string().contains("plan mode"));
}
