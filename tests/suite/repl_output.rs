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

/// The screen's lines, trimmed on the right.
fn lines(report: &serde_json::Value) -> Vec<String> {
    report["screen"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// Whether `text` ends in a duration as the call line shows it (`· 12ms`, `· 2.3s`).
fn ends_in_a_duration(text: &str) -> bool {
    let Some((_, took)) = text.rsplit_once(" · ") else {
        return false;
    };
    let digits = took.trim_end_matches("ms").trim_end_matches('s');
    (took.ends_with("ms") || took.ends_with('s'))
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
}

#[tokio::test]
async fn parallel_results_are_labelled_diff_headers_are_relative_and_durations_are_on_the_call_line()
 {
    let env = RunEnv::new().await;
    env.add_servers("[mcp_servers.fs]\nrequired = true\n");
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.dir.path().join("b.txt"), "beta\n").unwrap();
    // Two reads in one turn (read-only: run as one batch), then an edit on its own.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_a", "fs__read_file", &[r#"{"path":"a.txt"}"#])
            .tool_use("toolu_b", "fs__read_file", &[r#"{"path":"b.txt"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_e",
                "fs__edit_file",
                &[r#"{"path":"a.txt","old_string":"alpha","new_string":"ALPHA"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Edited it.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "read both, then edit a\r"},
        {"expect": "Edited it."},
        {"expect": "tern> "},
        {"screen": "⎿ fs__read_file(a.txt) · ", "hold": 0.5},
        {"screen": "⎿ fs__read_file(b.txt) · "},
        {"screen": "    --- a.txt"},
        {"screen": "    +++ a.txt"},
        {"screen": " · accept-edits · "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["--mode", "accept-edits"]).await;
    let lines = lines(&report);
    let screen = lines.join("\n");
    // Both reads' lines come first, then each result names its call and has its duration.
    let (a, b) = (
        lines.iter().position(|l| l == "⏺ fs__read_file(a.txt)"),
        lines.iter().position(|l| l == "⏺ fs__read_file(b.txt)"),
    );
    assert!(a.is_some() && b == a.map(|a| a + 1), "{screen}");
    for file in ["a.txt", "b.txt"] {
        let label = lines
            .iter()
            .find(|l| l.starts_with(&format!("  ⎿ fs__read_file({file}) · ")))
            .unwrap_or_else(|| panic!("no labelled result for {file}:\n{screen}"));
        assert!(ends_in_a_duration(label), "{label}");
    }
    // The edit ran alone: the duration is on its line and the result follows, unlabelled.
    let edit = lines
        .iter()
        .position(|l| l.starts_with("⏺ fs__edit_file("))
        .unwrap_or_else(|| panic!("no edit line:\n{screen}"));
    assert!(ends_in_a_duration(&lines[edit]), "{}", lines[edit]);
    assert!(
        lines[edit + 1].starts_with("  ⎿ edited `a.txt`: 1 replacement"),
        "{screen}"
    );
    // The diff names the file relative to the project, never by its absolute path.
    let dir = env.dir.path().display().to_string();
    assert!(
        !lines.iter().any(|l| l.contains("--- ") && l.contains(&dir)),
        "{screen}"
    );
    // The status line after the turn names the model and the mode.
    let model = env.server.model_requests()[0].json()["model"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status = lines
        .iter()
        .find(|l| l.contains(" in · ") && l.contains(" out"))
        .unwrap_or_else(|| panic!("no status line:\n{screen}"));
    assert!(
        status.starts_with(&format!("  {model} · accept-edits · ")),
        "{status}"
    );
}

#[tokio::test]
async fn a_stalled_answer_keeps_the_spinner_with_the_tokens_per_second() {
    let env = RunEnv::new().await;
    let stall = tern_model::mock::Gate::new();
    // Pieces 150 ms apart (a rate to estimate), then the stream stalls mid-sentence.
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&[
                "The answer ",
                "is coming ",
                "slowly and ",
                "steadily ",
                "now",
                " done.\n",
            ])
            .finish("end_turn")
            .delay_between(std::time::Duration::from_millis(150))
            .pause_after(8, &stall),
    );
    let opener = stall.clone();
    let open_later = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(4)).await;
        opener.open();
    });
    let script = json!([
        {"expect": "tern> "},
        {"send": "slowly\r"},
        {"expect": "waiting 1.", "timeout": 15},
        {"screen": "tok/s · waiting"},
        {"expect": "done.", "timeout": 15},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    open_later.abort();
    let output = report["output"].as_str().unwrap_or_default().to_string();
    // The estimate streamed while the answer stalled after its text…
    assert!(
        output.contains("~") && output.contains(" tok/s · waiting 1."),
        "{output}"
    );
    // …and the status line has the measured rate.
    let lines = lines(&report);
    let status = lines
        .iter()
        .find(|l| l.contains(" in · ") && l.contains(" out · "))
        .unwrap_or_else(|| panic!("no status line:\n{}", lines.join("\n")));
    assert!(status.contains(" tok/s · "), "{status}");
}

/// Issue 26: "the status line right after a cancel or failure". A request the API refuses
/// (400, not retried) ends the turn with the error and a status line that says `error` and
/// keeps the conversation's size from the turn before — then the REPL goes on.
#[tokio::test]
async fn after_a_failed_turn_the_status_line_says_error_and_the_repl_goes_on() {
    let env = RunEnv::new().await;
    // A conversation of 46k tokens: 23% of the 200k window.
    env.server.enqueue(
        AnthropicTurn::with_usage(46_000, 0, 0)
            .text(&["First answer."])
            .finish("end_turn"),
    );
    env.server.enqueue(tern_model::mock::MockResponse::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages: something the API refused"}}),
    ));
    env.answer("Third answer.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "one\r"},
        {"expect": "First answer."},
        {"expect": "tern> "},
        {"send": "two\r"},
        {"expect": "something the API refused"},
        {"expect": "tern> "},
        {"send": "three\r"},
        {"expect": "Third answer."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let lines = lines(&report);
    let status: Vec<&String> = lines.iter().filter(|l| l.contains("context ")).collect();
    assert_eq!(
        status.len(),
        3,
        "one status line per turn:\n{}",
        lines.join("\n")
    );
    let failed = status[1];
    assert!(failed.trim_start().starts_with("error · "), "{failed}");
    // No answer measured the conversation: the size from the turn before, not 0.
    let context = |l: &str| l.rsplit_once("context ").map(|(_, c)| c.to_string());
    assert_eq!(context(failed), context(status[0]), "{failed}");
    assert!(failed.contains("context 23% of 200.0k"), "{failed}");
    assert!(!failed.contains(" 0 in "), "{failed}");
    assert!(!status[2].contains("error"), "{}", status[2]);
}
