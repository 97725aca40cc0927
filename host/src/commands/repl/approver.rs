//! The REPL's approver: asks on the terminal whether a tool call may run.
//!
//! The question shows what the call will do *before* it runs (a diff, the new file, the command
//! with its directory and sandbox: [`crate::render::approval_preview`]) and a menu: ↑/↓ and
//! Enter, or a digit. "Don't ask again" is offered for this project (`.tern/config.toml`) or for
//! all projects (`$TERN_HOME/config.toml`), each named on screen. A key that means nothing asks
//! again; Esc or Ctrl-C cancels the whole turn. Keys come from the REPL's one stdin reader
//! ([`Keys`]), so a question that ends never leaves a reader behind to swallow the next line.
//! Everything shown from the call is sanitised.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use async_trait::async_trait;
use tern_gateway::{Approval, ApprovalRequest, Approver};
use unicode_width::UnicodeWidthChar;

use super::keys::{Key, Keys, LineInput, LineStep};
use crate::render::{CallPreview, Notifier, Screen, approval_preview, sanitize};

/// Where "don't ask again" answers are written, for the menu to name them.
#[derive(Debug, Clone)]
pub(super) struct Targets {
    /// The workspace directory (paths are shown relative to it).
    pub cwd: PathBuf,
    /// The project's `.tern/config.toml`.
    pub project: PathBuf,
    /// `$TERN_HOME/config.toml`.
    pub user: PathBuf,
    /// How shell commands are sandboxed, as the preview says it.
    pub sandbox: String,
}

/// Asks the user, on the terminal, whether a tool call may run.
pub(super) struct TerminalApprover {
    screen: Arc<Screen>,
    /// One question at a time when read-only calls run concurrently (shared with the
    /// elicitor: a server's question waits for an approval and the other way round).
    lock: Arc<tokio::sync::Mutex<()>>,
    color: bool,
    keys: Keys,
    targets: Targets,
    /// Notifies when a question waits (`[ui] notify`).
    notifier: Notifier,
}

/// One entry of the menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Yes,
    Project,
    User,
    No,
}

/// Files larger than this are not read for a preview.
const MAX_PREVIEW_BYTES: u64 = 1024 * 1024;

impl TerminalApprover {
    pub(super) fn new(
        screen: Arc<Screen>,
        lock: Arc<tokio::sync::Mutex<()>>,
        color: bool,
        keys: Keys,
        targets: Targets,
    ) -> Self {
        Self {
            screen,
            lock,
            color,
            keys,
            targets,
            notifier: Notifier::off(),
        }
    }

    fn bold(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// What the call is and what it will do.
    /// Notifies (BEL or OSC 9/777) whenever a question waits.
    pub(super) fn with_notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = notifier;
        self
    }

    fn header(&self, request: &ApprovalRequest) -> String {
        let mut text = format!(
            "\n{} wants to run `{}` ({})\n",
            self.bold(&sanitize(&request.server)),
            sanitize(&request.tool),
            sanitize(&request.reasons.join("; ")),
        );
        let path = request
            .paths
            .iter()
            .find(|p| p.arg == "path")
            .map(|p| p.path.as_path());
        let old = path.and_then(read_for_preview);
        let preview = approval_preview(
            &CallPreview {
                arguments: &request.arguments,
                file: path.map(|p| (p, old.as_deref())),
                command: request.command.as_ref().map(|c| c.line.as_str()),
                cwd: &self.targets.cwd,
                sandbox: &self.targets.sandbox,
            },
            self.color,
        );
        for line in preview {
            text.push_str(&line);
            text.push('\n');
        }
        if let Some(c) = &request.command {
            // The command as the shell parses it: each simple command it runs, normalized (what
            // the rules judged) — shown when that is not simply the line as written.
            if c.commands.len() > 1 || c.commands.first().is_some_and(|one| one != c.line.trim()) {
                let runs: Vec<String> = c.commands.iter().map(|one| sanitize(one)).collect();
                text.push_str(&format!("  runs: {}\n", runs.join(" · ")));
            }
            if !c.risks.is_empty() {
                text.push_str(&format!("  risks: {}\n", sanitize(&c.risks.join("; "))));
            }
        }
        // Shown once, above the menu: a long rule wraps here instead of being cut there.
        if !request.always_rules.is_empty() {
            let rules: Vec<String> = request
                .always_rules
                .iter()
                .map(|r| format!("`{}`", sanitize(r)))
                .collect();
            text.push_str(&format!("  don't ask again for: {}\n", rules.join(", ")));
        }
        text
    }

