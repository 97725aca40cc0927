//! Tool calls between their line and their result: where the duration goes, and whether the
//! result must name its call.
//!
//! A call's line (`⏺ shell__run(cargo test)`) is written when the call starts. When it ends:
//! - if nothing was written since (one call at a time, no question in between), the line gets
//!   its duration — rewritten in place on a terminal (`⏺ shell__run(cargo test) · 2.3s`); in
//!   plain text, where nothing is ever rewritten, the line is held back until the call ends and
//!   then written once, with the duration;
//! - otherwise (a parallel batch: the next call's line came in between; an approval question;
//!   a denial notice) the result block starts with a label naming its call and carrying the
//!   duration (`  ⎿ fs__read_file(a.txt) · 3ms`), so results are never ambiguous.
//!
//! A live tail of the call's output under its line ([`super::tails`]) is not "something written
//! in between": the screen erases it before the result, and the line still gets its duration.

use std::path::{Path, PathBuf};

use unicode_width::UnicodeWidthStr;

use super::style::{BOLD, CYAN, DIM, RED, sanitize};
use super::{FOLD_LINES, Mode, TerminalPrinter, diff, short_args};

/// Characters of the arguments kept in a result's label.
const LABEL_ARGS: usize = 40;

/// A call whose line is on screen (or held back) and whose result has not come.
pub(super) struct Pending {
    pub id: String,
    /// `tool(args)`, shortened, for the label of a result that is not right under its line.
    pub label: String,
    /// The call line as written (styled), to rewrite it with the duration.
    pub line: String,
    /// Its width in columns (unstyled), to know how many rows it took.
    pub width: usize,
    /// The screen's write count just after the line was written; `None` while it is held.
    pub written: Option<u64>,
    /// The last lines of its output while it runs (the live tail), shown under it.
    pub tail: Vec<String>,
    /// The screen's write count just before the line was written.
    pub before: u64,
    /// The call changed the todo list and the checklist stands for its line and result
    /// ([`super::todo`]).
    pub shown_as_todo: bool,
}

impl Pending {
    /// A call's label: its tool and the first [`LABEL_ARGS`] characters of its short arguments.
    pub fn label(tool: &str, args: &str) -> String {
        let args = if args.chars().count() > LABEL_ARGS {
            let cut: String = args.chars().take(LABEL_ARGS).collect();
            format!("{cut}…")
        } else {
            args.to_string()
        };
        format!("{}({args})", sanitize(tool))
    }
}

/// `812ms`, `2.3s`, `1m05s`: as the spinner counts.
pub(super) fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The workspace, to show paths inside it relative to it.
#[derive(Default, Clone)]
pub(super) struct Workspace {
    /// The directory as given and as the file system resolves it (a server may report either).
    dirs: Vec<PathBuf>,
}

impl Workspace {
    pub fn new(dir: &Path) -> Self {
        let mut dirs = vec![dir.to_path_buf()];
        if let Ok(real) = dir.canonicalize()
            && real != dir
        {
            dirs.push(real);
        }
        Self { dirs }
    }

