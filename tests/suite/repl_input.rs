//! REPL input (issue 26, item 3): `/model NAME` swaps the model of the next request, and
//! Shift-Tab cycles the permission mode, which the next request's tools and system prompt
//! follow. Real `tern` in a PTY against the mock model.

use serde_json::{Value, json};
use tern_e2e::run_env::RunEnv;
use tern_model::mock::{RecordedRequest, script::AnthropicTurn};

use super::repl::drive_with;

/// Shift-Tab as a terminal sends it.
const SHIFT_TAB: &str = "\u{1b}[Z";

fn tool_names(request: &RecordedRequest) -> Vec<String> {
    request.json()["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

fn last_message(request: &RecordedRequest) -> String {
    request.json()["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)
        .to_string()
}

#[tokio::test]
async fn slash_model_sends_the_next_request_to_the_new_model_and_the_prompt_names_it() {
    let env = RunEnv::new().await;
    env.answer("First answer.");
    env.answer("Second answer.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "hi\r"},
        {"expect": "First answer."},
        {"expect": "tern> "},
        {"send": "/model\r"},
        {"expect": "model: "},
        {"expect": "tern> "},
        {"send": "/model\u{20}\r"},
        {"expect": "tern> "},
        {"send": "/model not-in-any-catalog-7\r"},
        {"expect": "model: not-in-any-catalog-7 (from the next request)"},
        {"expect": "[not-in-any-catalog-7] tern> "},
        {"send": "again\r"},
        {"expect": "Second answer."},
        {"screen": "[not-in-any-catalog-7] tern>", "hold": 0.5},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    let models: Vec<String> = env
        .server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models.len(), 2, "{models:?}");
    assert_ne!(models[0], "not-in-any-catalog-7");
    assert_eq!(models[1], "not-in-any-catalog-7", "passed through as typed");
}

#[tokio::test]
async fn shift_tab_cycles_default_accept_edits_plan_and_the_next_turn_follows() {
    let env = RunEnv::new().await;
    // The turns below use fs's tools: it must be up before the first prompt is answered.
    env.add_servers("[mcp_servers.fs]\nrequired = true\n");
    // accept-edits: the write runs without a question.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_w",
                "fs__write_file",
                &[&json!({"path": "a.txt", "content": "edited"}).to_string()],
            )
            .finish("tool_use"),
    );
    env.answer("Wrote it.");
    env.answer("Only looked.");
    env.answer("Back to default.");
    let script = json!([
        {"expect": "tern> "},
        {"send": SHIFT_TAB},
        {"expect": "[accept-edits] tern> "},
        {"send": "write a.txt\r"},
        {"expect": "Wrote it."},
        {"expect": "[accept-edits] tern> "},
        {"file": "a.txt", "equals": "edited"},
        // Text typed before the key is kept on the redrawn prompt.
        {"send": "lo"},
        {"send": SHIFT_TAB},
        {"expect": "[plan] tern> "},
        {"screen": "[plan] tern> lo", "hold": 0.3},
        {"send": "ok\r"},
        {"expect": "Only looked."},
        {"expect": "[plan] tern> "},
        {"send": SHIFT_TAB},
        {"send": "/mode\r"},
        {"expect": "mode: default"},
        {"send": "go\r"},
        {"expect": "Back to default."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive_with(&env, &script, &[]).await;
    let output = report["output"].as_str().unwrap_or("");
    assert!(!output.contains("Allow?"), "accept-edits asked: {output}");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4, "write, answer, plan turn, default turn");
    // The plan-mode turn: read-only tools and plan__exit only, and the plan-mode prompt.
    let planning = &requests[2];
    assert!(
        last_message(planning).contains("look"),
        "{}",
        last_message(planning)
    );
    let tools = tool_names(planning);
    assert!(tools.iter().any(|t| t == "fs__read_file"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "plan__exit"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "fs__write_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "shell__run"), "{tools:?}");
    let system = planning.json()["system"].to_string();
    assert!(system.contains("The session is in plan mode"), "{system}");
    // Back in default: the write tools again, no plan__exit, no plan-mode prompt.
    let after = &requests[3];
    let tools = tool_names(after);
    assert!(tools.iter().any(|t| t == "fs__write_file"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "plan__exit"), "{tools:?}");
    assert!(!after.json()["system"].to_string().contains("plan mode"));
}

/// `@` + Tab completes a project file fuzzily; the mentioned file is attached to the message
/// as read by `fs__read_file` through the gateway (an event and an audit line like any call).
#[tokio::test]
async fn at_path_completes_fuzzily_and_attaches_the_file_through_the_gateway() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.fs]\nrequired = true\n");
    std::fs::create_dir_all(env.dir.path().join("src")).unwrap();
    std::fs::write(
        env.dir.path().join("src/notes_about_login.md"),
        "the login flakes on Tuesdays\n",
    )
    .unwrap();
    std::fs::write(env.dir.path().join("README.txt"), "readme\n").unwrap();
    env.answer("Summarised.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "summarise @lgin"},
        {"send": "\t"},
        {"screen": "tern> summarise @src/notes_about_login.md", "hold": 0.5},
        {"send": " please\r"},
        {"expect": "(attached @src/notes_about_login.md)"},
        {"expect": "Summarised."},
        {"expect": "tern> "},
        {"send": "look at @nothing-here.md\r"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2, "both lines were sent");
    let first = last_message(&requests[0]);
    assert!(
        first.contains("summarise @src/notes_about_login.md please"),
        "{first}"
    );
    assert!(
        first.contains(r#"<file path=\"src/notes_about_login.md\">"#),
        "{first}"
    );
    assert!(first.contains("the login flakes on Tuesdays"), "{first}");
    // A word naming no file stays a word.
    assert!(!last_message(&requests[1]).contains("<file"));
    // The read was a gateway call: decided and audited like the model's calls.
    let events = env.events();
    let reads: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "audit" && e["record"]["tool"] == "fs__read_file")
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0]["record"]["is_error"], false);
    assert!(
        reads[0]["record"]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("user-mention-")
    );
    let audit = std::fs::read_to_string(env.home.path().join("audit.jsonl")).unwrap_or_default();
    assert!(audit.contains("user-mention-"), "audited: {audit}");
}

/// Ctrl-G opens the typed text in `$EDITOR` (`$VISUAL` unset); what the editor leaves in the
/// file becomes the input line, which Enter then sends.
#[tokio::test]
async fn ctrl_g_edits_the_input_in_the_editor() {
    let env = RunEnv::new().await;
    // An "editor" that rewrites the file it is given, as a person would.
    let script_path = env.home.path().join("fake-editor.sh");
    std::fs::write(
        &script_path,
        "#!/bin/sh\nprintf 'rewritten: %s, by the editor\\n' \"$(cat \"$1\")\" > \"$1\"\n",
    )
    .unwrap();
    let editor = format!("sh {}", script_path.display());
    env.answer("Got the edited text.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "draft"},
        {"send": "\u{7}"},
        {"screen": "tern> rewritten: draft, by the editor", "hold": 0.8},
        {"send": "\r"},
        {"expect": "Got the edited text."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    super::repl::drive_with_vars(
        &env,
        &script,
        &[],
        &[("EDITOR", editor.as_str()), ("VISUAL", "")],
    )
    .await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    let sent = last_message(&requests[0]);
    assert!(sent.contains("rewritten: draft, by the editor"), "{sent}");
    // The file the editor was given is gone.
    let left: Vec<_> = std::fs::read_dir(env.home.path().join("tmp"))
        .map(|d| d.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// At the prompt a lone Esc leaves the next key alone (no `^[`, nothing eaten), and Esc twice
/// lists the turns to rewind to with `/rewind ` ready on the line.
#[tokio::test]
async fn esc_alone_eats_nothing_and_esc_esc_opens_rewind() {
    let env = RunEnv::new().await;
    env.answer("First.");
    env.answer("Second.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "hi\r"},
        {"expect": "First."},
        {"expect": "tern> "},
        {"send": "\u{1b}"},
        {"screen": "tern>", "hold": 0.7},
        {"send": "ok\r"},
        {"expect": "Second."},
        {"expect": "tern> "},
        {"send": "\u{1b}"},
        {"screen": "tern>", "hold": 0.2},
        {"send": "\u{1b}"},
        {"expect": "rewind with /rewind TURN"},
        {"screen": "tern> /rewind", "hold": 0.3},
        {"send": "\u{15}/exit\r"},
    ]);
    let report = drive_with(&env, &script, &[]).await;
    let output = report["output"].as_str().unwrap_or("");
    assert!(!output.contains("^["), "{output}");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let sent = last_message(&requests[1]);
    assert!(sent.contains(r#""text":"ok""#), "nothing eaten: {sent}");
}

/// Shift-Tab while a turn runs switches the mode for the turn's next request: pressed twice
/// during a `sleep`, the request after it is in plan mode, and so is the next prompt.
#[tokio::test]
async fn shift_tab_during_a_turn_changes_the_mode_of_its_next_request() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.shell]\nrequired = true\n[mcp_servers.fs]\nrequired = true\n");
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_s",
                "shell__run",
                &[&json!({"command": "sleep 1.5"}).to_string()],
            )
            .finish("tool_use"),
    );
    env.answer("Slept.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "wait a bit\r"},
        {"expect": "shell__run"},
        {"send": SHIFT_TAB},
        {"send": SHIFT_TAB},
        {"expect": "Slept."},
        {"expect": "[plan] tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &["--allow", "shell__*"]).await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        tool_names(&requests[0])
            .iter()
            .any(|t| t == "fs__write_file")
    );
    let after = tool_names(&requests[1]);
    assert!(!after.iter().any(|t| t == "fs__write_file"), "{after:?}");
    assert!(after.iter().any(|t| t == "plan__exit"), "{after:?}");
}

/// Issue 26: "Esc interrupts a running turn (a hint in the status line)". The answer stalls
/// mid-stream; the spinner line says `esc to interrupt`; Esc cancels the turn, and the next
/// typed line is sent as the next turn.
#[tokio::test]
async fn esc_interrupts_a_stalled_turn_the_spinner_says_so_and_the_next_line_is_sent() {
    let env = RunEnv::new().await;
    // message_start, ping, content_block_start, the first piece: then nothing more.
    let never = tern_model::mock::Gate::new();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Once upon a time,\n", "never shown"])
            .finish("end_turn")
            .pause_after(4, &never),
    );
    env.answer("The next answer.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "tell me a story\r"},
        {"expect": "Once upon a time,"},
        {"expect": "esc to interrupt", "timeout": 15},
        {"send": "\u{1b}"},
        {"expect": "(cancelled)", "timeout": 15},
        {"expect": "tern> "},
        {"send": "what next?\r"},
        {"expect": "The next answer."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let output = report["output"].as_str().unwrap_or_default();
    assert!(!output.contains("never shown"), "{output}");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2, "the stalled turn, then the typed line");
    let next = last_message(&requests[1]);
    assert!(next.contains("what next?"), "{next}");
    drop(never);
}
