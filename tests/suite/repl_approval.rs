//! The REPL's approval question, through a pseudo-terminal (issue 26, item 1): what a call will
//! do is on screen before it runs (and the file is untouched until the answer), each menu
//! choice does what it says and writes its rule where the screen says, and Ctrl-C or Esc at the
//! question cancels the turn without leaving a reader that swallows the next typed line.

use serde_json::{Value, json};
use tern_model::mock::script::AnthropicTurn;

use super::repl::drive_with;
use tern_e2e::run_env::RunEnv;

/// The last user message of a request, as JSON text.
fn last_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(Value::to_string)
        .unwrap_or_default()
}

/// A scratch project whose fs and shell servers are up before the first prompt (the REPL does
/// not wait for optional servers, and a loaded machine may answer before they are).
async fn env() -> RunEnv {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.fs]\nrequired = true\n[mcp_servers.shell]\nrequired = true\n");
    env
}

fn decision(env: &RunEnv) -> Value {
    env.events()
        .into_iter()
        .find(|e| e["type"] == "permission_decided")
        .expect("no permission decision")
}

#[tokio::test]
async fn an_edit_shows_its_diff_before_it_runs_and_the_project_rule_is_written_where_named() {
    let env = env().await;
    std::fs::write(env.dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_e",
                "fs__edit_file",
                &[r#"{"path":"a.txt","old_string":"two","new_string":"2"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Edited.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "edit a.txt\r"},
        {"expect": "Esc cancels the turn"},
        {"screen": "--- a.txt", "hold": 1.0},
        {"screen": "-two"},
        {"screen": "+2"},
        // The diff is of the change to come: the file is as it was.
        {"file": "a.txt", "equals": "one\ntwo\nthree\n"},
        {"screen": "don't ask again for: `fs__edit_file(path: "},
        {"screen": "2. Yes, and don't ask again in this project (.tern/config.toml)"},
        {"send": "2"},
        {"expect": "Edited."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("a.txt")).unwrap(),
        "one\n2\nthree\n"
    );
    let project = std::fs::read_to_string(env.dir.path().join(".tern/config.toml")).unwrap();
    assert!(project.contains("fs__edit_file(path: "), "{project}");
    let user = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(!user.contains("fs__edit_file"), "{user}");
    // The file tern created at the person's request is trusted, so the rule holds next run.
    let trust = std::fs::read_to_string(env.home.path().join("trusted.json")).unwrap();
    assert!(trust.contains("config_sha256"), "{trust}");
    env.answer("Loaded.");
    let out = env.run(&["run", "check the config loads"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("ignored"), "{stderr}");
    assert_eq!(decision_of_first_run(&env)["rule"], "user:always");
}

/// The permission decision of the REPL run (the oldest run).
fn decision_of_first_run(env: &RunEnv) -> Value {
    let runs = env.home.path().join("runs");
    let mut dirs: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("events.jsonl").is_file())
        .collect();
    dirs.sort();
    let text = std::fs::read_to_string(dirs[0].join("events.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "permission_decided")
        .expect("no permission decision")
}

#[tokio::test]
async fn a_long_new_file_is_folded_and_arrows_choose_the_rule_for_all_projects() {
    let env = env().await;
    let content: String = (0..60).map(|i| format!("line {i}\n")).collect();
    let args = json!({"path": "n.txt", "content": content}).to_string();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_w", "fs__write_file", &[&args])
            .finish("tool_use"),
    );
    env.answer("Written.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "write n.txt\r"},
        {"expect": "Esc cancels the turn"},
        {"screen": "new file n.txt (60 lines)", "hold": 1.0},
        {"screen": "+line 0"},
        {"screen": "… 38 more lines"},
        {"file": "n.txt", "equals": null},
        {"screen": "› 1. Yes"},
        {"send": "\u{1b}[B"},
        {"screen": "› 2. Yes, and don't ask again in this project", "hold": 0.5},
        {"send": "\u{1b}[B"},
        {"screen": "› 3. Yes, and don't ask again in all projects", "hold": 0.5},
        {"send": "\r"},
        {"expect": "Written."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    assert_eq!(
        std::fs::read_to_string(env.dir.path().join("n.txt")).unwrap(),
        content
    );
    let user = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(user.contains("fs__write_file(path: "), "{user}");
    assert!(!env.dir.path().join(".tern/config.toml").exists());
    assert_eq!(decision(&env)["rule"], "user:always");
}

#[tokio::test]
async fn a_command_shows_where_it_runs_an_unknown_key_asks_again_and_no_tells_the_model_why() {
    let env = env().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_s",
                "shell__run",
                &[r#"{"command":"echo hi > out.txt && /usr/bin/wc -l out.txt"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Understood.");
    let dir = env.dir.path().display().to_string();
    let script = json!([
        {"expect": "tern> "},
        {"send": "write out.txt\r"},
        {"expect": "Esc cancels the turn"},
        {"screen": "$ echo hi > out.txt && /usr/bin/wc -l out.txt", "hold": 1.0},
        // As the shell parses it: two commands, the second's program by its name.
        {"screen": "runs: echo hi · wc -l out.txt"},
        {"screen": format!("in {dir} · sandbox: workspace-write, network off")},
        // `ok` is no answer: the menu stays and says so.
        {"send": "o"},
        {"expect": "that key means nothing here"},
        {"file": "out.txt", "equals": null},
        {"send": "4"},
        {"expect": "Tell the model why"},
        {"send": "use printf instead\r"},
        {"expect": "Understood."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    assert!(!env.dir.path().join("out.txt").exists());
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    let result = last_message(&requests[1].json());
    assert!(result.contains("use printf instead"), "{result}");
    assert_eq!(decision(&env)["decision"], "deny");
}

#[tokio::test]
async fn ctrl_c_or_esc_at_the_question_cancels_the_turn_and_the_next_typed_line_is_sent() {
    let env = env().await;
    for id in ["toolu_1", "toolu_2"] {
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use(id, "shell__run", &[r#"{"command":"touch never.txt"}"#])
                .finish("tool_use"),
        );
    }
    env.answer("Got the third line.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "first line\r"},
        {"expect": "Esc cancels the turn"},
        {"send": "\u{3}"},
        {"expect": "(cancelled)"},
        {"expect": "tern> "},
        // The regression: this line used to be swallowed by the question's reader.
        {"send": "second line after ctrl-c\r"},
        {"expect": "Esc cancels the turn"},
        {"send": "\u{1b}"},
        {"expect": "(cancelled)"},
        {"expect": "tern> "},
        {"send": "third line after esc\r"},
        {"expect": "Got the third line."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    assert!(!env.dir.path().join("never.txt").exists());
    let requests = env.server.requests();
    assert_eq!(requests.len(), 3, "one request per typed line");
    let second = last_message(&requests[1].json());
    assert!(second.contains("second line after ctrl-c"), "{second}");
    let third = last_message(&requests[2].json());
    assert!(third.contains("third line after esc"), "{third}");
}