    fn choices(request: &ApprovalRequest) -> Vec<Choice> {
        if request.always_rules.is_empty() {
            vec![Choice::Yes, Choice::No]
        } else {
            vec![Choice::Yes, Choice::Project, Choice::User, Choice::No]
        }
    }

    fn label(&self, choice: Choice) -> String {
        match choice {
            Choice::Yes => "Yes".into(),
            Choice::Project => format!(
                "Yes, and don't ask again in this project ({})",
                shown_path(&self.targets.cwd, &self.targets.project)
            ),
            Choice::User => format!(
                "Yes, and don't ask again in all projects ({})",
                sanitize(&self.targets.user.display().to_string())
            ),
            Choice::No => "No, and tell the model why".into(),
        }
    }

    /// The menu's lines, `at` highlighted, each cut to the width so that none wraps (the
    /// redraw moves up by the number of lines).
    fn menu(&self, choices: &[Choice], at: usize, hint: bool) -> String {
        let width = self.screen.columns().saturating_sub(1).max(20);
        let mut text = format!("{}\n", self.bold("Allow?"));
        for (i, c) in choices.iter().enumerate() {
            let mark = if i == at { "›" } else { " " };
            let line = cut(&format!("{mark} {}. {}", i + 1, self.label(*c)), width);
            if i == at && self.color {
                text.push_str(&format!("\x1b[1;36m{line}\x1b[0m\n"));
            } else {
                text.push_str(&format!("{line}\n"));
            }
        }
        let keys = format!(
            "  ↑/↓ and Enter, or 1–{}; Esc cancels the turn{}",
            choices.len(),
            if hint {
                " (that key means nothing here)"
            } else {
                ""
            }
        );
        text.push_str(&cut(&keys, width));
        text.push('\n');
        text
    }

    /// Cancels the turn, and waits for the gateway to notice; without a turn, a plain no.
    async fn cancel(&self) -> Approval {
        if self.keys.cancel_turn() {
            std::future::pending::<()>().await;
        }
        Approval::Deny {
            reason: Some("the user cancelled the question".into()),
        }
    }
}

/// `path`, relative to `cwd` when inside it.
fn shown_path(cwd: &Path, path: &Path) -> String {
    sanitize(&path.strip_prefix(cwd).unwrap_or(path).display().to_string())
}

