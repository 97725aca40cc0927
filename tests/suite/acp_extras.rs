//! `tern acp` beyond the first round (issue 21 leftovers), with the official TypeScript SDK as
//! the editor (`tests/acp/client.mjs`, helpers from `suite::acp`): thinking as
//! `agent_thought_chunk`s.

use serde_json::json;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

use super::acp::{editor, text_of, updates};

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
