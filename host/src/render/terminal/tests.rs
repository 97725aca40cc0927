//! What a person sees for a scripted run, in colour on an 80-column terminal and as plain text.

use serde_json::json;
use tern_protocol::{Decision, Envelope, Event, RunStatus};

use super::*;

fn envelope(seq: u64, event: Event) -> Envelope {
    Envelope {
        run_id: "r".into(),
        session_id: "s".into(),
        seq,
        ts: "2026-12-01T00:00:00.000Z".into(),
        event,
    }
}

fn events() -> Vec<Event> {
    vec![
        Event::State {
            state: tern_protocol::LoopState::CallModel,
            step: 1,
        },
        Event::TextDelta {
            text: "I'll **fix** the `add` fun".into(),
        },
        Event::TextDelta {
            text: "ction.\n".into(),
        },
        Event::ToolCallStarted {
            call_id: "c1".into(),
            tool: "fs__edit_file".into(),
            arguments: json!({"path": "src/lib.rs", "old_string": "a + b", "new_string": "a.checked_add(b)"}),
        },
        Event::ToolCallFinished {
            call_id: "c1".into(),
            tool: "fs__edit_file".into(),
            is_error: false,
            error_type: None,
            duration_ms: 4,
            summary: "edited `src/lib.rs`: 1 replacement".into(),
            output: "edited `src/lib.rs`: 1 replacement\n--- src/lib.rs\n+++ src/lib.rs".into(),
            diff: Some("--- src/lib.rs\n+++ src/lib.rs\n@@ -1 +1 @@\n-a + b\n+a.checked_add(b)".into()),
        },
        Event::ToolCallStarted {
            call_id: "c2".into(),
            tool: "shell__run".into(),
            arguments: json!({"command": "cargo test"}),
        },
        Event::ToolCallFinished {
            call_id: "c2".into(),
            tool: "shell__run".into(),
            is_error: false,
            error_type: None,
            duration_ms: 812,
            summary: "running 7 tests".into(),
            output: "running 7 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\ntest d ... ok\ntest e ... ok\ntest result: ok\n\x1b]52;c;cHduZWQ=\x07exit code 0".into(),
            diff: None,
        },
        Event::PermissionDecided {
            call_id: "c3".into(),
            tool: "shell__run".into(),
            server: "shell".into(),
            decision: Decision::Deny,
            rule: "headless:deny".into(),
            asked: true,
            reason: Some("allow it with --allow 'shell__run(rm *)'".into()),
        },
        Event::TextDelta {
            text: "## Done\n\n- tests *pass*\n- see [docs](https://example.com)\n\n```rust\nlet x = a.checked_add(b);\n```\nAll \x1b[2Jgood.".into(),
        },
        Event::TurnEnd { step: 2 },
        Event::TurnFinished {
            status: RunStatus::Success,
            steps: 2,
            input_tokens: 1200,
            output_tokens: 340,
            cache_read_tokens: 10_800,
            cache_creation_tokens: 0,
            cost_usd: Some(0.0123),
            context_tokens: 46_000,
            context_window: Some(200_000),
            model: Some("claude-sonnet-4-5".into()),
            mode: Some("accept-edits".into()),
        },
        Event::RunFinished {
            status: RunStatus::Success,
            steps: 2,
            duration_ms: 2500,
            input_tokens: 1200,
            output_tokens: 340,
            cache_read_tokens: 10_800,
            cache_creation_tokens: 0,
            cost_usd: Some(0.0123),
            answer: Some("All good.".into()),
            error: None,
        },
    ]
}

fn shown(color: bool, mode: Mode) -> (String, String) {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(
        Box::new(out.clone()),
        Box::new(err.clone()),
        false,
        80,
    ));
    let mut printer = TerminalPrinter::on(screen, color, mode);
    for (i, e) in events().into_iter().enumerate() {
        printer.on_event(&envelope(i as u64 + 1, e));
    }
    printer.close();
    (out.text(), err.text())
}

