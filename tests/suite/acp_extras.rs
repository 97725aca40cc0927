//! `tern acp` beyond the first round (issue 21 leftovers), with the official TypeScript SDK as
//! the editor (`tests/acp/client.mjs`, helpers from `suite::acp`): thinking as
//! `agent_thought_chunk`s; tern's own slash commands offered and run over ACP.

use serde_json::json;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

use super::acp::{asked, editor, text_of, updates};

#[tokio::test]
async fn thinking_streams_to_the_editor_as_thought_chunks() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .thinking(&["Plan: ", "answer briefly."])
            .text(&["Hello ", "editor."])
            .finish("end_turn"),
    );
    let report = editor(&env, json!({"prompts": [{"text": "hi"}]})).await;
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(
        text_of(&report, "agent_thought_chunk"),
        "Plan: answer briefly."
    );
    assert_eq!(text_of(&report, "agent_message_chunk"), "Hello editor.");
    // Live, in order: every thought chunk comes before the first message chunk.
    let all = report["updates"].as_array().unwrap();
    let last_thought = all
        .iter()
        .rposition(|u| u["sessionUpdate"] == "agent_thought_chunk");
    let first_text = all
        .iter()
        .position(|u| u["sessionUpdate"] == "agent_message_chunk");
    assert!(last_thought < first_text, "{report:#}");
    assert_eq!(updates(&report, "agent_thought_chunk").len(), 2);
}

#[tokio::test]
async fn tern_slash_commands_are_offered_and_answered_without_the_model() {
    let env = RunEnv::new().await;
    env.answer("Hello.");
    let plan = json!({"prompts": [
        {"text": "hi"},
        {"text": "/tools"},
        {"text": "/cost"},
        {"text": "/todo"},
    ]});
    let report = editor(&env, plan).await;
    for (i, p) in report["prompts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p["stopReason"], "end_turn", "prompt {i}: {report:#}");
    }
    // Only "hi" reached the model.
    assert_eq!(env.server.model_requests().len(), 1);
    let said = text_of(&report, "agent_message_chunk");
    assert!(said.starts_with("Hello."), "{said}");
    assert!(said.contains("fs__read_file"), "/tools: {said}");
    assert!(
        said.contains("call   1 (step 1)"),
        "/cost counted the one model call: {said}"
    );
    assert!(
        said.contains("no todo list in this session yet"),
        "/todo: {said}"
    );
    // The editor's command list has tern's commands that work without a terminal.
    let offered = updates(&report, "available_commands_update");
    let names: Vec<&str> =
        offered.last().expect("an available_commands_update")["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
    for name in [
        "compact", "context", "cost", "clear", "todo", "rewind", "diff",
    ] {
        assert!(names.contains(&name), "{name} offered: {names:?}");
    }
    for name in ["exit", "expand", "thinking", "mode"] {
        assert!(!names.contains(&name), "{name} is terminal-only: {names:?}");
    }
}

/// ACP v1 cannot tell an editor that a session's id changed, so over ACP `/clear` keeps the id
/// and starts the conversation anew inside it: the next request has none of the cleared
/// conversation, the events keep the editor's id, and `session/load` of that id replays only
/// what came after the clear.
#[tokio::test]
async fn clear_over_acp_keeps_the_editors_session_id_and_forgets_the_conversation() {
    let env = RunEnv::new().await;
    env.answer("Noted the alpha marker.");
    env.answer("Fresh start.");
    let report = editor(
        &env,
        json!({"prompts": [
            {"text": "remember alpha-marker-1"},
            {"text": "/clear"},
            {"text": "what do you remember?"},
        ]}),
    )
    .await;
    for (i, p) in report["prompts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p["stopReason"], "end_turn", "prompt {i}: {report:#}");
    }
    let session_id = report["session"]["sessionId"].as_str().unwrap().to_string();
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2, "/clear never reaches the model");
    let after = requests[1].json()["messages"].to_string();
    assert!(after.contains("what do you remember?"), "{after}");
    assert!(
        !after.contains("alpha-marker-1"),
        "the cleared conversation was sent again: {after}"
    );
    // Every event of the run, before and after the clear, names the editor's session.
    let events_dir = env.home.path().join("runs");
    let mut ids = std::collections::BTreeSet::new();
    for run in std::fs::read_dir(&events_dir).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(run.path().join("events.jsonl")) else {
            continue;
        };
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(id) = v["session_id"].as_str() {
                ids.insert(id.to_string());
            }
        }
    }
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        std::slice::from_ref(&session_id),
        "events took another session id"
    );

    // Loading the editor's id brings back the conversation after the clear only.
    env.answer("Still fresh.");
    let loaded = editor(
        &env,
        json!({
            "scenario": "load",
            "sessionId": session_id,
            "prompts": [{"text": "and now?"}],
        }),
    )
    .await;
    assert_eq!(loaded["prompts"][0]["stopReason"], "end_turn", "{loaded:#}");
    let replayed = text_of(&loaded, "user_message_chunk");
    assert!(replayed.contains("what do you remember?"), "{replayed}");
    assert!(!replayed.contains("alpha-marker-1"), "{replayed}");
    let last = env.server.model_requests().last().unwrap().json()["messages"].to_string();
    assert!(!last.contains("alpha-marker-1"), "{last}");
    assert!(last.contains("what do you remember?"), "{last}");
}

