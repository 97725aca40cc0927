//! The last lines of something, dimmed: a running call's output while it runs (the live tail,
//! replaced in place and gone when the result comes), and a failed server's stderr under its
//! notice.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::TerminalPrinter;
use super::style::{DIM, sanitize};

/// Lines of a running call's output shown under it.
pub(super) const LIVE_LINES: usize = 5;

/// Rows the live block may take at most (several calls' tails at once): it is redrawn by moving
/// up over its rows, which must all still be on screen.
const MAX_BLOCK_ROWS: usize = 12;

/// Lines of a failed server's stderr shown under its notice (`tern mcp list` shows more).
pub(super) const STDERR_LINES: usize = 5;

/// `text` cut to `width` columns, a cut marked with `…`.
pub(super) fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// One line of a tail as it may be shown: colour and cursor sequences (a server's coloured log,
/// a command's) dropped, other control characters made visible, tabs as spaces.
fn clean(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            // CSI: parameters up to a final byte in `@`..`~`.
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        plain.push(c);
    }
    sanitize(&plain.replace('\t', "    ").replace(['\n', '\r'], " "))
}

impl TerminalPrinter {
    /// A running call's last lines: kept with the call and drawn under it, replacing what was
    /// drawn before. Only where lines can be rewritten (colour on a terminal): written once, a
    /// tail would be stale output in the middle of the transcript.
    pub(super) fn output_tail(&mut self, call_id: &str, lines: &[String]) {
        if !self.redraw {
            return;
        }
        let Some(call) = self.pending.iter_mut().find(|c| c.id == call_id) else {
            // The result came first: its tail is old news.
            return;
        };
        let skip = lines.len().saturating_sub(LIVE_LINES);
        call.tail = lines[skip..].iter().map(|l| clean(l)).collect();
        self.draw_tails();
    }

    /// The live block: the tail of each running call that has one, labelled when there are
    /// several (a parallel batch). Each line fits on one row, so the block's rows are its lines.
    fn draw_tails(&mut self) {
        let width = self.screen.columns().saturating_sub(1).max(8);
        let with_tail: Vec<_> = self.pending.iter().filter(|c| !c.tail.is_empty()).collect();
        let labelled = with_tail.len() > 1;
        let mut block = Vec::new();
        for call in with_tail {
            if labelled {
                block.push(self.paint(DIM, &fit(&format!("  ⎿ {}", call.label), width)));
            }
            for line in &call.tail {
                block.push(self.paint(DIM, &fit(&format!("    {line}"), width)));
            }
        }
        let skip = block.len().saturating_sub(MAX_BLOCK_ROWS);
        self.screen.live(&block[skip..]);
    }

