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

use std::path::{Path, PathBuf};

use super::style::sanitize;

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
