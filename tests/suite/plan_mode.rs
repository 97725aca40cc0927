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

/// The REPL (issue 20, item 1): `/mode plan`, the model's `plan__exit`, the approval question,
/// "approve and switch to accept-edits" — and the next turn's `fs__write_file` runs without
/// asking. The plan is saved beside the session's transcript.
#[tokio::test]
async fn in_the_repl_an_approved_plan_switches_the_mode_and_the_next_write_runs() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    call(
        &env,
        "toolu_p0",
        "plan__exit",
        &serde_json::json!({"plan": "1. Guess."}),
    );
    call(
        &env,
        "toolu_p",
        "plan__exit",
        &serde_json::json!({"plan": PLAN}),
    );
    call(
        &env,
        "toolu_w",
        "fs__write_file",
        &serde_json::json!({"path": "a.txt", "content": "changed\n"}),
    );
    env.answer("Done: a.txt changed.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/mode\r"},
        {"expect": "mode: default"},
        {"expect": "tern> "},
        {"send": "/mode turbo\r"},
        {"expect": "unknown mode `turbo`"},
        {"expect": "tern> "},
        {"send": "/mode plan\r"},
        {"expect": "mode: plan"},
        {"expect": "tern> "},
        {"send": "change a.txt\r"},
        {"expect": "Guess."},
        {"expect": "plan [1-4]> "},
        {"send": "3\r"},
        {"expect": "feedback> "},
        {"send": "say how you will check it\r"},
        {"expect": "Check it with"},
        {"expect": "plan [1-4]> "},
        {"send": "9\r"},
        {"expect": "answer 1, 2, 3 or 4"},
        {"send": "2\r"},
        {"expect": "plan approved; mode: accept-edits"},
        {"expect": "Done: a.txt changed."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("a.txt")).unwrap(),
        "changed\n",
        "the write after approval ran"
    );
    let requests = env.server.requests();
    let seen: Vec<String> = requests
        .iter()
        .map(|r| r.json()["messages"].to_string())
        .collect();
    assert_eq!(
        requests.len(),
        4,
        "plan, revised plan, write, answer: {seen:#?}"
    );
    let planning = tool_names(&requests[0]);
    assert!(
        !planning.iter().any(|t| t == "fs__write_file"),
        "{planning:?}"
    );
    // "Keep planning" sends the feedback, still in plan mode.
    let revising = requests[1].json();
    assert!(
        revising["messages"]
            .to_string()
            .contains("say how you will check it"),
        "{revising}"
    );
    assert!(revising["system"].to_string().contains("plan mode"));
    assert!(
        !tool_names(&requests[1])
            .iter()
            .any(|t| t == "fs__write_file")
    );
    let requests = &requests[1..];
    let acting = tool_names(&requests[1]);
    assert!(acting.iter().any(|t| t == "fs__write_file"), "{acting:?}");
    assert!(!acting.iter().any(|t| t == "plan__exit"), "{acting:?}");
    let approved = requests[1].json()["messages"].to_string();
    assert!(
        approved.contains("The user approved your plan"),
        "{approved}"
    );
    assert!(approved.contains("todo__write"), "{approved}");
    assert!(
        !requests[1].json()["system"]
            .to_string()
            .contains("plan mode")
    );
    let saved: Vec<_> = all_files(&env.home.path().join("sessions"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".plan.md"))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(std::fs::read_to_string(&saved[0]).unwrap(), PLAN);
}

#[tokio::test]
async fn an_empty_plan_is_refused_by_the_plan_server_and_the_turn_goes_on() {
    let env = RunEnv::new().await;
    call(
        &env,
        "toolu_e",
        "plan__exit",
        &serde_json::json!({"plan": "  "}),
    );
    env.answer("I need to look first.");
    let out = env
        .run(&[
            "run",
            "--mode",
            "plan",
            "plan it",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("plan_proposed"), "{stdout}");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let results = super::run::tool_results(&requests[1]);
    assert!(results[0].2, "{results:?}");
    assert!(results[0].1.contains("The plan is empty."), "{results:?}");
}

/// Read-only mode (as for `answer-from-code`-style questions): only tools annotated read-only
/// are offered — the gateway denies every other whatever the rules say, and a small model
/// offered `shell__run` spent a real eval's every step on that refusal. A forced call of a
/// hidden tool is still refused by the gateway.
#[tokio::test]
async fn read_only_mode_offers_only_read_only_tools_and_still_refuses_a_forced_write() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    let before = snapshot(&env);
    call(
        &env,
        "toolu_sh",
        "shell__run",
        &serde_json::json!({"command": "echo changed > a.txt"}),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Nothing written."])
            .finish("end_turn"),
    );
    let out = env
        .run(&[
            "run",
            "--mode",
            "read-only",
            "--allow",
            "shell__run",
            "look",
        ])
        .await;
    assert_exit(&out, 0);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let offered = tool_names(&requests[0]);
    for wanted in ["fs__read_file", "fs__grep", "fs__glob", "fs__list_dir"] {
        assert!(
            offered.iter().any(|t| t == wanted),
            "{wanted} in {offered:?}"
        );
    }
    for hidden in [
        "fs__write_file",
        "fs__edit_file",
        "shell__run",
        "todo__write",
        "plan__exit",
    ] {
        assert!(
            !offered.iter().any(|t| t == hidden),
            "{hidden} in {offered:?}"
        );
    }
    let results = super::run::tool_results(&requests[1]);
    let (_, text, is_error) = results
        .iter()
        .find(|(id, _, _)| id == "toolu_sh")
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(is_error, "{text}");
    assert!(text.contains("read-only"), "{text}");
    assert_eq!(snapshot(&env), before, "nothing written");
}

