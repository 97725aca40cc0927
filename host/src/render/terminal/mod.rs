//! The human view of a run: streamed answers rendered as markdown, one line per tool call with
//! its result folded, coloured diffs, a spinner while something runs, a status line per turn.
//!
//! Colour and the spinner only on a terminal, and never with `NO_COLOR`; otherwise the output is
//! the plain text. Text from the model and from tools is sanitised: only escape sequences tern
//! writes itself reach the terminal.

mod calls;
mod diff;
mod highlight;
mod markdown;
mod notify;
mod preview;
mod rate;
mod screen;
mod status;
mod style;
mod table;
mod tails;
mod thinking;
mod todo;

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use tern_protocol::{CompactionStage, Decision, Envelope, Event, LoopState, RunStatus};
use unicode_width::UnicodeWidthStr;

pub use notify::Notifier;
pub use preview::{CallPreview, approval_preview};
#[cfg(test)]
use screen::Captured;
pub use screen::{PromptPrinter, Screen};
pub use style::sanitize;
use style::{BOLD, DIM, Palette, RED, YELLOW};
pub use thinking::thought_lines;
pub use todo::todo_lines;

use self::{calls::Finished, markdown::Markdown, status::Turn};
use crate::agent::Subscriber;
pub use crate::units::{format_cost, format_tokens};

/// Lines of a tool's output shown under its call before the rest is folded.
const FOLD_LINES: usize = 4;

/// How the printer is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `tern run`: nothing to expand later.
    Headless,
    /// The REPL: folded output can be expanded (Ctrl-O).
    Interactive,
}

/// Renders events for a person.
pub struct TerminalPrinter {
    palette: Palette,
    mode: Mode,
    screen: Arc<Screen>,
    markdown: Markdown,
    /// The current streamed line as shown so far (sanitised, unstyled).
    line: String,
    /// A model request went out: servers ready from now on are news.
    requested: bool,
    /// The conversation's size after the last turn that got an answer: a cancelled or failed
    /// turn reports 0 (no answer measured it), and the status line says this instead.
    last_context: u64,
    /// The model's thinking being streamed (folded or in full).
    thinking: thinking::Thinking,
    /// Lines may be rewritten in place (colour on a terminal); without it every line is
    /// written once.
    redraw: bool,
    /// Paths inside it are shown relative to it.
    workspace: calls::Workspace,
    /// Calls started whose results have not come, in the order they started.
    pending: Vec<calls::Pending>,
    /// Output tokens per second, for the spinner and the status line.
    rate: rate::Rate,
    /// The last todo checklist drawn, to update it in place ([`todo`]).
    todo: Option<todo::Shown>,
}

impl TerminalPrinter {
    /// The real terminal: colour only when stdout is a terminal and `NO_COLOR` is unset.
    pub fn auto(mode: Mode) -> Self {
        use std::io::IsTerminal;
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let printer = Self::on(Screen::terminal(color), color, mode);
        match std::env::current_dir() {
            Ok(dir) => printer.in_workspace(&dir),
            Err(_) => printer,
        }
    }

    /// A printer on `screen`.
    pub fn on(screen: Arc<Screen>, color: bool, mode: Mode) -> Self {
        let palette = Palette { color };
        Self {
            palette,
            mode,
            screen,
            markdown: Markdown::new(palette),
            line: String::new(),
            requested: false,
            last_context: 0,
            thinking: thinking::Thinking::default(),
            redraw: color,
            workspace: calls::Workspace::default(),
            pending: Vec::new(),
            rate: rate::Rate::default(),
            todo: None,
        }
    }

    /// Shows paths inside `dir` (diff headers, quoted paths of a result) relative to it.
    pub fn in_workspace(mut self, dir: &Path) -> Self {
        self.workspace = calls::Workspace::new(dir);
        self
    }

    /// The screen this printer draws on (for the approver, which must pause the spinner).
    pub fn screen(&self) -> Arc<Screen> {
        self.screen.clone()
    }

    fn paint(&self, style: &str, text: &str) -> String {
        self.palette.paint(style, text)
    }

    /// A line of its own (a newline first when mid-line).
    fn say(&mut self, text: &str) {
        self.end_line();
        self.out(&format!("{text}\n"));
    }

    /// Writes `text`, after any call line held back (plain text) so the order stays true.
    fn out(&mut self, text: &str) {
        self.flush_held();
        self.screen.write(text);
    }

    /// Writes the call lines held back (plain text) as they are, without a duration: something
    /// else must be shown first, so their results will carry a label.
    fn flush_held(&mut self) {
        for call in &mut self.pending {
            if call.written.is_none() {
                self.screen.write(&format!("{}\n", call.line));
                call.written = Some(0);
            }
        }
    }

    /// Finishes a streamed line that did not end in a newline.
    fn end_line(&mut self) {
        if !self.line.is_empty() || self.screen.mid_line() {
            self.finish_line();
        }
        for line in self.markdown.finish(self.screen.columns()) {
            self.out(&format!("{line}\n"));
        }
    }

