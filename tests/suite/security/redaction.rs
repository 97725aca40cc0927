//! F8: secrets of every common shape stay out of every file tern writes — the events of the
//! run, the session transcript, the audit log — whether they arrive in the goal, in a tool's
//! output or in the model's answer.

use serde_json::json;
use tern_e2e::run_env::{RunEnv, all_files};
use tern_model::mock::script::AnthropicTurn;

use super::run_ok;

/// `(what, text as it appears, a part that must not reach any file)`.
fn secrets() -> Vec<(&'static str, String, String)> {
    let pem_body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n\
                    VTLw7onLRnrq0qIzW7yWR7QkrmBL7jTKEn5uqKhbwKfBstIsbMY2Zkp18gnTxK";
    let mut list = vec![
        (
            "slack",
            "xoxb-2024112233-5566778899-AbCdEfGhIjKlMnOp".to_string(),
            "5566778899-AbCdEfGhIjKlMnOp".to_string(),
        ),
        (
            "pem",
            format!("-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"),
            "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t".to_string(),
        ),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.\
             SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
                .to_string(),
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV".to_string(),
        ),
        (
            "aws id",
            "AKIAZ7Q4EXAMPLE2XKPO".to_string(),
            "Z7Q4EXAMPLE2XKPO".to_string(),
        ),
        (
            "aws secret",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY".to_string(),
            "K7MDENG/bPxRfiCYzEXAMPLEKEY".to_string(),
        ),
        (
            "password",
            "password=correct-horse-battery".to_string(),
            "correct-horse-battery".to_string(),
        ),
        (
            "passwd",
            "passwd: Tr0ub4dorXyz".to_string(),
            "Tr0ub4dorXyz".to_string(),
        ),
        (
            "secret",
            "secret=s3cr3t-v4lue-42".to_string(),
            "s3cr3t-v4lue-42".to_string(),
        ),
        (
            "gitlab",
            "glpat-xY9zW8vU7tS6rQ5pO4nM".to_string(),
            "xY9zW8vU7tS6rQ5pO4nM".to_string(),
        ),
        (
            "google",
            "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY".to_string(),
            "9tSrke72PouQMnMX-a7eZSW0jkFMBWY".to_string(),
        ),
        (
            "github classic",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a".to_string(),
            "16C7e42F292c6912E7710c838347Ae178B4a".to_string(),
        ),
        (
            "github fine-grained",
            "github_pat_11AAAAAAA0123456789_abcdefghijklmnopqrstuvwxyzABCDEF".to_string(),
            "abcdefghijklmnopqrstuvwxyzABCDEF".to_string(),
        ),
    ];
    for (i, zw) in ['\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}']
        .into_iter()
        .enumerate()
    {
        let tail = format!("{i}3456789abcdefABCDEFzw");
        list.push((
            "split by a zero-width character",
            format!("ghp_ZWsplit0{zw}{tail}"),
            tail,
        ));
    }
    list
}

#[tokio::test]
async fn no_secret_shape_reaches_a_file_under_tern_home() {
    let env = RunEnv::new().await;
    let all: String = secrets()
        .iter()
        .map(|(_, text, _)| format!("{text}\n"))
        .collect();
    std::fs::write(env.dir.path().join("creds.txt"), &all).unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["Reading it."])
            .tool_use(
                "toolu_read",
                "fs__read_file",
                &[&json!({"path": "creds.txt"}).to_string()],
            )
            .finish("tool_use"),
    );
    env.answer(&format!("I found these:\n{all}"));
    let goal = format!("Check these credentials:\n{all}");
    run_ok(&env, &goal, &[]).await;

    let files = all_files(env.home.path());
    assert!(
        files.iter().any(|f| f.ends_with("events.jsonl")),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.parent().unwrap().ends_with("sessions")),
        "{files:?}"
    );
    assert!(
        files.iter().any(|f| f.ends_with("audit.jsonl")),
        "{files:?}"
    );
    let mut leaks = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (what, _, part) in secrets() {
            if text.contains(&part) {
                leaks.push(format!("{what} ({part}) in {}", f.display()));
            }
        }
    }
    assert!(leaks.is_empty(), "leaked:\n{}", leaks.join("\n"));
    // The events still say something was there.
    let events =
        std::fs::read_to_string(files.iter().find(|f| f.ends_with("events.jsonl")).unwrap())
            .unwrap();
    assert!(events.contains("[REDACTED]"));
    assert!(events.contains("-----BEGIN RSA PRIVATE KEY-----"));
}

/// Round 3: the API key typed back by the model reached stdout unredacted (the files were
/// redacted). Now what the terminal and `--output-format jsonl` print passes the same redactor.
#[tokio::test]
async fn the_api_key_never_reaches_stdout_in_text_or_jsonl() {
    use tern_e2e::run_env::CANARY;
    for format in ["text", "jsonl"] {
        let env = RunEnv::new().await;
        env.server.enqueue(
            AnthropicTurn::new()
                // Split mid-key, as a stream may split it.
                .text(&[
                    "Your key is ",
                    &CANARY[..12],
                    &CANARY[12..],
                    " — keep it safe.",
                ])
                .finish("end_turn"),
        );
        let out = env
            .run(&["run", "what is my key?", "--output-format", format])
            .await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{format}: {stdout}");
        assert!(!stdout.contains(CANARY), "{format}: {stdout}");
        assert!(stdout.contains("keep it safe"), "{format}: {stdout}");
    }
}