#[test]
fn a_run_in_colour() {
    let (out, _) = shown(true, Mode::Interactive);
    insta::assert_snapshot!(out.replace('\x1b', "⟨ESC⟩"));
}

#[test]
fn a_run_as_plain_text() {
    let (out, _) = shown(false, Mode::Headless);
    assert!(
        !out.contains('\x1b'),
        "no escape of any kind without colour"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn hostile_escapes_in_model_text_and_tool_output_never_reach_the_terminal() {
    for color in [true, false] {
        let (out, _) = shown(color, Mode::Interactive);
        assert!(
            !out.contains("\x1b]52"),
            "an OSC 52 clipboard write got through"
        );
        assert!(!out.contains("\x1b[2J"), "a screen clear got through");
        assert!(!out.contains('\x07'));
    }
}

#[test]
fn long_output_is_folded_and_kept_for_expanding() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen.clone(), false, Mode::Interactive);
    for (i, e) in events().into_iter().take(7).enumerate() {
        printer.on_event(&envelope(i as u64 + 1, e));
    }
    let text = out.text();
    assert!(text.contains("… +3 lines (ctrl+o to expand)"), "{text}");
    assert!(
        !text.contains("test result: ok"),
        "folded lines are not shown"
    );
    let folded = screen.folded().unwrap();
    assert!(folded.contains("test result: ok") && folded.contains("exit code 0"));
}

#[test]
fn wrapped_lines_are_redrawn_from_their_first_row() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 20));
    let mut printer = TerminalPrinter::on(screen, true, Mode::Headless);
    // 45 columns on a 20-column terminal: three rows, so the cursor goes up two.
    let line = format!("**{}**\n", "x".repeat(41));
    printer.on_event(&envelope(1, Event::TextDelta { text: line }));
    assert!(out.text().contains("\x1b[2A\r\x1b[J"), "{:?}", out.text());
}

#[test]
fn a_todo_update_is_shown_as_a_checklist_with_its_progress() {
    use tern_protocol::todo::{TodoCounts, TodoItem, TodoStatus};
    let item = |id: &str, text: &str, status| TodoItem {
        id: id.into(),
        text: text.into(),
        status,
    };
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, false, Mode::Headless);
    printer.on_event(&envelope(
        1,
        Event::TodoUpdated {
            todos: vec![
                item("1", "Read the code", TodoStatus::Done),
                item("2", "Fix \x1b[2Jit", TodoStatus::InProgress),
                item("3", "Test", TodoStatus::Pending),
                item("4", "Docs", TodoStatus::Cancelled),
            ],
            counts: TodoCounts::default(),
        },
    ));
    let text = out.text();
    assert!(text.contains("☰ Todo · 2/4 done"), "{text}");
    assert!(text.contains("  ✔ Read the code\n"), "{text}");
    assert!(
        text.contains("  ▶ Fix ") && !text.contains('\x1b'),
        "{text:?}"
    );
    assert!(text.contains("  ☐ Test\n"), "{text}");
    assert!(text.contains("  ✗ Docs (cancelled)\n"), "{text}");
}

/// A one-step turn's end in a 200k window, with the model and mode the status line names.
fn turn_finished(
    status: RunStatus,
    input: u64,
    context: u64,
    model_mode: Option<(&str, &str)>,
) -> Event {
    Event::TurnFinished {
        status,
        steps: 1,
        input_tokens: input,
        output_tokens: input / 10,
        cache_read_tokens: 0,
        cache_creation_tokens: 0,
        cost_usd: None,
        context_tokens: context,
        context_window: Some(200_000),
        model: model_mode.map(|(m, _)| m.to_string()),
        mode: model_mode.map(|(_, m)| m.to_string()),
    }
}