    /// Streams model text: each piece at once; a finished line is redrawn as markdown.
    fn text(&mut self, delta: &str) {
        let clean = sanitize(delta).replace('\t', "    ");
        let mut parts = clean.split('\n').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                self.out(part);
                self.line.push_str(part);
            }
            if parts.peek().is_some() {
                self.finish_line();
            }
        }
    }

    /// Ends the current streamed line, replacing its raw text with the rendered one.
    fn finish_line(&mut self) {
        let raw = std::mem::take(&mut self.line);
        let shown = self.markdown.show(&raw, self.screen.columns());
        if self.palette.color && shown != [raw.clone()] {
            // Up over the streamed raw text, erased, then what replaces it (maybe nothing).
            let rows = raw.width().max(1).div_ceil(self.screen.columns());
            let up = if rows > 1 {
                format!("\x1b[{}A", rows - 1)
            } else {
                String::new()
            };
            let lines: String = shown.iter().map(|l| format!("{l}\n")).collect();
            self.out(&format!("{up}\r\x1b[J{lines}"));
        } else {
            self.out("\n");
        }
    }

    /// A piece of the stream (answer or thinking) for the rate; the estimate to show.
    fn stream_rate(&mut self, text: &str) -> Option<String> {
        self.rate
            .delta(text, Instant::now())
            .map(|r| rate::shown(r, true))
    }
}

impl Drop for TerminalPrinter {
    fn drop(&mut self) {
        self.screen.close();
    }
}

