//! Images attached to a message (issue 26 item 3, issue 21 "images where the model takes
//! them"): `tern run --image` on each wire format — the request body reaching the mock holds
//! the provider's exact image block — the refusals that send nothing (a text-only model, a
//! file that is no image), a screenshot the model reads with `fs__read_file`, and a session
//! with an image continued with `--continue`.

use base64::Engine as _;
use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{
    RecordedRequest,
    responses::ResponsesTurn,
    script::{AnthropicTurn, OpenAiTurn},
};

/// A real 1×1 PNG (what a screenshot tool writes, only smaller).
pub(super) const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The PNG's bytes.
pub(super) fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(PNG_B64)
        .unwrap()
}

/// A JPEG's start (SOI, JFIF APP0) and end: enough for the magic bytes, never decoded here.
fn jpeg() -> Vec<u8> {
    let mut b = vec![
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x01, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00,
    ];
    b.extend_from_slice(&[0xFF, 0xD9]);
    b
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn last_message(req: &RecordedRequest) -> Value {
    req.json()["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)
}

async fn run_openai(env: &RunEnv, model: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = env.command(args);
    cmd.args(["--provider", "openai", "--model", model])
        .env_remove("ANTHROPIC_API_KEY")
        .env("OPENAI_API_KEY", "sk-test-images-0123456789")
        .env("OPENAI_BASE_URL", format!("{}/v1", env.server.url()));
    tokio::time::timeout(std::time::Duration::from_secs(120), cmd.output())
        .await
        .expect("tern run did not finish in 120 s")
        .unwrap()
}

/// Anthropic Messages: a workspace PNG (read through the gateway) and a JPEG outside the
/// workspace (named on the command line, read by tern) become image blocks before the text,
/// in the vision guide's exact shape; the screen names both; the workspace read is audited.
#[tokio::test]
async fn run_image_sends_anthropic_image_blocks_read_through_the_gateway() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    // A JPEG under a misleading name: the bytes decide.
    let photo = outside.path().join("photo.dat");
    std::fs::write(&photo, jpeg()).unwrap();
    env.answer("A red pixel and a photo.");
    let photo_arg = photo.display().to_string();
    let out = env
        .run(&[
            "run",
            "what is in these?",
            "--image",
            "pic.png",
            "--image",
            &photo_arg,
        ])
        .await;
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("[image: pic.png {} B]", png().len())),
        "{stderr}"
    );
    assert!(stderr.contains("[image: photo.dat 22 B]"), "{stderr}");
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 1);
    let content = last_message(&sent[0])["content"].clone();
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}})
    );
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(&jpeg())}})
    );
    assert_eq!(content[2]["type"], "text");
    assert_eq!(content[2]["text"], "what is in these?");
    // The workspace file was an fs__read_file call through the gateway; the outside one not.
    let events = env.events();
    let reads: Vec<&Value> = of_type(&events, "audit")
        .into_iter()
        .filter(|e| e["record"]["tool"] == "fs__read_file")
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert!(
        reads[0]["record"]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("user-mention-")
    );
    // The read outside the workspace is in the events file, said as such.
    let notices: Vec<&Value> = of_type(&events, "notice")
        .into_iter()
        .filter(|n| n["message"].as_str().unwrap().contains("photo.dat"))
        .collect();
    assert_eq!(notices.len(), 1, "{events:#?}");
    assert!(
        notices[0]["message"]
            .as_str()
            .unwrap()
            .contains("(image/jpeg, 22 B) outside the workspace"),
        "{}",
        notices[0]
    );
    // The event keeps the shape of the request, not the megabytes.
    let request = &of_type(&events, "model_request")[0]["request"];
    let text = request.to_string();
    assert!(!text.contains(PNG_B64), "{text}");
    assert!(text.contains("base64 characters>"), "{text}");
}

/// OpenAI Chat Completions: `{"type": "image_url", "image_url": {"url": "data:…"}}` before a
/// text part, in one user message.
#[tokio::test]
async fn run_image_sends_chat_completions_image_url_parts() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    env.server
        .enqueue(OpenAiTurn::new().text(&["A pixel."]).finish("stop"));
    let out = run_openai(
        &env,
        "gpt-4o",
        &["run", "describe it", "--image", "pic.png"],
    )
    .await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    let user = last_message(&sent[0]);
    assert_eq!(user["role"], "user");
    assert_eq!(
        user["content"],
        json!([
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
            {"type": "text", "text": "describe it"},
        ])
    );
}

/// OpenAI Responses: an `input_image` part whose `image_url` is the data URL itself.
#[tokio::test]
async fn run_image_sends_responses_input_image_parts() {
    let env = RunEnv::new().await;
    env.add_servers("wire_api = \"responses\"\n");
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    env.server.enqueue(
        ResponsesTurn::with_usage(100, 0, 3)
            .message("msg_1", &["A pixel."])
            .completed(),
    );
    let out = run_openai(&env, "gpt-5", &["run", "describe it", "--image", "pic.png"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/responses");
    let input = sent[0].json()["input"].clone();
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}")},
            {"type": "input_text", "text": "describe it"},
        ]})
    );
}

