//! The todo list as a checklist that updates in place (issue 20: "the terminal shows the list as
//! a checklist that updates in place").
//!
//! tern's terminal is a scrolling transcript, not a full-screen UI, so "in place" means: the
//! checklist stands for the `todo__write` call that changed it (Claude Code shows its TodoWrite
//! the same way: the list is the call's display, with no separate result line), and
//! - when the previous checklist is still the last thing on screen — nothing but the next
//!   todo call's own line was written since, the usual shape of a model ticking items off one
//!   step after another — the new list is drawn *over* the old one (cursor up over the call
//!   line and the old list, erase down, draw), so the screen shows one list;
//! - when other output came in between (text, other calls), redrawing there would erase that
//!   output, so the list is printed below; when only statuses changed it is printed compactly:
//!   its heading with the progress and just the items that changed. A new or edited item brings
//!   the whole list again. `/todo` always prints the whole list.
//!
//! Without colour (plain text, a pipe) nothing is ever rewritten: each update is printed below
//! (compact when only statuses changed), and the call's own line is left out as on a terminal.

use tern_protocol::todo::{TodoItem, TodoList, TodoStatus};
use unicode_width::UnicodeWidthStr;

use super::TerminalPrinter;
use super::style::{BOLD, CYAN, DIM, GREEN, Palette, YELLOW, sanitize};

/// The last checklist drawn, to redraw it in place or to say only what changed.
pub(super) struct Shown {
    /// The items as drawn.
    items: Vec<TodoItem>,
    /// Rows it took on screen.
    rows: usize,
    /// The screen's write count just after it was drawn: still equal while nothing else is.
    writes: u64,
}

/// The todo list as a checklist under a heading with its progress: `/todo` and every
/// `todo_updated` show the same lines.
pub fn todo_lines(list: &TodoList, color: bool) -> Vec<String> {
    let palette = Palette { color };
    let mut lines = vec![heading(list, palette)];
    lines.extend(list.todos.iter().map(|item| item_line(item, palette)));
    if list.todos.is_empty() {
        lines.push(palette.paint(DIM, "  (empty)"));
    }
    lines
}

fn heading(list: &TodoList, palette: Palette) -> String {
    format!(
        "{} {}",
        palette.paint(CYAN, "☰"),
        palette.paint(BOLD, &format!("Todo · {}", list.progress()))
    )
}

fn item_line(item: &TodoItem, palette: Palette) -> String {
    let text = sanitize(&item.text.replace(['\n', '\r'], " "));
    match item.status {
        TodoStatus::Pending => format!("  ☐ {text}"),
        TodoStatus::InProgress => format!(
            "  {} {}",
            palette.paint(YELLOW, "▶"),
            palette.paint(BOLD, &text)
        ),
        TodoStatus::Done => format!(
            "  {} {}",
            palette.paint(GREEN, "✔"),
            palette.paint(DIM, &text)
        ),
        TodoStatus::Cancelled => palette.paint(DIM, &format!("  ✗ {text} (cancelled)")),
    }
}

/// The lines for `list` when `before` was shown last and is no longer on screen: the heading
/// and the items whose status changed when the items are the same (same ids and texts, same
/// order); the whole list otherwise.
fn changed_lines(before: &[TodoItem], list: &TodoList, palette: Palette) -> Vec<String> {
    let same_items = before.len() == list.todos.len()
        && before
            .iter()
            .zip(&list.todos)
            .all(|(a, b)| a.id == b.id && a.text == b.text);
    if !same_items {
        return todo_lines(list, palette.color);
    }
    let mut lines = vec![heading(list, palette)];
    lines.extend(
        before
            .iter()
            .zip(&list.todos)
            .filter(|(a, b)| a.status != b.status)
            .map(|(_, b)| item_line(b, palette)),
    );
    lines
}