/// The arguments of a call on one line: the value alone when there is one argument.
fn short_args(args: &serde_json::Value) -> String {
    let s = match args.as_object() {
        Some(map) if map.len() == 1 => map
            .values()
            .next()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .unwrap_or_default(),
        _ => args.to_string(),
    };
    let one_line = sanitize(&s.replace('\n', "⏎"));
    if one_line.chars().count() > 100 {
        let cut: String = one_line.chars().take(100).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// The status line after a turn: tokens, cache share, cost, how full the context is.
pub fn status_line(
    usage: &tern_protocol::Usage,
    cost_usd: Option<f64>,
    context_tokens: u64,
    context_window: Option<u64>,
) -> String {
    let mut parts = vec![
        format!("{} in", format_tokens(usage.total_input())),
        format!("{:.0}% cached", usage.cache_hit_percent()),
        format!("{} out", format_tokens(usage.output)),
    ];
    if let Some(cost) = cost_usd {
        parts.push(format_cost(cost));
    }
    match context_window {
        Some(window) if window > 0 => parts.push(format!(
            "context {:.0}% of {}",
            context_tokens as f64 * 100.0 / window as f64,
            format_tokens(window)
        )),
        _ => parts.push(format!("context {}", format_tokens(context_tokens))),
    }
    parts.join(" · ")
}

impl Subscriber for TerminalPrinter {
    fn on_event(&mut self, e: &Envelope) {
        if let Event::ThinkingDelta { text } = &e.event {
            if !self.thinking.open() {
                self.end_line();
            }
            self.flush_held();
            self.thinking.piece(&self.screen, self.palette, text);
            let note = self.stream_rate(text);
            if self.thinking.full() {
                self.screen.stream("thinking", note);
            } else if let Some(note) = note {
                self.screen.progress(note);
            }
            return;
        }
        if self.thinking.open() {
            let interactive = self.mode == Mode::Interactive;
            self.flush_held();
            self.thinking.close(&self.screen, self.palette, interactive);
        }
        match &e.event {
            Event::State {
                state: LoopState::CallModel,
                ..
            } => {
                self.requested = true;
                if !self.screen.mid_line() {
                    self.screen.spin(Some("thinking".into()));
                }
            }
            // A server that came up after the run started: its tools join from the next step.
            Event::ServerReady { server, tools, .. } if self.requested => {
                let line = self.paint(DIM, &format!("[server {server} ready: {tools} tools]"));
                self.say(&line);
            }
            // The spinner stays over the stream, to show when it stalls, with the rate.
            Event::TextDelta { text } => {
                let note = self.stream_rate(text);
                self.screen.stream("responding", note);
                self.text(text);
            }
            Event::ModelResponse {
                output_tokens,
                latency_ms,
                calls,
                ..
            } => {
                let unstreamed = calls.iter().map(|c| c.arguments.to_string().len()).sum();
                self.rate.response(
                    *output_tokens,
                    unstreamed,
                    Duration::from_millis(*latency_ms),
                    Instant::now(),
                );
                if self.screen.streaming() {
                    self.screen.spin(None);
                }
            }
            Event::ToolCallStarted {
                call_id,
                tool,
                arguments,
            } => self.tool_started(call_id, tool, arguments),
            Event::ToolOutputTail { call_id, lines } => self.output_tail(call_id, lines),
            Event::ToolProgress {
                message,
                progress,
                total,
                ..
            } => self.screen.progress(match (message, total) {
                (Some(m), _) => sanitize(m),
                (None, Some(t)) => format!("{progress}/{t}"),
                (None, None) => format!("{progress}"),
            }),
            // A long call the server runs as a task: its state on the spinner line.
            Event::ToolTask {
                status, message, ..
            } => self.screen.progress(match message {
                Some(m) => format!("task {}: {}", sanitize(status), sanitize(m)),
                None => format!("task {}", sanitize(status)),
            }),
            // The reason follows in the call's error result.
            Event::PermissionDecided {
                decision: Decision::Deny,
                rule,
                tool,
                ..
            } => {
                let line = format!("  {} {tool} denied ({rule})", self.paint(RED, "✗"));
                self.say(&line);
            }
            Event::ToolCallFinished {
                call_id,
                tool,
                is_error,
                summary,
                output,
                diff,
                duration_ms,
                ..
            } => self.tool_finished(
                call_id,
                tool,
                Finished {
                    is_error: *is_error,
                    summary,
                    output,
                    diff: diff.as_deref(),
                    duration_ms: *duration_ms,
                },
            ),
            Event::ModelRetry {
                attempt,
                reason,
                delay_ms,
                discard_partial,
            } => {
                if *discard_partial {
                    self.markdown.reset();
                }
                let note = if *discard_partial {
                    " (discarding the partial answer)"
                } else {
                    ""
                };
                let line = self.paint(
                    DIM,
                    &format!(
                        "[retry {attempt} in {delay_ms} ms: {}]{note}",
                        sanitize(reason)
                    ),
                );
                self.say(&line);
            }
            Event::ServerFailed {
                server,
                reason,
                stderr_tail,
                will_restart,
                ..
            } => {
                let what = if *will_restart {
                    "crashed, restarting"
                } else {
                    "failed"
                };
                let line = self.paint(
                    RED,
                    &format!("[server {server} {what}: {}]", sanitize(reason)),
                );
                self.say(&line);
                for line in self.stderr_tail(stderr_tail) {
                    self.say(&line);
                }
            }
            Event::Compaction {
                reason,
                stage,
                before_tokens,
                after_tokens,
                elided_results,
                summarized_messages,
                ..
            } => {
                let what = match stage {
                    CompactionStage::Elide => {
                        format!("elided the output of {elided_results} older tool call(s)")
                    }
                    CompactionStage::Summarize => {
                        format!("summarized {summarized_messages} older message(s)")
                    }
                };
                let line = self.paint(
                    DIM,
                    &format!(
                        "[context {reason}: {what}; {} → {} tokens]",
                        format_tokens(*before_tokens),
                        format_tokens(*after_tokens)
                    ),
                );
                self.say(&line);
            }
            Event::TodoUpdated { todos, counts } => {
                self.todo_updated(&tern_protocol::todo::TodoList {
                    todos: todos.clone(),
                    counts: *counts,
                    changed: true,
                })
            }
            Event::PlanProposed { plan, .. } => {
                self.screen.spin(None);
                let line = self.paint(BOLD, "Proposed plan:");
                self.say(&line);
                self.markdown.reset();
                self.text(plan);
                self.end_line();
                self.markdown.reset();
            }
            Event::Error { message } => {
                self.screen.spin(None);
                let line = self.paint(RED, &format!("error: {}", sanitize(message)));
                self.say(&line);
            }
            Event::TurnEnd { .. } => {
                self.screen.spin(None);
                self.end_line();
                self.markdown.reset();
            }
            Event::TurnFinished {
                status,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                cost_usd,
                context_tokens,
                context_window,
                model,
                mode,
                ..
            } => {
                self.screen.spin(None);
                let usage = tern_protocol::Usage {
                    input: *input_tokens,
                    output: *output_tokens,
                    cache_read: *cache_read_tokens,
                    cache_creation: *cache_creation_tokens,
                };
                let line = self.turn_line(Turn {
                    status: *status,
                    usage: &usage,
                    cost_usd: *cost_usd,
                    context_tokens: *context_tokens,
                    context_window: *context_window,
                    model: model.as_deref(),
                    mode: mode.as_deref(),
                });
                let line = self.paint(DIM, &format!("  {line}"));
                self.say(&line);
            }
            Event::RunFinished {
                status,
                steps,
                duration_ms,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                cost_usd,
                error,
                ..
            } => {
                self.screen.spin(None);
                if let Some(err) = error
                    && !matches!(status, RunStatus::Error)
                {
                    let line = self.paint(YELLOW, &sanitize(err));
                    self.say(&line);
                }
                let total_in = input_tokens + cache_read_tokens + cache_creation_tokens;
                let cost = cost_usd
                    .map(|c| format!(" · {}", format_cost(c)))
                    .unwrap_or_default();
                let summary = format!(
                    "[run] {} · {steps} steps · {:.1} s · {} in ({} cached) / {} out{cost}",
                    status.as_str(),
                    *duration_ms as f64 / 1000.0,
                    format_tokens(total_in),
                    format_tokens(*cache_read_tokens),
                    format_tokens(*output_tokens)
                );
                let line = self.paint(DIM, &summary);
                self.say(&line);
            }
            _ => {}
        }
    }

    fn close(&mut self) {
        self.end_line();
        self.flush_held();
        self.screen.close();
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
