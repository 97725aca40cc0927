//! The human view of a run: streamed text, one line per tool call (never glued
//! onto streamed text), a spinner while a tool runs, coloured diffs, light
//! markdown styling, and a closing summary line.

use std::{
    io::{IsTerminal, Write},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tern_protocol::{Decision, Envelope, Event, RunStatus};

use crate::agent::Subscriber;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// What the spinner thread shows.
#[derive(Default)]
struct Spin {
    label: Option<(String, Instant)>,
    progress: Option<String>,
}

/// Renders events for a person.
pub struct TerminalPrinter {
    color: bool,
    /// The current output line has text on it.
    mid_line: bool,
    /// The current streamed line so far (to restyle it when it ends).
    pending: String,
    in_code: bool,
    spin: Arc<Mutex<Spin>>,
    spinner_alive: Arc<AtomicBool>,
}

impl TerminalPrinter {
    /// `color`: ANSI styling and the spinner (only when attached to a terminal).
    pub fn new(color: bool) -> Self {
        let spin = Arc::new(Mutex::new(Spin::default()));
        let alive = Arc::new(AtomicBool::new(color && std::io::stderr().is_terminal()));
        if alive.load(Ordering::SeqCst) {
            let spin = spin.clone();
            let alive = alive.clone();
            std::thread::spawn(move || spinner(spin, alive));
        }
        Self {
            color,
            mid_line: false,
            pending: String::new(),
            in_code: false,
            spin,
            spinner_alive: alive,
        }
    }

    /// Colour only for terminals, and never when `NO_COLOR` is set.
    pub fn auto() -> Self {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Self::new(color)
    }

    fn paint(&self, style: &str, text: &str) -> String {
        if self.color {
            format!("{style}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn out(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        if let Some(last) = text.chars().last() {
            self.mid_line = last != '\n';
        }
    }

    /// Starts a line of its own (a newline first when mid-line).
    fn line(&mut self, text: &str) {
        if self.mid_line {
            self.out("\n");
        }
        self.pending.clear();
        self.out(&format!("{text}\n"));
    }

    /// Streams text as it arrives. A finished line that markdown styles
    /// (heading, code) is redrawn styled in place when it fits on one row.
    fn text(&mut self, delta: &str) {
        let mut parts = delta.split('\n').peekable();
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                self.out(part);
                self.pending.push_str(part);
            }
            if parts.peek().is_none() {
                break;
            }
            let line = std::mem::take(&mut self.pending);
            let styled = self.style_line(&line);
            if self.color && styled != line && line.chars().count() < 80 {
                self.out(&format!("\r\x1b[2K{styled}\n"));
            } else {
                self.out("\n");
            }
        }
    }

    /// Light markdown: headings bold, code blocks cyan, inline code cyan.
    fn style_line(&mut self, line: &str) -> String {
        if line.trim_start().starts_with("```") {
            self.in_code = !self.in_code;
            return self.paint(DIM, line);
        }
        if !self.color {
            return line.to_string();
        }
        if self.in_code {
            return self.paint(CYAN, line);
        }
        if line.starts_with('#') {
            return self.paint(BOLD, line.trim_start_matches('#').trim_start());
        }
        if !line.contains('`') {
            return line.to_string();
        }
        let mut out = String::new();
        let mut code = false;
        for part in line.split('`') {
            if code {
                out.push_str(&self.paint(CYAN, part));
            } else {
                out.push_str(part);
            }
            code = !code;
        }
        out
    }

    fn set_spin(&self, label: Option<String>) {
        if let Ok(mut s) = self.spin.lock() {
            s.label = label.map(|l| (l, Instant::now()));
            s.progress = None;
        }
    }
}

impl Drop for TerminalPrinter {
    fn drop(&mut self) {
        self.spinner_alive.store(false, Ordering::SeqCst);
    }
}