/// A custom command over ACP (issue 19): offered in `available_commands_update` with its
/// description and hint, run by `/NAME args` with its `model` for that turn only (the next
/// turn goes back to the session's model) and its `allowed-tools` for that turn only (the same
/// kind of call in the next turn asks the editor).
#[tokio::test]
async fn custom_commands_are_offered_and_run_with_their_model_and_tools_for_one_turn() {
    let env = RunEnv::new().await;
    let dir = env.home.path().join("commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ship.md"),
        "---\ndescription: Ship a marker\nargument-hint: [file]\nmodel: claude-haiku-4-5\n\
         allowed-tools: Bash(touch:*)\n---\nTouch $1 and report.\n",
    )
    .unwrap();
    let touch = |id: &str, file: &str| {
        AnthropicTurn::new()
            .tool_use(
                id,
                "shell__run",
                &[&json!({ "command": format!("touch {file}") }).to_string()],
            )
            .finish("tool_use")
    };
    env.server.enqueue(touch("c1", "one.txt"));
    env.answer("Shipped.");
    env.server.enqueue(touch("c2", "two.txt"));
    env.answer("Not shipped.");
    let report = editor(
        &env,
        json!({"answers": ["reject_once"], "prompts": [
            {"text": "/ship one.txt"},
            {"text": "touch two.txt"},
        ]}),
    )
    .await;
    for (i, p) in report["prompts"].as_array().unwrap().iter().enumerate() {
        assert_eq!(p["stopReason"], "end_turn", "prompt {i}: {report:#}");
    }
    let offered = updates(&report, "available_commands_update");
    let ship = offered.last().expect("an available_commands_update")["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "ship")
        .cloned()
        .unwrap_or_else(|| panic!("ship offered: {report:#}"));
    assert_eq!(ship["description"], "Ship a marker");
    assert_eq!(ship["input"]["hint"], "[file]");

    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 4, "{report:#}");
    let models: Vec<String> = requests
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models[0], "claude-haiku-4-5", "{models:?}");
    assert_eq!(models[1], "claude-haiku-4-5", "{models:?}");
    assert_ne!(models[2], "claude-haiku-4-5", "{models:?}");
    assert_eq!(models[2], models[3]);
    assert!(
        requests[0].json()["messages"]
            .to_string()
            .contains("Touch one.txt and report."),
        "the expansion was sent"
    );
    // The command's call ran without asking; the next turn's was asked (and rejected).
    assert!(env.dir.path().join("one.txt").is_file());
    assert!(!env.dir.path().join("two.txt").exists());
    let asked = asked(&report);
    assert_eq!(asked, ["c2"], "{report:#}");
}
