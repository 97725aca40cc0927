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

#[test]
fn after_a_cancel_the_status_line_says_so_and_keeps_the_conversations_size() {
    let (out, err) = (Captured::default(), Captured::default());
    let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
    let mut printer = TerminalPrinter::on(screen, false, Mode::Interactive);
    let turn = |status, input, context| Event::TurnFinished {
        status,
        steps: 1,
        input_tokens: input,
        output_tokens: input / 10,
        cache_read_tokens: 0,
        cache_creation_tokens: 0,
        cost_usd: None,
        context_tokens: context,
        context_window: Some(200_000),
    };
    printer.on_event(&envelope(1, turn(RunStatus::Success, 46_000, 46_000)));
    printer.on_event(&envelope(2, turn(RunStatus::Cancelled, 0, 0)));
    let text = out.text();
    let last = text.lines().last().unwrap_or_default();
    assert_eq!(last, "  cancelled · context 23% of 200.0k", "{text}");
    insta::assert_snapshot!(text);
}