fn spinner(spin: Arc<Mutex<Spin>>, alive: Arc<AtomicBool>) {
    const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut i = 0;
    let mut drawn = false;
    while alive.load(Ordering::SeqCst) {
        let line = spin.lock().ok().and_then(|s| {
            s.label.as_ref().map(|(label, t)| {
                let progress = s
                    .progress
                    .as_deref()
                    .map(|p| format!(" · {p}"))
                    .unwrap_or_default();
                format!(
                    "{} {label} {:.1}s{progress}",
                    FRAMES[i % FRAMES.len()],
                    t.elapsed().as_secs_f64()
                )
            })
        });
        let mut err = std::io::stderr().lock();
        match line {
            Some(l) => {
                let _ = write!(err, "\r\x1b[2K{l}");
                drawn = true;
            }
            None if drawn => {
                let _ = write!(err, "\r\x1b[2K");
                drawn = false;
            }
            None => {}
        }
        let _ = err.flush();
        drop(err);
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `12.1k`, `950`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn short_args(args: &serde_json::Value) -> String {
    let s = match args.as_object() {
        Some(map) if map.len() == 1 => map
            .values()
            .next()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .unwrap_or_default(),
        _ => args.to_string(),
    };
    let one_line = s.replace('\n', "⏎");
    if one_line.chars().count() > 100 {
        let cut: String = one_line.chars().take(100).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

impl Subscriber for TerminalPrinter {
    fn on_event(&mut self, e: &Envelope) {
        match &e.event {
            Event::TextDelta { text } => self.text(text),
            Event::ToolCallStarted {
                tool, arguments, ..
            } => {
                let line = format!(
                    "{} {}({})",
                    self.paint(CYAN, "⏺"),
                    self.paint(BOLD, tool),
                    short_args(arguments)
                );
                self.line(&line);
                self.set_spin(Some(tool.clone()));
            }
            Event::ToolProgress {
                message,
                progress,
                total,
                ..
            } => {
                if let Ok(mut s) = self.spin.lock() {
                    s.progress = Some(match (message, total) {
                        (Some(m), _) => m.clone(),
                        (None, Some(t)) => format!("{progress}/{t}"),
                        (None, None) => format!("{progress}"),
                    });
                }
            }
            Event::PermissionDecided {
                decision,
                rule,
                tool,
                ..
            } if *decision != Decision::Allow => {
                let line = format!(
                    "  {} {tool}: {} ({rule})",
                    self.paint(RED, "✗"),
                    decision.as_str()
                );
                self.line(&line);
            }
            Event::ToolCallFinished {
                is_error,
                summary,
                diff,
                duration_ms,
                ..
            } => {
                self.set_spin(None);
                let mark = if *is_error {
                    self.paint(RED, "  ⎿ error")
                } else {
                    self.paint(DIM, "  ⎿")
                };
                let first = summary.lines().next().unwrap_or("");
                let line = format!(
                    "{mark} {first} {}",
                    self.paint(DIM, &format!("({duration_ms} ms)"))
                );
                self.line(&line);
                if let Some(diff) = diff {
                    for l in diff.lines() {
                        let styled = if l.starts_with('+') && !l.starts_with("+++") {
                            self.paint(GREEN, l)
                        } else if l.starts_with('-') && !l.starts_with("---") {
                            self.paint(RED, l)
                        } else {
                            self.paint(DIM, l)
                        };
                        self.line(&format!("    {styled}"));
                    }
                }
            }
            Event::ModelRetry {
                attempt,
                reason,
                delay_ms,
                discard_partial,
            } => {
                let note = if *discard_partial {
                    " (discarding the partial answer)"
                } else {
                    ""
                };
                let line = self.paint(
                    DIM,
                    &format!("[retry {attempt} in {delay_ms} ms: {reason}]{note}"),
                );
                self.line(&line);
            }
            Event::ServerFailed {
                server,
                reason,
                will_restart,
                ..
            } => {
                let what = if *will_restart {
                    "crashed, restarting"
                } else {
                    "failed"
                };
                let line = self.paint(RED, &format!("[server {server} {what}: {reason}]"));
                self.line(&line);
            }
            Event::Error { message } => {
                let line = self.paint(RED, &format!("error: {message}"));
                self.line(&line);
            }
            Event::TurnEnd { .. } if self.mid_line => {
                self.out("\n");
                self.pending.clear();
            }
            Event::RunFinished {
                status,
                steps,
                duration_ms,
                input_tokens,
                output_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                error,
                ..
            } => {
                self.set_spin(None);
                if let Some(err) = error
                    && !matches!(status, RunStatus::Error)
                {
                    let line = self.paint(DIM, err);
                    self.line(&line);
                }
                let total_in = input_tokens + cache_read_tokens + cache_creation_tokens;
                let summary = format!(
                    "[run] {} · {steps} steps · {:.1} s · {} in ({} cached) / {} out",
                    status.as_str(),
                    *duration_ms as f64 / 1000.0,
                    format_tokens(total_in),
                    format_tokens(*cache_read_tokens),
                    format_tokens(*output_tokens)
                );
                let line = self.paint(DIM, &summary);
                self.line(&line);
            }
            _ => {}
        }
    }

    fn close(&mut self) {
        if self.mid_line {
            self.out("\n");
        }
        self.spinner_alive.store(false, Ordering::SeqCst);
    }
}