#[test]
fn after_a_cancel_the_status_line_says_so_and_keeps_the_conversations_size() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, false, Mode::Interactive);
    let turn = |status, input, context| turn_finished(status, input, context, None);
    printer.on_event(&envelope(1, turn(RunStatus::Success, 46_000, 46_000)));
    printer.on_event(&envelope(2, turn(RunStatus::Cancelled, 0, 0)));
    let text = out.text();
    let last = text.lines().last().unwrap_or_default();
    assert_eq!(last, "  cancelled · context 23% of 200.0k", "{text}");
    insta::assert_snapshot!(text);
}

/// Issue 26: "the status line right after a cancel or failure". A turn that failed before any
/// answer says so and keeps the size of the conversation (not `0 in · context 0%`); one that
/// failed after a step had spent tokens shows them.
#[test]
fn after_a_failed_turn_the_status_line_says_so_and_keeps_the_conversations_size() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, false, Mode::Interactive);
    let turn = |status, input, context| {
        turn_finished(
            status,
            input,
            context,
            Some(("claude-sonnet-4-5", "default")),
        )
    };
    printer.on_event(&envelope(1, turn(RunStatus::Success, 46_000, 46_000)));
    printer.on_event(&envelope(
        2,
        Event::Error {
            message: "model request failed: 400 invalid_request_error".into(),
        },
    ));
    printer.on_event(&envelope(3, turn(RunStatus::Error, 0, 0)));
    // A step answered (tokens spent), then the next request failed.
    printer.on_event(&envelope(4, turn(RunStatus::Error, 1_200, 0)));
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[lines.len() - 2],
        "  error · claude-sonnet-4-5 · default · context 23% of 200.0k",
        "{text}"
    );
    assert_eq!(
        lines[lines.len() - 1],
        "  error · claude-sonnet-4-5 · default · 1.2k in · 0% cached · 120 out · context 23% of 200.0k",
        "{text}"
    );
    insta::assert_snapshot!(text);
}

/// A turn with two reads run as one batch (both lines first, then both results), then an edit
/// of a file inside the workspace whose diff names it by its absolute path.
fn batch() -> Vec<Event> {
    let started = |id: &str, tool: &str, args| Event::ToolCallStarted {
        call_id: id.into(),
        tool: tool.into(),
        arguments: args,
    };
    let finished =
        |id: &str, tool: &str, ms, summary: &str, diff: Option<&str>| Event::ToolCallFinished {
            call_id: id.into(),
            tool: tool.into(),
            is_error: false,
            error_type: None,
            duration_ms: ms,
            summary: summary.into(),
            output: summary.into(),
            diff: diff.map(str::to_string),
        };
    vec![
        started("r1", "fs__read_file", json!({"path": "a.txt"})),
        started("r2", "fs__read_file", json!({"path": "b.txt"})),
        finished("r1", "fs__read_file", 3, "1→alpha", None),
        finished("r2", "fs__read_file", 2_340, "1→beta", None),
        started(
            "e1",
            "fs__edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
        ),
        finished(
            "e1",
            "fs__edit_file",
            12,
            "edited `/home/ada/app/a.txt`: 1 replacement (+1 -1 lines)",
            Some("--- /home/ada/app/a.txt\n+++ /home/ada/app/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n"),
        ),
        started("e2", "fs__write_file", json!({"path": "/etc/motd"})),
        finished(
            "e2",
            "fs__write_file",
            65_000,
            "wrote 3 bytes to `/etc/motd` (replaced)",
            Some("--- /etc/motd\n+++ /etc/motd\n@@ -1 +1 @@\n-hi\n+yo\n"),
        ),
        Event::TurnFinished {
            status: RunStatus::Success,
            steps: 2,
            input_tokens: 900,
            output_tokens: 80,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            cost_usd: None,
            context_tokens: 980,
            context_window: Some(200_000),
            model: Some("claude-sonnet-4-5".into()),
            mode: Some("plan".into()),
        },
    ]
}

fn batch_shown(color: bool) -> String {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, color, Mode::Interactive)
        .in_workspace(std::path::Path::new("/home/ada/app"));
    for (i, e) in batch().into_iter().enumerate() {
        printer.on_event(&envelope(i as u64 + 1, e));
    }
    printer.close();
    out.text()
}