fn audit_tools(env: &RunEnv) -> Vec<String> {
    std::fs::read_to_string(env.home.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["tool"].as_str().map(String::from))
        .collect()
}

/// Choice 1 approves into default mode, and the approved plan seeds the todo list (issue 20:
/// "the approved plan is saved in the session and seeds the todo list"): its two list items
/// become the list through an audited `todo__write` the REPL makes through the gateway — the
/// checklist is drawn, the event recorded, and the model's own `todo__read` returns them.
#[tokio::test]
async fn choice_1_approves_into_default_mode_and_the_plans_steps_seed_the_todo_list() {
    let env = RunEnv::new().await;
    // Every server up before the first prompt: no "[server … ready]" notice lands in the
    // snapshot of the menu and the checklist.
    env.add_servers(
        "[mcp_servers.fs]\nrequired = true\n[mcp_servers.shell]\nrequired = true\n\
         [mcp_servers.todo]\nrequired = true\n[mcp_servers.plan]\nrequired = true\n\
         [mcp_servers.skills]\nenabled = false\n[mcp_servers.agent]\nenabled = false\n",
    );
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    call(
        &env,
        "toolu_p",
        "plan__exit",
        &serde_json::json!({"plan": PLAN}),
    );
    call(&env, "toolu_r", "todo__read", &serde_json::json!({}));
    env.answer("Starting with step 1.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/mode plan\r"},
        {"expect": "mode: plan"},
        {"expect": "tern> "},
        {"send": "change a.txt\r"},
        {"expect": "plan [1-4]> "},
        {"send": "1\r"},
        {"expect": "plan approved; mode: default"},
        {"expect": "Todo · 0/2 done"},
        {"expect": "Starting with step 1."},
        {"expect": "tern> "},
        {"send": "/mode\r"},
        {"expect": "mode: default"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let screen = report["screen"].as_str().unwrap_or_default();
    assert!(
        screen.contains("☐ Change `a.txt` to say *changed*."),
        "{screen}"
    );
    assert!(screen.contains("☐ Check it with `cat a.txt`."), "{screen}");
    // The menu, the answer, and the seeded checklist under it.
    let rows: Vec<&str> = screen
        .lines()
        .map(str::trim_end)
        .skip_while(|l| !l.starts_with("Approve this plan?"))
        .take_while(|l| !l.contains("todo__read") && !l.contains("Starting"))
        .collect();
    insta::assert_snapshot!(rows.join("\n"));
    let requests = env.server.requests();
    assert_eq!(requests.len(), 3, "plan, todo__read, answer");
    // Default mode from the approval on: writes offered, no plan-mode prompt.
    let acting = tool_names(&requests[1]);
    assert!(acting.iter().any(|t| t == "fs__write_file"), "{acting:?}");
    assert!(
        !requests[1].json()["system"]
            .to_string()
            .contains("plan mode")
    );
    let approved = requests[1].json()["messages"].to_string();
    assert!(
        approved.contains("Its 2 steps are your todo list now"),
        "{approved}"
    );
    // The model's todo__read, answered by the todo server, has the plan's steps.
    let results = super::run::tool_results(&requests[2]);
    let (_, text, is_error) = results.iter().find(|(id, _, _)| id == "toolu_r").unwrap();
    assert!(!is_error, "{text}");
    assert!(text.contains("Change `a.txt` to say *changed*."), "{text}");
    assert!(text.contains("Check it with `cat a.txt`."), "{text}");
    // The seed was an MCP call through the gateway: audited, and a todo_updated event.
    assert!(
        audit_tools(&env).iter().any(|t| t == "todo__write"),
        "{:?}",
        audit_tools(&env)
    );
    let events = env.events();
    let updates = of_type(&events, "todo_updated");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["todos"][1]["text"], "Check it with `cat a.txt`.");
    assert_eq!(updates[0]["todos"][1]["id"], "2");
    assert_eq!(updates[0]["todos"][0]["status"], "pending");
    // Nothing was written: approving is not acting.
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("a.txt")).unwrap(),
        "original\n"
    );
}

/// Choice 4 drops the plan: nothing is sent, saved or seeded, and the session stays in plan
/// mode.
#[tokio::test]
async fn choice_4_cancels_keeps_nothing_and_stays_in_plan_mode() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("a.txt"), "original\n").unwrap();
    call(
        &env,
        "toolu_p",
        "plan__exit",
        &serde_json::json!({"plan": PLAN}),
    );
    let before = snapshot(&env);
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/mode plan\r"},
        {"expect": "mode: plan"},
        {"expect": "tern> "},
        {"send": "change a.txt\r"},
        {"expect": "plan [1-4]> "},
        {"send": "4\r"},
        {"expect": "plan dropped; still in plan mode"},
        {"expect": "tern> "},
        {"send": "/mode\r"},
        {"expect": "mode: plan"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert_eq!(env.server.requests().len(), 1, "nothing sent after cancel");
    assert_eq!(snapshot(&env), before, "the workspace is unchanged");
    let sessions = all_files(&env.home.path().join("sessions"));
    assert!(
        !sessions
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".plan.md")),
        "{sessions:?}"
    );
    assert!(of_type(&env.events(), "todo_updated").is_empty());
    assert!(!audit_tools(&env).iter().any(|t| t == "todo__write"));
}
