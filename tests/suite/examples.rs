//! The examples in `examples/` work as documented.

use tern_model::mock::script::AnthropicTurn;

use tern_e2e::run_env::{RunEnv, assert_exit, of_type};

#[tokio::test]
async fn the_python_example_server_is_a_tern_tool_server() {
    let env = RunEnv::new().await;
    let notes = env.dir.path().join("notes.txt");
    env.add_servers(&format!(
        "[mcp_servers.notes]\ncommand = {:?}\nargs = [{:?}, \"--file\", {:?}]\nstartup_timeout_sec = 60\nrequired = true\n",
        tern_e2e::dep("venv/bin/python").to_string_lossy(),
        tern_e2e::workspace_root().join("examples/python-server/server.py").to_string_lossy(),
        notes.to_string_lossy(),
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_add",
                "notes__add_note",
                &[r#"{"text":"ship the first wave"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_list", "notes__list_notes", &["{}"])
            .finish("tool_use"),
    );
    env.server
        .enqueue(AnthropicTurn::new().text(&["Noted."]).finish("end_turn"));
    let out = env
        .run(&[
            "run",
            "note it",
            "--output-format",
            "jsonl",
            "--allow",
            "notes__*",
        ])
        .await;
    assert_exit(&out, 0);
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "ship the first wave\n"
    );
    let events = env.events();
    let calls = of_type(&events, "tool_call_finished");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c["is_error"] == false), "{calls:?}");
    assert!(
        calls[1]["output"]
            .as_str()
            .unwrap()
            .contains("1. ship the first wave")
    );
}
