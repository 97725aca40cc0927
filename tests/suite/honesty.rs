//! What the model and the person are told stays true (issue 26, item 7): a large read is paged
//! to the cap the host applies, so nothing is cut from the middle of a page; a cancelled
//! message is marked as interrupted in the next request; Ctrl-C in `tern demo` is not reported
//! as a difference from the recording.

use serde_json::{Value, json};
use tern_model::mock::{Gate, script::AnthropicTurn};

use tern_e2e::run_env::{RunEnv, assert_exit};

/// The text of every tool result in a recorded Anthropic request.
fn tool_results(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        for c in m["content"].as_array().into_iter().flatten() {
            if c["type"] == "tool_result" {
                match &c["content"] {
                    Value::String(s) => out.push(s.clone()),
                    Value::Array(parts) => out.push(
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<String>(),
                    ),
                    _ => {}
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn a_large_read_is_paged_to_the_hosts_cap_and_the_note_names_the_next_unseen_line() {
    let env = RunEnv::new().await;
    // 2 MB: 40 000 numbered lines, far past both fs's 512 KiB page and the 30 000-char cap.
    let text: String = (1..=40_000)
        .map(|i| format!("line {i:05} of a large log file, padded to be long enough\n"))
        .collect();
    std::fs::write(env.dir.path().join("big.log"), &text).unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_read", "fs__read_file", &[r#"{"path":"big.log"}"#])
            .finish("tool_use"),
    );
    env.answer("Read it.");
    let out = env.run(&["run", "read big.log"]).await;
    assert_exit(&out, 0);
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2);
    let results = tool_results(&sent[1].json());
    assert_eq!(results.len(), 1, "{results:?}");
    let page = &results[0];
    // The gateway did not cut it: no omission marker, everything within its cap.
    assert!(!page.contains("characters omitted"), "{page}");
    assert!(page.chars().count() <= 30_000, "{}", page.chars().count());
    // The note's offset is the line right after the last one shown, and every line up to it
    // is there.
    let next: u64 = page
        .split("continue with offset=")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no continuation note in the page's end: {}",
                &page[page.len() - 300..]
            )
        });
    let last = next - 1;
    assert!(last > 100, "a page of {last} lines");
    for i in [1, last / 2, last] {
        assert!(
            page.contains(&format!("line {i:05} of")),
            "line {i} missing"
        );
    }
    assert!(!page.contains(&format!("line {next:05} of")));
    assert!(
        page.contains("limit per call, set by the host"),
        "{}",
        &page[page.len() - 300..]
    );
}

#[tokio::test]
async fn a_cancelled_message_is_marked_interrupted_in_the_next_request() {
    let env = RunEnv::new().await;
    // The first answer stalls after its first words until Ctrl-C.
    let stall = Gate::new();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Let me think\n", "about that"])
            .finish("end_turn")
            .pause_after(3, &stall),
    );
    env.answer("Second answer.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "first question\r"},
        // The request is at the mock, whose answer stalls (the words so far are held by the
        // markdown renderer until their paragraph ends).
        {"expect": "thinking 1."},
        {"send": "\u{3}"},
        {"expect": "tern> "},
        {"send": "second question\r"},
        {"expect": "Second answer."},
        {"expect": "tern> "},
        {"send": "\u{4}"},
    ]);
    super::repl::drive_with(&env, &script, &[]).await;
    let sent = env.server.model_requests();
    assert_eq!(sent.len(), 2, "the cancelled turn did not go on");
    let body = String::from_utf8_lossy(&sent[1].body).into_owned();
    let (first, marker, second) = (
        body.find("first question")
            .expect("the first message is kept"),
        body.find("[interrupted by the user]")
            .unwrap_or_else(|| panic!("no interruption marker in {body}")),
        body.find("second question").expect("the second message"),
    );
    assert!(first < marker && marker < second, "{body}");
}

#[tokio::test]
async fn ctrl_c_in_the_demo_stops_it_without_claiming_the_results_differ() {
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(tern_e2e::bin("tern"))
        .args(["demo", "--speed", "0.2"])
        .env("HOME", home.path())
        .env("TERN_HOME", home.path().join(".tern"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("TERN_LOG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Wait for the demo to be under way (its first tool call), then Ctrl-C.
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !String::from_utf8_lossy(&seen).contains("⏺ ") {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&seen)
        );
        let mut buf = [0u8; 4096];
        let n = tokio::io::AsyncReadExt::read(&mut stdout, &mut buf)
            .await
            .unwrap();
        assert!(
            n > 0,
            "the demo ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut rest)
        .await
        .unwrap();
    seen.extend_from_slice(&rest);
    let status = child.wait().await.unwrap();
    let out = String::from_utf8_lossy(&seen);
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.contains("Demo stopped (Ctrl-C)"), "{out}");
    assert!(!out.contains("differ from the recording"), "{out}");
    assert!(!out.contains("[run] success"), "{out}");
}

#[tokio::test]
async fn a_write_outside_the_fs_roots_is_refused_before_asking_with_the_reason() {
    let env = RunEnv::new().await;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("outside.txt");
    let args = json!({"path": target.display().to_string(), "content": "x\n"}).to_string();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_out", "fs__write_file", &[&args])
            .finish("tool_use"),
    );
    env.answer("Understood.");
    // Default mode: without the confinement check this write would be asked about.
    let out = env.run(&["run", "write outside"]).await;
    assert_exit(&out, 0);
    assert!(!target.exists());
    let events = env.events();
    let decided = events
        .iter()
        .find(|e| e["type"] == "permission_decided")
        .expect("a permission decision");
    assert_eq!(decided["decision"], "deny", "{decided}");
    assert_eq!(decided["asked"], false, "{decided}");
    assert_eq!(decided["rule"], "confinement:fs-roots", "{decided}");
    let sent = env.server.model_requests();
    let results = tool_results(&sent[1].json());
    assert!(
        results[0].contains("outside the fs server's roots")
            && results[0].contains(&env.dir.path().canonicalize().unwrap().display().to_string()),
        "{results:?}"
    );
}
