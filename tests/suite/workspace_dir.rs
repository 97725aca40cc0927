//! The servers of a run work in the run's directory (`-C DIR`), not in the directory the
//! process was started from: `--root .` of the built-ins means the workspace.

use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;

#[tokio::test]
async fn under_dash_c_the_built_in_servers_are_rooted_in_that_directory() {
    let env = RunEnv::new().await;
    let sub = env.dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("file.txt"), "inside sub\n").unwrap();
    std::fs::write(env.dir.path().join("file.txt"), "outside\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("t_read", "fs__read_file", &[r#"{"path":"file.txt"}"#])
            .finish("tool_use"),
    );
    env.answer("Read it.");
    let out = env
        .run(&[
            "-C",
            "sub",
            "run",
            "read file.txt",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let events = env.events();
    let read = of_type(&events, "tool_call_finished");
    assert_eq!(read.len(), 1);
    assert!(
        read[0]["output"].as_str().unwrap().contains("inside sub"),
        "{}",
        read[0]
    );
}