/// `line` cut to `width` columns.
pub(super) fn cut(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            out.pop();
            out.push('…');
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// What a file holds now, for the preview of a change to it: a regular file of at most
/// [`MAX_PREVIEW_BYTES`], as UTF-8. Shown to the person only, never to the model.
fn read_for_preview(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_PREVIEW_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The choice a key makes at the menu, or how the highlight moves.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    Move(usize),
    Take(usize),
    Cancel,
    Again,
}

pub(super) fn step(key: Key, at: usize, count: usize) -> Step {
    match key {
        Key::Up => Step::Move(at.checked_sub(1).unwrap_or(count - 1)),
        Key::Down => Step::Move((at + 1) % count),
        Key::Enter => Step::Take(at),
        Key::Char(c) => match c.to_digit(10).map(|d| d as usize) {
            Some(d) if (1..=count).contains(&d) => Step::Take(d - 1),
            _ => match c.to_ascii_lowercase() {
                'y' => Step::Take(0),
                'n' => Step::Take(count - 1),
                _ => Step::Again,
            },
        },
        Key::Esc | Key::CtrlC | Key::Eof => Step::Cancel,
        Key::Backspace | Key::BackTab | Key::Other => Step::Again,
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        let _one_at_a_time = self.lock.lock().await;
        if !Keys::available() {
            return Approval::Deny {
                reason: Some("no terminal to ask on".into()),
            };
        }
        let _reading = self.keys.reading(None);
        let (_claim, mut rx) = self.keys.claim();
        let _paused = self.screen.pause();
        self.screen.ask(&self.header(&request));
        let choices = Self::choices(&request);
        let mut at = 0;
        let mut menu = self.menu(&choices, at, false);
        self.screen.ask(&menu);
        if let Some(bell) = self.notifier.approval(&request.name) {
            self.screen.ask(&bell);
        }
        let taken = loop {
            let Some(key) = rx.recv().await else {
                return self.cancel().await;
            };
            let (next, hint) = match step(key, at, choices.len()) {
                Step::Take(i) => break choices[i],
                Step::Cancel => return self.cancel().await,
                Step::Move(i) => (i, false),
                Step::Again => (at, true),
            };
            at = next;
            // Redraw in place: up over the old menu, erase to the end of the screen.
            let lines = menu.matches('\n').count();
            menu = self.menu(&choices, at, hint);
            self.screen.ask(&format!("\x1b[{lines}A\r\x1b[J{menu}"));
        };
        let lines = menu.matches('\n').count();
        self.screen.ask(&format!(
            "\x1b[{lines}A\r\x1b[J{} › {}\n",
            self.bold("Allow?"),
            self.label(taken)
        ));
        match taken {
            Choice::Yes => Approval::Once,
            Choice::Project => Approval::AlwaysInProject,
            Choice::User => Approval::Always,
            Choice::No => {
                self.screen
                    .ask("Tell the model why (Enter to just say no): ");
                let mut line = LineInput::default();
                loop {
                    let Some(key) = rx.recv().await else {
                        return self.cancel().await;
                    };
                    match line.feed(key) {
                        LineStep::Echo(echo) => self.screen.ask(&echo),
                        LineStep::Done(reason) => {
                            self.screen.ask("\n");
                            let reason = reason.trim();
                            return Approval::Deny {
                                reason: (!reason.is_empty()).then(|| reason.to_string()),
                            };
                        }
                        LineStep::Cancel => return self.cancel().await,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_move_take_cancel_or_ask_again() {
        assert_eq!(step(Key::Down, 0, 4), Step::Move(1));
        assert_eq!(step(Key::Up, 0, 4), Step::Move(3));
        assert_eq!(step(Key::Enter, 2, 4), Step::Take(2));
        assert_eq!(step(Key::Char('3'), 0, 4), Step::Take(2));
        assert_eq!(step(Key::Char('5'), 0, 4), Step::Again);
        assert_eq!(step(Key::Char('y'), 3, 4), Step::Take(0));
        assert_eq!(step(Key::Char('n'), 0, 2), Step::Take(1));
        assert_eq!(step(Key::Char('o'), 0, 4), Step::Again);
        assert_eq!(step(Key::Esc, 0, 4), Step::Cancel);
    }

    #[test]
    fn the_approval_screen_for_a_new_file_with_its_menu() {
        let screen = Arc::new(Screen::new(
            Box::new(std::io::sink()),
            Box::new(std::io::sink()),
            false,
            80,
        ));
        let approver = TerminalApprover::new(
            screen,
            Arc::default(),
            false,
            Keys::default(),
            Targets {
                cwd: "/nonexistent/proj".into(),
                project: "/nonexistent/proj/.tern/config.toml".into(),
                user: "/home/u/.tern/config.toml".into(),
                sandbox: "workspace-write, network off".into(),
            },
        );
        let request = ApprovalRequest {
            call_id: "c1".into(),
            server: "fs".into(),
            tool: "write_file".into(),
            name: "fs__write_file".into(),
            arguments: "{\n  \"path\": \"n.txt\",\n  \"content\": \"one\\ntwo\\n\"\n}".into(),
            paths: vec![tern_gateway::ResolvedPath {
                arg: "path".into(),
                path: "/nonexistent/proj/n.txt".into(),
            }],
            command: None,
            reasons: vec!["no rule allows it".into()],
            always_rules: vec!["fs__write_file(path: n.txt)".into()],
        };
        let choices = TerminalApprover::choices(&request);
        let text = format!(
            "{}{}",
            approver.header(&request),
            approver.menu(&choices, 1, false)
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn long_lines_are_cut_to_the_width() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