impl TerminalPrinter {
    /// A `todo_updated`: the checklist in place of the call that changed it, over the previous
    /// checklist when that is still the last thing on screen (see the module doc).
    pub(super) fn todo_updated(&mut self, list: &TodoList) {
        self.screen.spin(None);
        self.end_line();
        let columns = self.screen.columns();
        let rows_of = |width: usize| width.max(1).div_ceil(columns);
        // The call that brought the list: the one running. In a parallel batch it cannot be
        // told which, and every call keeps its own line and result.
        let call = match self.pending.as_mut_slice() {
            [call] => Some(call),
            _ => None,
        };
        let writes = self.screen.writes();
        let mut up = 0;
        let mut over_previous = false;
        match call {
            Some(call) if self.redraw => {
                // The checklist is the call's result, wherever it is drawn.
                call.shown_as_todo = true;
                if call.written == Some(writes) && !self.screen.mid_line() {
                    // Its line is the last one: the checklist takes its place.
                    up += rows_of(call.width);
                    if let Some(previous) = &self.todo
                        && previous.writes == call.before
                    {
                        up += previous.rows;
                        over_previous = true;
                    }
                }
            }
            // Plain text: the line held back is never written; the list stands for it.
            Some(call) if call.written.is_none() => {
                call.written = Some(0);
                call.shown_as_todo = true;
            }
            // No call line (a list seeded by the REPL itself): over the previous list if last.
            None if self.redraw && !self.screen.mid_line() => {
                if let Some(previous) = &self.todo
                    && previous.writes == writes
                {
                    up += previous.rows;
                    over_previous = true;
                }
            }
            _ => {}
        }
        // Only what is still on screen can be drawn over: when the old list's first row has
        // scrolled away, only the call's line is replaced and the update goes below it.
        if up >= self.screen.height()
            && let Some(previous) = self.todo.as_ref().filter(|_| over_previous)
        {
            up -= previous.rows;
            over_previous = false;
        }
        if up >= self.screen.height() {
            up = 0;
        }
        let lines = match &self.todo {
            Some(previous) if !over_previous => changed_lines(&previous.items, list, self.palette),
            _ => todo_lines(list, self.palette.color),
        };
        let plain = match &self.todo {
            Some(previous) if !over_previous => {
                changed_lines(&previous.items, list, Palette { color: false })
            }
            _ => todo_lines(list, false),
        };
        let rows = plain.iter().map(|l| rows_of(l.width())).sum();
        let erase = if up > 0 {
            format!("\x1b[{up}A\r\x1b[J")
        } else {
            String::new()
        };
        let block: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.out(&format!("{erase}{block}"));
        self.todo = Some(Shown {
            items: list.todos.clone(),
            rows,
            writes: self.screen.writes(),
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use tern_protocol::{Envelope, Event, todo::TodoCounts};

    use super::super::{Captured, Mode, Screen, TerminalPrinter};
    use super::*;
    use crate::agent::Subscriber;

    fn item(id: &str, text: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: id.into(),
            text: text.into(),
            status,
        }
    }

    fn list(statuses: [TodoStatus; 3]) -> Vec<TodoItem> {
        let [a, b, c] = statuses;
        vec![
            item("1", "Read the code", a),
            item("2", "Fix the bug", b),
            item("3", "Run the tests", c),
        ]
    }

    /// One `todo__write` call the way the engine reports it: its line, the update, its result.
    fn write_call(id: &str, todos: Vec<TodoItem>) -> Vec<Event> {
        vec![
            Event::State {
                state: tern_protocol::LoopState::CallModel,
                step: 1,
            },
            Event::ToolCallStarted {
                call_id: id.into(),
                tool: "todo__write".into(),
                arguments: json!({"todos": []}),
            },
            Event::TodoUpdated {
                todos,
                counts: TodoCounts::default(),
            },
            Event::ToolCallFinished {
                call_id: id.into(),
                tool: "todo__write".into(),
                is_error: false,
                error_type: None,
                duration_ms: 3,
                summary: "3 item(s)".into(),
                output: "3 item(s)".into(),
                diff: None,
            },
        ]
    }

    fn shown(color: bool, events: Vec<Event>) -> String {
        shown_on(color, usize::MAX, events)
    }

    fn shown_on(color: bool, height: usize, events: Vec<Event>) -> String {
        let (out, err) = (Captured::default(), Captured::default());
        let screen = Screen::new(Box::new(out.clone()), Box::new(err), false, 80);
        let screen = Arc::new(screen.with_height(height));
        let mut printer = TerminalPrinter::on(screen, color, Mode::Interactive);
        for (seq, event) in events.into_iter().enumerate() {
            printer.on_event(&Envelope {
                run_id: "r".into(),
                session_id: "s".into(),
                seq: seq as u64,
                ts: "2026-12-01T00:00:00.000Z".into(),
                event,
            });
        }
        drop(printer);
        out.text()
    }

    use TodoStatus::{Done, InProgress, Pending};

    #[test]
    fn a_second_update_right_after_the_first_is_drawn_over_it() {
        let mut events = write_call("a", list([InProgress, Pending, Pending]));
        events.extend(write_call("b", list([Done, InProgress, Pending])));
        let text = shown(true, events);
        // The second call's line (1 row) and the first list (4 rows) are erased, then the new
        // list is drawn; no result line under either.
        assert!(text.contains("\x1b[5A\r\x1b[J"), "{text:?}");
        assert!(!text.contains('⎿'), "{text:?}");
        insta::assert_snapshot!(text.replace('\x1b', "⟨ESC⟩"));
    }

    #[test]
    fn a_list_taller_than_the_screen_is_not_redrawn_in_place() {
        let mut events = write_call("a", list([InProgress, Pending, Pending]));
        events.extend(write_call("b", list([Done, InProgress, Pending])));
        // 5 rows to go up (the call line and the old list) on a 5-row screen: the old list's
        // first row has scrolled away, so the update goes below, compactly.
        let text = shown_on(true, 5, events);
        assert!(!text.contains("\x1b[5A"), "{text:?}");
        assert_eq!(text.matches("Todo · ").count(), 2, "{text:?}");
        // Each call's line is still replaced by its list (one row up, twice).
        assert_eq!(text.matches("\x1b[1A\r\x1b[J").count(), 2, "{text:?}");
        assert_eq!(text.matches("Run the tests").count(), 1, "{text:?}");
    }

    #[test]
    fn after_other_output_only_what_changed_is_printed_and_new_items_bring_the_whole_list() {
        let mut events = write_call("a", list([InProgress, Pending, Pending]));
        events.push(Event::TextDelta {
            text: "Reading it now.\n".into(),
        });
        events.extend(write_call("b", list([Done, InProgress, Pending])));
        events.push(Event::TextDelta {
            text: "One more step.\n".into(),
        });
        let mut longer = list([Done, InProgress, Pending]);
        longer.push(item("4", "Write the docs", Pending));
        events.extend(write_call("c", longer));
        for color in [false, true] {
            let text = shown(color, events.clone());
            let plain = text.replace('\x1b', "");
            assert!(
                plain.contains("Reading it now."),
                "the text between is kept: {text:?}"
            );
            assert_eq!(text.matches("Todo · ").count(), 3, "{text:?}");
            assert!(!text.contains('⎿'), "{text:?}");
            if !color {
                insta::assert_snapshot!(text);
            } else {
                // Only each call's own line is ever erased: one row up, never over the text.
                assert_eq!(text.matches("\x1b[1A\r\x1b[J").count(), 3, "{text:?}");
            }
        }
    }

    #[test]
    fn in_a_parallel_batch_every_call_keeps_its_line_and_result() {
        let mut events = write_call("a", list([InProgress, Pending, Pending]));
        // A second call starts before the todo call's update arrives.
        events.insert(
            2,
            Event::ToolCallStarted {
                call_id: "x".into(),
                tool: "fs__read_file".into(),
                arguments: json!({"path": "a.txt"}),
            },
        );
        let text = shown(true, events);
        assert!(text.contains("todo__write"), "{text:?}");
        assert!(text.contains("fs__read_file"), "{text:?}");
        assert!(text.contains('⎿'), "{text:?}");
        assert!(text.contains("Todo · 0/3 done"), "{text:?}");
    }
}
