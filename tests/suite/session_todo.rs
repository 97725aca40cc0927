//! The todo list as part of the session (issue 20): the host points the todo server at
//! `$TERN_HOME/sessions/<session>.todo.json`, reports each change as a `todo_updated` event
//! (JSONL, trace), keeps the list across `--continue`, and carries it through a compaction.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{RecordedRequest, script::AnthropicTurn};

const LIST: &str = r#"{"todos":[{"id":"1","text":"Read the code","status":"in_progress"},{"id":"2","text":"Fix the bug","status":"pending"}]}"#;

fn write_todos(env: &RunEnv, id: &str, args: &str) {
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(id, "todo__write", &[args])
            .finish("tool_use"),
    );
}

fn jsonl(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn a_todo_write_is_a_todo_updated_event_and_the_list_is_kept_for_continue() {
    let env = RunEnv::new().await;
    write_todos(&env, "toolu_w1", LIST);
    // Writing the same list again changes nothing: no second event.
    write_todos(&env, "toolu_w2", LIST);
    env.answer("Planned.");
    let out = env
        .run(&["run", "plan the fix", "--output-format", "jsonl"])
        .await;
    assert_exit(&out, 0);
    let events = jsonl(&out.stdout);
    let updates = of_type(&events, "todo_updated");
    assert_eq!(updates.len(), 1, "one change, one event: {updates:?}");
    let update = updates[0];
    assert_eq!(update["todos"][0]["text"], "Read the code");
    assert_eq!(update["todos"][0]["status"], "in_progress");
    assert_eq!(update["todos"][1]["status"], "pending");
    assert_eq!(update["counts"]["pending"], 1);
    // The events file has it too, and the trace shows it.
    let recorded = env.events();
    assert_eq!(of_type(&recorded, "todo_updated").len(), 1);
    let run_id = recorded[0]["run_id"].as_str().unwrap().to_string();
    let session = recorded[0]["session_id"].as_str().unwrap().to_string();
    let trace = env.run(&["trace", &run_id]).await;
    assert_exit(&trace, 0);
    let trace = String::from_utf8_lossy(&trace.stdout);
    assert!(
        trace.contains("todo · 2 item(s) · 0/2 done · now: Read the code"),
        "{trace}"
    );
    // The list lives beside the session's transcript.
    let state = env
        .home
        .path()
        .join("sessions")
        .join(format!("{session}.todo.json"));
    let saved = std::fs::read_to_string(&state).unwrap_or_else(|e| panic!("{state:?}: {e}"));
    assert!(saved.contains("Fix the bug"), "{saved}");

    // A continued session's todo server has the list back.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r", "todo__read", &["{}"])
            .finish("tool_use"),
    );
    env.answer("Still on it.");
    let out = env
        .run(&[
            "run",
            "--continue",
            "where were we?",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let events = jsonl(&out.stdout);
    assert_eq!(events[0]["session_id"], session.as_str());
    assert!(
        of_type(&events, "todo_updated").is_empty(),
        "a read changes nothing"
    );
    let results = super::run::tool_results(env.server.requests().last().unwrap());
    let (_, text, is_error) = results
        .iter()
        .find(|(id, _, _)| id == "toolu_r")
        .unwrap_or_else(|| panic!("{results:?}"));
    assert!(!is_error, "{text}");
    assert!(
        text.contains("[>] 1: Read the code (in progress)"),
        "{text}"
    );
    assert!(text.contains("[ ] 2: Fix the bug"), "{text}");

    // A new session starts with an empty list.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r2", "todo__read", &["{}"])
            .finish("tool_use"),
    );
    env.answer("Nothing planned.");
    let out = env.run(&["run", "anything planned?"]).await;
    assert_exit(&out, 0);
    let results = super::run::tool_results(env.server.requests().last().unwrap());
    assert!(
        results[0].1.contains("The todo list is empty."),
        "{results:?}"
    );
}

fn is_summary(request: &RecordedRequest) -> bool {
    request.body.windows(12).any(|w| w == b"tern:compact")
}

/// In the REPL: the update is drawn as a checklist, `/todo` shows the list, and after
/// `/compact` the summary message the next request starts with carries it.
#[tokio::test]
async fn the_repl_shows_the_list_and_a_compaction_summary_carries_it() {
    let env = RunEnv::new().await;
    env.server.respond_when(is_summary, |_| {
        AnthropicTurn::new()
            .text(&["Goal: plan the fix. Nothing done yet."])
            .finish("end_turn")
    });
    write_todos(&env, "toolu_w", LIST);
    env.answer("Planned.");
    env.answer("Hi.");
    env.answer("Going on.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "plan the fix\r"},
        {"expect": "Todo · 0/2 done"},
        {"expect": "Planned."},
        {"expect": "tern> "},
        {"send": "say hi\r"},
        {"expect": "Hi."},
        {"expect": "tern> "},
        {"send": "/todo\r"},
        {"expect": "▶ Read the code"},
        {"expect": "tern> "},
        {"send": "/compact\r"},
        {"expect": "tern> "},
        {"send": "go on\r"},
        {"expect": "Going on."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let screen = report["output"].as_str().unwrap_or_default().to_string();
    assert!(screen.contains("☐ Fix the bug"), "{screen}");
    assert!(
        env.server.model_requests().iter().any(is_summary),
        "/compact asked for a summary"
    );
    let requests: Vec<RecordedRequest> = env
        .server
        .model_requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect();
    let last = requests.last().unwrap().json();
    let first = last["messages"][0].to_string();
    assert!(first.contains("Summary of the work so far"), "{first}");
    assert!(
        first.contains("The todo list (0/2 done;"),
        "the summary message carries the list: {first}"
    );
    assert!(first.contains("[>] Read the code (in progress)"), "{first}");
    assert!(first.contains("[ ] Fix the bug"), "{first}");
}

#[tokio::test]
async fn after_clear_the_running_todo_server_keeps_the_new_sessions_list() {
    let env = RunEnv::new().await;
    write_todos(&env, "toolu_w", LIST);
    env.answer("Planned.");
    // After /clear: the model reads the list (the new session has none), then writes its own.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_r", "todo__read", &["{}"])
            .finish("tool_use"),
    );
    let fresh = r#"{"todos":[{"id":"a","text":"Something else","status":"pending"}]}"#;
    write_todos(&env, "toolu_w2", fresh);
    env.answer("New plan.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "plan the fix\r"},
        {"expect": "Planned."},
        {"expect": "tern> "},
        {"send": "/clear\r"},
        {"expect": "conversation cleared"},
        {"expect": "tern> "},
        {"send": "/todo\r"},
        {"expect": "no todo list in this session yet"},
        {"expect": "tern> "},
        {"send": "start over\r"},
        {"expect": "New plan."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    // The new session's todo__read found nothing: the old list stayed with the old session.
    let requests = env.server.model_requests();
    let read = requests
        .iter()
        .find(|r| r.json()["messages"].to_string().contains("toolu_r\""))
        .expect("the request after todo__read");
    let results = super::run::tool_results(read);
    let (_, text, _) = results.iter().find(|(id, _, _)| id == "toolu_r").unwrap();
    assert!(text.contains("The todo list is empty."), "{results:?}");
    // One file per session, each with its own list.
    let sessions = env.home.path().join("sessions");
    let mut lists: Vec<String> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".todo.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    lists.sort();
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(
        lists
            .iter()
            .any(|l| l.contains("Read the code") && !l.contains("Something else")),
        "{lists:?}"
    );
    assert!(
        lists
            .iter()
            .any(|l| l.contains("Something else") && !l.contains("Read the code")),
        "{lists:?}"
    );
}

/// Issue 20: "the terminal shows the list as a checklist that updates in place". Two updates in
/// a row (the model ticks an item off right after writing the list): the pyte screen shows one
/// checklist, in its latest state, not two stacked lists.
#[tokio::test]
async fn consecutive_updates_redraw_one_checklist_in_place() {
    let env = RunEnv::new().await;
    // Only the todo server, ready before the first prompt: a server coming up mid-turn prints
    // a notice between the two lists (then the second is printed below, compactly — the
    // unit tests in `render::terminal::todo` cover that case).
    env.add_servers(
        "[mcp_servers.todo]\nrequired = true\n[mcp_servers.fs]\nenabled = false\n\
         [mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.skills]\nenabled = false\n[mcp_servers.plan]\nenabled = false\n\
         [mcp_servers.agent]\nenabled = false\n",
    );
    write_todos(&env, "toolu_w1", LIST);
    let ticked = r#"{"todos":[{"id":"1","text":"Read the code","status":"done"},{"id":"2","text":"Fix the bug","status":"in_progress"}]}"#;
    write_todos(&env, "toolu_w2", ticked);
    env.answer("Working on the fix.");
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "plan the fix\r"},
        {"expect": "Working on the fix."},
        {"expect": "tern> "},
        {"screen": "Todo · 1/2 done", "hold": 0.3},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let screen = report["screen"].as_str().unwrap_or_default();
    // Both lists were drawn (the raw output has both headings)…
    let output = report["output"].as_str().unwrap_or_default();
    assert!(output.contains("Todo · 0/2 done"), "{output}");
    // …but the screen shows one: the second was drawn over the first, and over its call line.
    assert_eq!(screen.matches("☰ Todo").count(), 1, "{screen}");
    assert!(!screen.contains("0/2 done"), "{screen}");
    assert!(!screen.contains("todo__write"), "{screen}");
    let rows: Vec<&str> = screen
        .lines()
        .map(str::trim_end)
        .skip_while(|l| !l.contains("☰ Todo"))
        .take_while(|l| !l.is_empty() && !l.contains("Working on the fix."))
        .collect();
    insta::assert_snapshot!(rows.join("\n"));
}