/// A model that takes no images refuses before anything is sent: configured
/// (`[model] vision = false`) or known text-only (tern's catalog), each with a hint.
#[tokio::test]
async fn a_text_only_model_refuses_images_and_sends_nothing() {
    let env = RunEnv::new().await;
    env.add_servers("vision = false\n");
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    let out = env.run(&["run", "describe it", "--image", "pic.png"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot take images"), "{stderr}");
    assert!(stderr.contains("`[model] vision = false`"), "{stderr}");
    assert!(
        stderr.contains("hint: switch to a model that takes images"),
        "{stderr}"
    );
    assert!(env.server.model_requests().is_empty(), "nothing was sent");
    let events = env.events();
    assert_eq!(events.last().unwrap()["status"], "error");

    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("pic.png"), png()).unwrap();
    let out = run_openai(
        &env,
        "deepseek-chat",
        &["run", "describe it", "--image", "pic.png"],
    )
    .await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("text-only model"), "{stderr}");
    assert!(env.server.model_requests().is_empty(), "nothing was sent");
}

/// A file that is no image (text named `.png`, a binary) and a missing file are refused
/// clearly; nothing is sent.
#[tokio::test]
async fn a_file_that_is_no_image_is_refused_clearly() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("notes.png"), "just notes\n").unwrap();
    let out = env.run(&["run", "look", "--image", "notes.png"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notes.png: not a PNG, JPEG, GIF or WebP image"),
        "{stderr}"
    );
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(env.server.model_requests().is_empty());

    let outside = tempfile::tempdir().unwrap();
    let blob = outside.path().join("blob.bin");
    std::fs::write(&blob, b"\x7fELF\x02\x01\x01\0\0\0\0\0").unwrap();
    let arg = blob.display().to_string();
    let out = env.run(&["run", "look", "--image", &arg]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("its first bytes are 7f 45 4c 46"),
        "{stderr}"
    );

    let out = env.run(&["run", "look", "--image", "missing.png"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--image missing.png: no such file"),
        "{stderr}"
    );
    assert!(env.server.model_requests().is_empty());
}

/// The model looks at a screenshot in the workspace with `fs__read_file`: tern-fs returns an
/// image block, which reaches the model inside the tool result.
#[tokio::test]
async fn the_model_reads_a_screenshot_with_fs_read_file() {
    let env = RunEnv::new().await;
    std::fs::write(env.dir.path().join("shot.png"), png()).unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "fs__read_file", &[r#"{"path":"shot.png"}"#])
            .finish("tool_use"),
    );
    env.answer("It is one pixel.");
    let out = env.run(&["run", "what does shot.png show?"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let result = last_message(&sent[1])["content"][0].clone();
    assert_eq!(result["type"], "tool_result");
    let parts = result["content"].as_array().unwrap();
    assert!(
        parts[0]["text"]
            .as_str()
            .unwrap()
            .contains("[image: image/png, 70 bytes"),
        "{result}"
    );
    assert_eq!(
        parts[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}})
    );
}

/// A screenshot over the model's limit (Anthropic: 3.75 MiB of file) read by the model with
/// `fs__read_file` is left out of the request with a note saying why: sent, it would make the
/// provider refuse this request and every later one of the session.
#[tokio::test]
async fn a_tool_screenshot_over_the_models_limit_is_left_out_with_a_note() {
    let env = RunEnv::new().await;
    let mut big = png();
    big.resize(4 * 1024 * 1024, 0);
    std::fs::write(env.dir.path().join("huge.png"), &big).unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "fs__read_file", &[r#"{"path":"huge.png"}"#])
            .finish("tool_use"),
    );
    env.answer("Too big to see.");
    let out = env.run(&["run", "look at huge.png"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let result = last_message(&sent[1])["content"][0].clone();
    let text = result.to_string();
    assert!(
        !text.contains("\"type\":\"image\""),
        "no image block: {}",
        &text[..300.min(text.len())]
    );
    assert!(
        text.contains("[an image (image/png) left out: 4.2 MB, over the model's limit of 3.9 MB]"),
        "{text}"
    );
    assert!(
        sent[1].body.len() < 100_000,
        "{} bytes sent",
        sent[1].body.len()
    );
}

/// A session holding an image continues: the image is sent again from the session (it is
/// part of the conversation), counted as an image, not as its base64 text.
#[tokio::test]
async fn continue_sends_the_sessions_image_again() {
    let env = RunEnv::new().await;
    // 400 KB after the image's end: ~530k base64 characters, ~150k tokens if read as text.
    let mut big = png();
    big.resize(big.len() + 400_000, 0);
    std::fs::write(env.dir.path().join("pic.png"), &big).unwrap();
    env.answer("A pixel.");
    env.answer("Still a pixel.");
    let out = env.run(&["run", "what is it?", "--image", "pic.png"]).await;
    assert_exit(&out, 0);
    let out = env.run(&["run", "and now?", "--continue"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let messages = sent[1].json()["messages"].clone();
    assert_eq!(messages[0]["content"][0]["type"], "image");
    assert_eq!(messages[0]["content"][0]["source"]["data"], b64(&big));
    assert_eq!(messages[1]["role"], "assistant");
    let events = env.events();
    let request = &of_type(&events, "model_request")[0];
    // An image is ~1.6k tokens, whatever its base64 length.
    assert!(
        request["estimated_tokens"].as_u64().unwrap() < 40_000,
        "{}",
        request["estimated_tokens"]
    );
}