    /// `path` relative to the workspace when inside it, else as it is.
    fn relative<'a>(&self, path: &'a str) -> std::borrow::Cow<'a, str> {
        for dir in &self.dirs {
            if let Ok(rel) = Path::new(path).strip_prefix(dir)
                && !rel.as_os_str().is_empty()
            {
                return rel.display().to_string().into();
            }
        }
        path.into()
    }

    /// A unified diff with the paths of its `---`/`+++` headers relative to the workspace when
    /// they are inside it (absolute otherwise). A header is a `--- ` line followed by a `+++ `
    /// line, and that line: a removed line reading `-- x` inside a hunk is left alone.
    pub fn diff_headers(&self, diff: &str) -> String {
        let lines: Vec<&str> = diff.lines().collect();
        let header = |i: usize| -> bool {
            let at = |j: usize, m: &str| lines.get(j).is_some_and(|l| l.starts_with(m));
            (at(i, "--- ") && at(i + 1, "+++ ")) || (at(i, "+++ ") && i > 0 && at(i - 1, "--- "))
        };
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                if !header(i) {
                    return line.to_string();
                }
                let (marker, rest) = line.split_at(4);
                // A header may carry a tab and a timestamp after the path.
                let (path, tail) = rest.split_at(rest.find('\t').unwrap_or(rest.len()));
                format!("{marker}{}{tail}", self.relative(path))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `text` with each `` `PATH` `` inside the workspace shown relative (a result's summary,
    /// e.g. ``edited `/home/ada/app/src/lib.rs` ``).
    pub fn quoted_paths(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut parts = text.split('`');
        if let Some(first) = parts.next() {
            out.push_str(first);
        }
        for (i, part) in parts.enumerate() {
            out.push('`');
            // Odd pieces (0-based even after the first) are inside backticks.
            if i % 2 == 0 {
                out.push_str(&self.relative(part));
            } else {
                out.push_str(part);
            }
        }
        out
    }
}

/// The printer's side: a call's line when it starts, its result when it ends.
impl TerminalPrinter {
    /// A call's line: written now on a terminal, held back until its result in plain text.
    pub(super) fn tool_started(&mut self, id: &str, tool: &str, arguments: &serde_json::Value) {
        self.screen.spin(None);
        self.end_line();
        let args = short_args(arguments);
        let line = format!(
            "{} {}({args})",
            self.paint(CYAN, "⏺"),
            self.paint(BOLD, &sanitize(tool))
        );
        let mut call = Pending {
            id: id.to_string(),
            label: Pending::label(tool, &args),
            width: format!("⏺ {}({args})", sanitize(tool)).width(),
            line,
            written: None,
            tail: Vec::new(),
            before: self.screen.writes(),
            shown_as_todo: false,
        };
        if self.redraw {
            self.out(&format!("{}\n", call.line));
            call.written = Some(self.screen.writes());
        } else {
            self.flush_held();
        }
        self.pending.push(call);
        self.screen.spin(Some(tool.to_string()));
    }

    pub(super) fn tool_finished(&mut self, id: &str, tool: &str, result: Finished<'_>) {
        self.screen.spin(None);
        let call = self
            .pending
            .iter()
            .position(|c| c.id == id)
            .map(|i| self.pending.remove(i));
        let took = self.paint(DIM, &format!(" · {}", duration(result.duration_ms)));
        let first = self
            .workspace
            .quoted_paths(&sanitize(result.summary.lines().next().unwrap_or("")));
        let error = self.paint(RED, "error:");
        match call {
            // The checklist drawn for its todo update is its result.
            Some(call) if call.shown_as_todo => return,
            // Its line is the last one on screen: the duration goes on it.
            Some(call)
                if self.redraw
                    && call.written == Some(self.screen.writes())
                    && !self.screen.mid_line() =>
            {
                let rows = call.width.max(1).div_ceil(self.screen.columns());
                self.out(&format!("\x1b[{rows}A\r\x1b[J{}{took}\n", call.line));
                self.result_head(result.is_error, &first, &error);
            }
            // Plain text: the line was held back for this moment.
            Some(call) if !self.redraw && call.written.is_none() => {
                self.out(&format!("{}{took}\n", call.line));
                self.result_head(result.is_error, &first, &error);
            }
            // Something came in between (the next call of a batch, a question): the result
            // names its call.
            call => {
                let label = call.map_or_else(|| sanitize(tool), |c| c.label);
                let mark = if result.is_error {
                    self.paint(RED, "  ⎿")
                } else {
                    self.paint(DIM, "  ⎿")
                };
                self.say(&format!("{mark} {label}{took}"));
                if result.is_error {
                    self.say(&format!("    {error} {first}"));
                } else if !first.is_empty() {
                    self.say(&format!("    {first}"));
                }
            }
        }
        if let Some(diff) = result.diff {
            let diff = sanitize(&self.workspace.diff_headers(diff));
            for line in diff::render(&diff, "    ", self.palette) {
                self.say(&line);
            }
            return;
        }
        let rest: Vec<&str> = result.output.lines().skip(1).collect();
        for line in rest.iter().take(FOLD_LINES) {
            let shown = self.paint(DIM, &sanitize(line));
            self.say(&format!("    {shown}"));
        }
        if rest.len() > FOLD_LINES {
            let hidden = rest.len() - FOLD_LINES;
            let hint = match self.mode {
                Mode::Interactive => format!("    … +{hidden} lines (ctrl+o to expand)"),
                Mode::Headless => format!("    … +{hidden} lines"),
            };
            let hint = self.paint(DIM, &hint);
            self.say(&hint);
            self.screen.fold(sanitize(result.output));
        }
    }

    /// The first line of a result right under its call.
    fn result_head(&mut self, is_error: bool, first: &str, error: &str) {
        let line = if is_error {
            format!("{} {error} {first}", self.paint(RED, "  ⎿"))
        } else {
            format!("{} {first}", self.paint(DIM, "  ⎿"))
        };
        self.say(&line);
    }
}

/// What a finished call returned, for the printer.
pub(super) struct Finished<'a> {
    pub is_error: bool,
    pub summary: &'a str,
    pub output: &'a str,
    pub diff: Option<&'a str>,
    pub duration_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_spinner_counts() {
        assert_eq!(duration(4), "4ms");
        assert_eq!(duration(2_340), "2.3s");
        assert_eq!(duration(65_000), "1m05s");
    }

    #[test]
    fn diff_headers_inside_the_workspace_are_relative_and_outside_absolute() {
        let ws = Workspace::new(Path::new("/home/ada/app"));
        let diff = "--- /home/ada/app/src/lib.rs\n+++ /home/ada/app/src/lib.rs\t2026-12-01\n\
                    @@ -1 +1 @@\n--- /home/ada/app/x\n+b";
        // The removed line `-- /home/ada/app/x` in the hunk is not a header.
        assert_eq!(
            ws.diff_headers(diff),
            "--- src/lib.rs\n+++ src/lib.rs\t2026-12-01\n@@ -1 +1 @@\n--- /home/ada/app/x\n+b"
        );
        let outside = "--- /etc/hosts\n+++ /etc/hosts\n@@ -1 +1 @@";
        assert_eq!(ws.diff_headers(outside), outside);
        // A sibling whose name starts like the workspace is outside it.
        assert_eq!(
            ws.diff_headers("--- /home/ada/app2/a"),
            "--- /home/ada/app2/a"
        );
        assert_eq!(
            ws.quoted_paths("edited `/home/ada/app/a.txt`: 1 (`/etc/x`)"),
            "edited `a.txt`: 1 (`/etc/x`)"
        );
    }
}
