//! What an approval question shows of the call *before* it runs, so a person can judge it in one
//! glance (issue 26): an edit as the coloured diff it will apply, a write as the new file (or a
//! diff against the old one), a command as the line the shell will run with its directory and
//! sandbox, anything else as `key: value` lines. Long previews are folded.
//!
//! Which preview a call gets is decided by the shape of its arguments (`old_string` and
//! `new_string`, `content`, a parsed command), never by the server's name. The old file is read
//! by the caller and passed in: this module only draws. Everything drawn is sanitised.

use std::path::Path;

use serde_json::Value;

use super::diff;
use super::style::{DIM, GREEN, Palette, YELLOW, sanitize};

/// Lines a preview shows before it folds the rest: with the menu below it, the question fits
/// on a 40-line terminal.
const MAX_LINES: usize = 24;
/// Characters of one `key: value` value before it is folded.
const MAX_VALUE: usize = 300;

/// The call, as the approval question has it.
pub struct CallPreview<'a> {
    /// The arguments as JSON text (pretty, redacted, as the gateway gives them).
    pub arguments: &'a str,
    /// The file the call writes, resolved by the gateway (its `path` argument), and what it
    /// holds now (`None`: it does not exist, or could not be read).
    pub file: Option<(&'a Path, Option<&'a str>)>,
    /// The command line, for tools with a command argument.
    pub command: Option<&'a str>,
    /// The workspace directory: paths are shown relative to it, and a command runs in it
    /// unless its `cwd` argument says otherwise.
    pub cwd: &'a Path,
    /// How commands are sandboxed (`workspace-write, network off`).
    pub sandbox: &'a str,
}

/// The preview's lines, indented by two spaces.
pub fn approval_preview(call: &CallPreview<'_>, color: bool) -> Vec<String> {
    preview(call, Palette { color })
}

fn preview(call: &CallPreview<'_>, p: Palette) -> Vec<String> {
    let args: Option<Value> = serde_json::from_str(call.arguments).ok();
    let str_arg = |k: &str| args.as_ref().and_then(|a| a.get(k)).and_then(Value::as_str);
    if let Some(line) = call.command {
        return command(call, line, str_arg("cwd"), p);
    }
    if let (Some((path, old)), Some(from), Some(to)) =
        (call.file, str_arg("old_string"), str_arg("new_string"))
    {
        let all = args
            .as_ref()
            .and_then(|a| a.get("replace_all"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        return edit(call.cwd, path, old, from, to, all, p);
    }
    if let (Some((path, old)), Some(content)) = (call.file, str_arg("content")) {
        return write(call.cwd, path, old, content, p);
    }
    match &args {
        Some(Value::Object(map)) => key_values(map, p),
        _ => fold(
            call.arguments
                .lines()
                .map(|l| format!("  {}", sanitize(l)))
                .collect(),
            p,
        ),
    }
}

fn command(call: &CallPreview<'_>, line: &str, cwd: Option<&str>, p: Palette) -> Vec<String> {
    let mut lines: Vec<String> = line
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let lead = if i == 0 { "$ " } else { "  " };
            format!("  {}", p.paint(YELLOW, &format!("{lead}{}", sanitize(l))))
        })
        .collect();
    let dir = match cwd {
        Some(c) => call.cwd.join(c),
        None => call.cwd.to_path_buf(),
    };
    lines.push(format!(
        "  {}",
        p.paint(
            DIM,
            &format!(
                "in {} · sandbox: {}",
                sanitize(&dir.display().to_string()),
                call.sandbox
            )
        )
    ));
    lines
}

fn edit(
    cwd: &Path,
    path: &Path,
    old: Option<&str>,
    from: &str,
    to: &str,
    all: bool,
    p: Palette,
) -> Vec<String> {
    let name = relative(cwd, path);
    let Some(old) = old else {
        return vec![format!(
            "  {}",
            p.paint(
                DIM,
                &format!("{name} cannot be read now: the edit will likely fail")
            )
        )];
    };
    let found = old.matches(from).count();
    let new = match (found, all) {
        (0, _) => {
            return vec![format!(
                "  {}",
                p.paint(
                    DIM,
                    &format!("old_string is not in {name}: the edit will fail")
                )
            )];
        }
        (1, _) | (_, true) => old.replace(from, to),
        (n, false) => {
            return vec![format!(
                "  {}",
                p.paint(
                    DIM,
                    &format!(
                        "old_string occurs {n} times in {name}: the edit will fail \
                         (replace_all is false)"
                    )
                )
            )];
        }
    };
    fold(unified(&name, old, &new, p), p)
}

fn write(cwd: &Path, path: &Path, old: Option<&str>, content: &str, p: Palette) -> Vec<String> {
    let name = relative(cwd, path);
    match old {
        Some(old) if old == content => vec![format!(
            "  {}",
            p.paint(DIM, &format!("{name}: unchanged (same content)"))
        )],
        Some(old) => fold(unified(&name, old, content, p), p),
        None => {
            let count = content.lines().count();
            let mut lines = vec![format!(
                "  {}",
                p.paint(DIM, &format!("new file {name} ({count} lines)"))
            )];
            lines.extend(
                content
                    .lines()
                    .map(|l| format!("  {}", p.paint(GREEN, &format!("+{}", sanitize(l))))),
            );
            fold(lines, p)
        }
    }
}

fn unified(name: &str, old: &str, new: &str, p: Palette) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(name, name)
        .to_string();
    diff::render(&sanitize(&text), "  ", p)
}

