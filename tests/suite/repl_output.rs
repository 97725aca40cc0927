//! What the REPL draws of an answer (issue 26, item 4): a markdown table as aligned columns,
//! and no fence markers around highlighted code.

use serde_json::json;
use tern_model::mock::script::AnthropicTurn;

use tern_e2e::run_env::RunEnv;

#[tokio::test]
async fn a_table_is_drawn_as_aligned_columns_and_fences_are_hidden() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&[
                "Sizes:\n| Crate | Lines |\n|---|--:|\n",
                "| tern-fs | 1200 |\n| tern-gateway | 900 |\n\n```rust\nlet x = 1;\n```\nDone.",
            ])
            .finish("end_turn"),
    );
    let script = json!([
        {"expect": "tern> "},
        {"send": "sizes\r"},
        {"expect": "Done."},
        {"screen": "Crate        │ Lines", "hold": 0.5},
        {"screen": "─────────────┼──────"},
        {"screen": "tern-fs      │ 1200"},
        {"screen": "tern-gateway │ 900"},
        {"screen": "let x = 1;"},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    let screen = report["screen"].as_str().unwrap_or_default();
    assert!(!screen.contains("```"), "{screen}");
    assert!(!screen.contains("|---"), "{screen}");
}