    /// The last lines a failed server wrote to stderr (already redacted, like every event a
    /// printer sees), for its notice.
    pub(super) fn stderr_tail(&self, tail: &[String]) -> Vec<String> {
        let width = self.screen.columns().saturating_sub(1).max(8);
        let lines: Vec<&String> = tail.iter().filter(|l| !l.trim().is_empty()).collect();
        let skip = lines.len().saturating_sub(STDERR_LINES);
        lines[skip..]
            .iter()
            .map(|l| self.paint(DIM, &fit(&format!("  ┆ {}", clean(l)), width)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tern_protocol::{Envelope, Event};

    use super::super::{Captured, Mode, Screen};
    use super::*;
    use crate::agent::Subscriber;

    fn feed(printer: &mut TerminalPrinter, events: Vec<Event>) {
        for (seq, event) in events.into_iter().enumerate() {
            printer.on_event(&Envelope {
                run_id: "r".into(),
                session_id: "s".into(),
                seq: seq as u64,
                ts: "2026-12-01T00:00:00.000Z".into(),
                event,
            });
        }
    }

    fn visible(text: &str) -> String {
        text.replace('\x1b', "⟨ESC⟩").replace('\r', "⟨CR⟩")
    }

    fn failed() -> Event {
        Event::ServerFailed {
            server: "db".into(),
            reason: "the server exited unexpectedly".into(),
            stderr_tail: [
                "db: starting",
                "db: pool of 4 connections",
                "",
                "db: connecting as [REDACTED]",
                "db: retrying\tin 1s",
                "db: \x1b[31mfatal\x1b[0m: the database refused the connection",
                "db: exiting with status 3 after 3 attempts to reach the database at 10.0.0.7:5432, a line longer than the terminal is wide",
            ]
            .map(String::from)
            .to_vec(),
            will_restart: true,
            required: false,
        }
    }

    /// What a notice looks like above the prompt: the red line, then the server's last stderr
    /// lines dimmed (control characters visible, long lines cut to the width). Nothing is written
    /// into the line being typed; once the prompt is done, output is written as it comes again.
    #[test]
    fn a_notice_while_the_prompt_is_read_goes_above_it_with_the_servers_stderr() {
        let mut shown = Vec::new();
        for color in [false, true] {
            let (out, err) = (Captured::default(), Captured::default());
            let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
            let mut printer = TerminalPrinter::on(screen.clone(), color, Mode::Interactive);
            let printed = Arc::new(Mutex::new(Vec::<String>::new()));
            let sink = printed.clone();
            let prompting = screen.above_prompt(Box::new(move |text| {
                sink.lock().unwrap().push(text);
            }));
            feed(&mut printer, vec![failed()]);
            assert_eq!(out.text(), "", "written into the line being typed");
            let printed = printed.lock().unwrap().clone();
            assert!(printed.iter().all(|p| p.ends_with('\n')), "{printed:?}");
            shown.push(visible(&printed.concat()));
            drop(prompting);
            feed(&mut printer, vec![failed()]);
            assert!(out.text().contains("[server db crashed, restarting"));
        }
        insta::assert_snapshot!(shown.join("\n---- in colour ----\n"));
    }

    fn shell_call(id: &str) -> Event {
        Event::ToolCallStarted {
            call_id: id.into(),
            tool: "shell__run".into(),
            arguments: json!({"command": "for i in 1 2 3; do echo line$i; sleep 0.5; done"}),
        }
    }

    fn tail(id: &str, lines: &[&str]) -> Event {
        Event::ToolOutputTail {
            call_id: id.into(),
            lines: lines.iter().map(|l| l.to_string()).collect(),
        }
    }

    fn finished(id: &str) -> Event {
        Event::ToolCallFinished {
            call_id: id.into(),
            tool: "shell__run".into(),
            is_error: false,
            error_type: None,
            duration_ms: 1_520,
            summary: "line1".into(),
            output: "line1\nline2\nline3\n[exit code 0 · 1.52 s]".into(),
            diff: None,
        }
    }

    /// The tail is drawn under the call's line, replaced in place (up over its rows, erased to
    /// the end of the screen, drawn again), and erased before the result; the call's line then
    /// still gets its duration, since the tail was never counted as output.
    #[test]
    fn a_running_calls_tail_is_replaced_in_place_and_gone_when_its_result_comes() {
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
        let mut printer = TerminalPrinter::on(screen, true, Mode::Interactive);
        feed(
            &mut printer,
            vec![
                shell_call("c1"),
                tail("c1", &["line1"]),
                tail("c1", &["line1", "line2"]),
                tail("c1", &["1", "2", "3", "4", "5", "6", "7"]),
                finished("c1"),
            ],
        );
        let text = out.text();
        assert!(text.contains("\x1b[2A\r\x1b[J"), "the 2-line tail erased");
        assert!(
            !text.contains("    1\n"),
            "only the last {LIVE_LINES} lines: {text:?}"
        );
        assert!(
            text.contains("\x1b[5A\r\x1b[J\x1b[1A\r\x1b[J"),
            "tail erased, then the call line rewritten with its duration: {text:?}"
        );
        insta::assert_snapshot!(visible(&text));

        // In plain text nothing is rewritten, so no tail is shown at all.
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
        let mut printer = TerminalPrinter::on(screen, false, Mode::Interactive);
        feed(
            &mut printer,
            vec![shell_call("c1"), tail("c1", &["line1"]), finished("c1")],
        );
        assert!(!out.text().contains("    line1"), "{}", out.text());
    }

    /// Two calls running at once: each tail under a label naming its call.
    #[test]
    fn the_tails_of_parallel_calls_are_labelled() {
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Arc::new(Screen::new(Box::new(out.clone()), Box::new(err), false, 80));
        let mut printer = TerminalPrinter::on(screen, true, Mode::Interactive);
        feed(
            &mut printer,
            vec![
                shell_call("a"),
                shell_call("b"),
                tail("a", &["from a"]),
                tail("b", &["from b"]),
            ],
        );
        let text = out.text();
        let last = &text[text.rfind("\x1b[J").unwrap_or(0)..];
        assert_eq!(last.lines().count(), 4, "{last:?}");
        assert_eq!(
            last.matches("⎿ shell__run(for i in 1 2 3; do echo").count(),
            2,
            "{last:?}"
        );
        assert!(
            last.contains("from a") && last.contains("from b"),
            "{last:?}"
        );
    }

    #[test]
    fn a_line_is_cut_to_the_width_by_columns_not_characters() {
        assert_eq!(fit("abcdef", 6), "abcdef");
        assert_eq!(fit("abcdefg", 6), "abcde…");
        // Wide characters take two columns each.
        assert_eq!(fit("日本語テキスト", 7), "日本語…");
        assert_eq!(clean("a\tb\x1b[31mred\x1b[0m"), "a    bred");
        // Anything else that could drive the terminal stays visible, not executed.
        assert_eq!(clean("x\x1b]52;c;AAAA\x07"), "x^[]52;c;AAAA\\u{0007}");
    }
}
