//! The todo and skills servers as tern runs them by default: both start with every run, the
//! model gets `todo__write`/`todo__read` (and no skills tool while there is no skill), and a
//! todo update needs no approval in the default mode.

use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

#[tokio::test]
async fn the_todo_server_is_on_by_default_and_updating_the_list_needs_no_approval() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_todo",
                "todo__write",
                &[
                    r#"{"todos":[{"id":"1","text":"Read the code","status":"in_progress"},"#,
                    r#"{"id":"2","text":"Fix it","status":"pending"}]}"#,
                ],
            )
            .finish("tool_use"),
    );
    env.answer("Planned.");
    let out = env
        .run(&["run", "plan the fix", "--output-format", "jsonl"])
        .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.requests();
    let tools: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.contains(&"todo__write".to_string()), "{tools:?}");
    assert!(tools.contains(&"todo__read".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("skills__")),
        "no skill, no tool: {tools:?}"
    );
    let results = super::run::tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    let (id, text, is_error) = &results[0];
    assert_eq!(id, "toolu_todo");
    assert!(!is_error, "the default mode let the update through: {text}");
    assert!(
        text.contains("- [>] 1: Read the code (in progress)"),
        "{text}"
    );
    assert!(text.contains("- [ ] 2: Fix it"), "{text}");
}