#[test]
fn parallel_results_name_their_call_and_a_lone_call_has_its_duration_on_its_line() {
    let text = batch_shown(false);
    // Both reads' lines came before either result: each result names its call.
    assert!(
        text.contains("  ⎿ fs__read_file(a.txt) · 3ms\n    1→alpha\n"),
        "{text}"
    );
    assert!(
        text.contains("  ⎿ fs__read_file(b.txt) · 2.3s\n    1→beta\n"),
        "{text}"
    );
    // The edit ran alone: its duration is on its line, its result right under it, unlabelled.
    assert!(
        text.contains(
            "⏺ fs__edit_file({\"new_string\":\"ALPHA\",\"old_string\":\"alpha\",\"path\":\"a.txt\"}) · 12ms\n  ⎿ edited `a.txt`"
        ),
        "{text}"
    );
    // Diff headers: relative inside the workspace, absolute outside it.
    assert!(text.contains("    --- a.txt\n    +++ a.txt\n"), "{text}");
    assert!(!text.contains("/home/ada/app"), "{text}");
    assert!(text.contains("    --- /etc/motd\n"), "{text}");
    assert!(text.contains("(/etc/motd) · 1m05s\n"), "{text}");
    // The status line names the model and the mode.
    assert!(
        text.contains("  claude-sonnet-4-5 · plan · 900 in · 0% cached · 80 out · context"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn on_a_terminal_the_call_line_is_rewritten_with_its_duration() {
    let text = batch_shown(true);
    // The edit's line is redrawn in place (one row up), its duration added. (A line that
    // wrapped is redrawn from its first row: `a_run_in_colour` goes up two.)
    assert!(
        text.contains("\"path\":\"a.txt\"})\n\x1b[1A\r\x1b[J\x1b[36m⏺"),
        "{text:?}"
    );
    assert!(text.contains("\x1b[2m · 12ms\x1b[0m\n"), "{text:?}");
    // The reads' lines are not rewritten (the second came between): their results are labelled.
    assert!(
        text.contains("⎿\x1b[0m fs__read_file(a.txt)\x1b[2m · 3ms"),
        "{text:?}"
    );
    insta::assert_snapshot!(text.replace('\x1b', "⟨ESC⟩"));
}

#[test]
fn the_status_line_has_the_measured_rate_after_a_streamed_answer() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, false, Mode::Interactive);
    printer.on_event(&envelope(
        1,
        Event::TextDelta {
            text: "Hello".into(),
        },
    ));
    std::thread::sleep(std::time::Duration::from_millis(250));
    printer.on_event(&envelope(
        2,
        Event::TextDelta {
            text: " world.\n".into(),
        },
    ));
    printer.on_event(&envelope(
        3,
        Event::ModelResponse {
            step: 1,
            stop_reason: "end_turn".into(),
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 0,
            cache_creation_tokens: 0,
            latency_ms: 300,
            request_id: None,
            text: "Hello world.\n".into(),
            tool_calls: 0,
            calls: Vec::new(),
            incomplete: Vec::new(),
        },
    ));
    let mut turn = batch().pop().unwrap_or(Event::TurnEnd { step: 1 });
    if let Event::TurnFinished { mode, .. } = &mut turn {
        *mode = Some("default".into());
    }
    printer.on_event(&envelope(4, turn));
    let text = out.text();
    let last = text.lines().last().unwrap_or_default();
    // 5 tokens over at least 250 ms of streaming: at most 20 tok/s, measured (no `~`).
    let rate = last
        .split(" · ")
        .find_map(|p| p.strip_suffix(" tok/s"))
        .unwrap_or_else(|| panic!("no rate in {last:?}"));
    let rate: f64 = rate.parse().unwrap_or_else(|_| panic!("{last:?}"));
    assert!(rate > 0.0 && rate <= 20.0, "{last}");
    assert!(
        last.starts_with("  claude-sonnet-4-5 · default · 900 in"),
        "{last}"
    );
}
