//! Images in the REPL and over ACP (issue 26 item 3, issue 21): `@pic.png` and a path pasted
//! into the terminal (a dragged file) attach the image — real `tern` in a PTY, the screen as a
//! person sees it, the request the mock received — and an editor's image block through the
//! official ACP TypeScript SDK, with `promptCapabilities.image` following the model.

use serde_json::{Value, json};
use tern_e2e::run_env::RunEnv;
use tern_model::mock::RecordedRequest;

use super::{
    acp::{editor, updates},
    images::{PNG_B64, png},
    repl::drive_with,
};

fn user_content(request: &RecordedRequest) -> Value {
    request.json()["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)["content"]
        .clone()
}

fn png_block() -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}})
}

/// `@pic.png` is read through the gateway and attached as an image; a path pasted into the
/// terminal (bracketed paste, backslash-escaped space, outside the workspace, at the start of
/// the line so it looks like a slash command) is attached too; a text-only model gives the
/// line back with the reason.
#[tokio::test]
async fn at_image_and_a_pasted_path_attach_images_in_the_repl() {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.fs]\nrequired = true\n");
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let shot = outside.path().join("My Shot.png");
    std::fs::write(&shot, png()).unwrap();
    env.answer("A pixel.");
    env.answer("The same pixel.");
    // What macOS Terminal and iTerm2 paste when a file is dropped on them.
    let dragged = shot.display().to_string().replace(' ', "\\ ");
    let script = json!([
        {"expect": "tern> "},
        {"send": "what is in @pic.png?\r"},
        {"expect": "[image: pic.png 70 B]"},
        {"expect": "A pixel."},
        {"expect": "tern> "},
        {"send": format!("\u{1b}[200~{dragged}\u{1b}[201~")},
        {"send": " and this one?\r"},
        {"expect": "[image: My Shot.png 70 B]"},
        {"expect": "The same pixel."},
        {"expect": "tern> "},
        {"send": "/model deepseek-chat\r"},
        {"expect": "tern> "},
        {"send": "again @pic.png\r"},
        {"expect": "cannot take images"},
        {"screen": "tern> again @pic.png", "hold": 0.5},
        {"send": "\u{15}/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 2, "the refused line was not sent");
    let first = user_content(&requests[0]);
    assert_eq!(first[0], png_block());
    assert_eq!(first[1]["text"], "what is in @pic.png?");
    let second = user_content(&requests[1]);
    assert_eq!(second[0], png_block(), "{second}");
    assert_eq!(
        second[1]["text"],
        format!("{dragged} and this one?"),
        "the line as typed"
    );
    // The @mention was a gateway read; the dragged file outside the workspace was not.
    let events = env.events();
    let reads = events
        .iter()
        .filter(|e| e["type"] == "audit" && e["record"]["tool"] == "fs__read_file")
        .count();
    assert_eq!(
        reads, 2,
        "@pic.png twice (sent, then refused), the dragged file never"
    );
}

/// An editor sends an image block: `promptCapabilities.image` is true for a model that takes
/// images, the block reaches the model as an image, and `session/load` replays it. With
/// `[model] vision = false`, the capability is false and an image prompt is invalid params,
/// with nothing sent.
#[tokio::test]
async fn an_editor_sends_an_image_through_the_typescript_sdk() {
    let env = RunEnv::new().await;
    env.answer("A pixel.");
    let image = json!({"type": "image", "mimeType": "image/png", "data": PNG_B64,
        "uri": "file:///elsewhere/shot.png"});
    let report = editor(
        &env,
        json!({"scenario": "session", "prompts": [
            {"blocks": [{"type": "text", "text": "what is this?"}, image.clone()]},
        ]}),
    )
    .await;
    assert_eq!(
        report["initialize"]["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{report:#}"
    );
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report:#}");
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 1);
    let content = user_content(&requests[0]);
    assert_eq!(content[0], png_block());
    assert_eq!(content[1]["text"], "what is this?");
    // A second connection loads the session: the image is replayed as the user's chunk.
    let session = report["session"]["sessionId"].as_str().unwrap().to_string();
    let load = editor(
        &env,
        json!({"scenario": "load", "sessionId": session, "prompts": []}),
    )
    .await;
    let replayed: Vec<&Value> = updates(&load, "user_message_chunk")
        .into_iter()
        .filter(|u| u["content"]["type"] == "image")
        .collect();
    assert_eq!(replayed.len(), 1, "{load:#}");
    assert_eq!(replayed[0]["content"]["data"], PNG_B64);
    assert_eq!(replayed[0]["content"]["mimeType"], "image/png");

    // A model that takes no images: said at initialize, refused at the prompt.
    let env = RunEnv::new().await;
    env.add_servers("vision = false\n");
    let report = editor(
        &env,
        json!({"scenario": "session", "prompts": [{"blocks": [image]}]}),
    )
    .await;
    assert_eq!(
        report["initialize"]["agentCapabilities"]["promptCapabilities"]["image"], false,
        "{report:#}"
    );
    assert_eq!(report["prompts"][0]["code"], -32602, "{report:#}");
    assert!(
        report["prompts"][0]["error"]
            .as_str()
            .unwrap()
            .contains("image content is not supported"),
        "{report:#}"
    );
    assert!(env.server.model_requests().is_empty());
}