fn key_values(map: &serde_json::Map<String, Value>, p: Palette) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, v) in map {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = sanitize(&text);
        let mut value_lines = text.lines();
        let first = value_lines.next().unwrap_or("");
        let (first, more) = if first.chars().count() > MAX_VALUE {
            let cut: String = first.chars().take(MAX_VALUE).collect();
            (cut, true)
        } else {
            (first.to_string(), false)
        };
        lines.push(format!(
            "  {}: {first}{}",
            sanitize(k),
            if more { "…" } else { "" }
        ));
        lines.extend(value_lines.map(|l| format!("    {l}")));
    }
    fold(lines, p)
}

/// At most [`MAX_LINES`] lines, and a note of how many more there were.
fn fold(mut lines: Vec<String>, p: Palette) -> Vec<String> {
    if lines.len() > MAX_LINES {
        let more = lines.len() - (MAX_LINES - 1);
        lines.truncate(MAX_LINES - 1);
        lines.push(format!(
            "  {}",
            p.paint(DIM, &format!("… {more} more lines"))
        ));
    }
    lines
}

/// `path` relative to `cwd` when it is inside it.
fn relative(cwd: &Path, path: &Path) -> String {
    sanitize(&path.strip_prefix(cwd).unwrap_or(path).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Palette = Palette { color: false };

    fn call<'a>(
        arguments: &'a str,
        file: Option<(&'a Path, Option<&'a str>)>,
        command: Option<&'a str>,
    ) -> CallPreview<'a> {
        CallPreview {
            arguments,
            file,
            command,
            cwd: Path::new("/w"),
            sandbox: "workspace-write, network off",
        }
    }

    #[test]
    fn an_edit_shows_the_diff_it_will_apply() {
        let args = r#"{"path":"src/a.rs","old_string":"two","new_string":"2"}"#;
        let path = Path::new("/w/src/a.rs");
        let lines = preview(&call(args, Some((path, Some("one\ntwo\n"))), None), PLAIN);
        let text = lines.join("\n");
        assert!(text.contains("--- src/a.rs"), "{text}");
        assert!(text.contains("  -two\n  +2"), "{text}");
        let missing = preview(&call(args, Some((path, Some("one\n"))), None), PLAIN);
        assert!(missing[0].contains("the edit will fail"), "{missing:?}");
    }

    #[test]
    fn a_new_file_is_shown_and_folded_when_long() {
        let content: String = (0..60).map(|i| format!("line {i}\n")).collect();
        let args = serde_json::json!({"path": "n.txt", "content": content}).to_string();
        let path = Path::new("/w/n.txt");
        let lines = preview(&call(&args, Some((path, None)), None), PLAIN);
        assert_eq!(lines[0], "  new file n.txt (60 lines)");
        assert_eq!(lines[1], "  +line 0");
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines.last().unwrap(), "  … 38 more lines");
    }

    #[test]
    fn a_command_shows_where_and_how_it_runs_and_others_show_key_values() {
        let lines = preview(
            &call(r#"{"command":"ls","cwd":"sub"}"#, None, Some("ls")),
            PLAIN,
        );
        assert_eq!(
            lines,
            [
                "  $ ls",
                "  in /w/sub · sandbox: workspace-write, network off"
            ]
        );
        let lines = preview(&call(r#"{"query":"a\u001b[2Jb","n":3}"#, None, None), PLAIN);
        assert_eq!(lines, ["  n: 3", "  query: a^[[2Jb"]);
    }

    #[test]
    fn a_write_over_an_existing_file_shows_a_diff_against_the_old_content() {
        let old = "# Title\n\nkeep 1\nkeep 2\nkeep 3\nold line\nkeep 4\n";
        let new = "# Title\n\nkeep 1\nkeep 2\nkeep 3\nnew line\nkeep 4\nadded\n";
        let args = serde_json::json!({"path": "doc.md", "content": new}).to_string();
        let path = Path::new("/w/doc.md");
        let lines = preview(&call(&args, Some((path, Some(old))), None), PLAIN);
        let text = lines.join("\n");
        // A diff with relative headers, not the whole new file.
        assert!(text.contains("--- doc.md\n  +++ doc.md"), "{text}");
        assert!(text.contains("  -old line\n  +new line"), "{text}");
        assert!(text.contains("  +added"), "{text}");
        assert!(!text.contains("new file"), "{text}");
        assert!(
            !text.contains("+# Title"),
            "unchanged lines are context: {text}"
        );
        insta::assert_snapshot!(text);
        // The same content: said in one line.
        let same = serde_json::json!({"path": "doc.md", "content": old}).to_string();
        let lines = preview(&call(&same, Some((path, Some(old))), None), PLAIN);
        assert_eq!(lines, ["  doc.md: unchanged (same content)"]);
    }

    #[test]
    fn long_key_value_arguments_are_folded() {
        // One long value: cut at MAX_VALUE characters with an ellipsis.
        let long = "x".repeat(MAX_VALUE + 200);
        let args = serde_json::json!({"note": long, "n": 1}).to_string();
        let lines = preview(&call(&args, None, None), PLAIN);
        assert_eq!(lines[0], "  n: 1");
        assert_eq!(
            lines[1],
            format!("  note: {}…", "x".repeat(MAX_VALUE)),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 2);
        // A value of many lines: continuation lines indented, the preview folded.
        let body: String = (0..60).map(|i| format!("row {i}\n")).collect();
        let args = serde_json::json!({"body": body}).to_string();
        let lines = preview(&call(&args, None, None), PLAIN);
        assert_eq!(lines[0], "  body: row 0");
        assert_eq!(lines[1], "    row 1");
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines.last().unwrap(), "  … 37 more lines");
    }
}
