//! How one tool call looks in the editor: its ACP `title`, `kind`, `locations` and `content`,
//! decided from what the server says about the tool (annotations, tern's `_meta`) — never from
//! the server's name, so a third-party server's tools get the same treatment as tern's own.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tern_gateway::rules::is_path_arg;
use tern_mcp::ToolEntry;

/// ACP `ToolKind`, from the tool's self-description:
/// - a `tern/command_arg` (a shell command argument) → `execute`;
/// - `tern/edits_files` → `edit`;
/// - read-only and open-world → `fetch`; read-only and named like a search (grep, glob, find,
///   search) → `search`; other read-only → `read`;
/// - anything else → `other`.
///
/// Display only: whether the call may run is the gateway's decision, which believes a
/// server's annotations only when it is trusted.
pub fn kind(entry: Option<&ToolEntry>) -> &'static str {
    let Some(e) = entry else { return "other" };
    let a = &e.def.annotations;
    if e.def.command_arg.is_some() {
        "execute"
    } else if e.def.edits_files {
        "edit"
    } else if a.read_only == Some(true) {
        let t = e.tool.to_ascii_lowercase();
        if a.open_world == Some(true) {
            "fetch"
        } else if ["grep", "glob", "search", "find"]
            .iter()
            .any(|w| t.contains(w))
        {
            "search"
        } else {
            "read"
        }
    } else {
        "other"
    }
}

/// `label: subject`, e.g. `shell__run: cargo test` or `fs__read_file: src/lib.rs`; the label is
/// the tool's title when it has one. The subject is the command, else the paths, else a URL,
/// pattern or query argument, cut to one line of at most 80 characters.
pub fn title(name: &str, entry: Option<&ToolEntry>, args: &Value) -> String {
    let label = entry
        .and_then(|e| e.def.title.clone())
        .unwrap_or_else(|| name.to_string());
    let command = entry
        .and_then(|e| e.def.command_arg.as_deref())
        .and_then(|arg| args.get(arg))
        .and_then(Value::as_str);
    let subject = command
        .map(str::to_string)
        .or_else(|| {
            let paths = path_strings(args);
            (!paths.is_empty()).then(|| paths.join(", "))
        })
        .or_else(|| {
            ["url", "uri", "pattern", "query", "glob"]
                .iter()
                .find_map(|k| args.get(*k).and_then(Value::as_str))
                .map(str::to_string)
        });
    match subject {
        Some(s) => format!("{label}: {}", one_line(&s, 80)),
        None => label,
    }
}

fn one_line(s: &str, max: usize) -> String {
    let first = s.lines().next().unwrap_or_default();
    let mut out: String = first.chars().take(max).collect();
    if out.len() < first.len() || s.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The path arguments of a call as written (the names the permission rules treat as paths).
fn path_strings(args: &Value) -> Vec<String> {
    let Some(obj) = args.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in obj {
        if !is_path_arg(k) {
            continue;
        }
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => {
                out.extend(items.iter().filter_map(Value::as_str).map(String::from))
            }
            _ => {}
        }
    }
    out
}

/// Where the call works: its path arguments, absolute (ACP locations are absolute paths), for
/// "follow along" in the editor.
pub fn locations(cwd: &Path, entry: Option<&ToolEntry>, args: &Value) -> Vec<PathBuf> {
    let command_arg = entry.and_then(|e| e.def.command_arg.as_deref());
    let Some(obj) = args.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in obj {
        if !is_path_arg(k) || Some(k.as_str()) == command_arg {
            continue;
        }
        let strings: Vec<&str> = match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        out.extend(strings.into_iter().map(|s| cwd.join(s)));
    }
    out
}

/// The content of a finished call: ACP `diff` content for an edit (reconstructed from the
/// unified diff the fs server returned and the file as it is `now` — on disk, or the text just
/// written through the editor; a new file's whole text when it was created), otherwise the
/// text the model was given.
pub fn content(
    cwd: &Path,
    entry: Option<&ToolEntry>,
    args: &Value,
    output: &str,
    diff: Option<&str>,
    is_error: bool,
    now: &dyn Fn(&Path) -> Option<String>,
) -> Vec<Value> {
    let edits = entry.is_some_and(|e| e.def.edits_files) && !is_error;
    if edits && let Some(path) = locations(cwd, entry, args).into_iter().next() {
        if let Some(d) = diff {
            let now = now(&path);
            let (old, new) = match now
                .as_deref()
                .and_then(|n| reverse_apply(n, d).map(|o| (o, n.to_string())))
            {
                Some(full) => full,
                None => hunk_texts(d),
            };
            return vec![diff_content(&path, Some(old), new)];
        }
        if let Some(text) = args.get("content").and_then(Value::as_str) {
            // A file created (no diff: nothing was there before).
            return vec![diff_content(&path, None, text.to_string())];
        }
    }
    if output.is_empty() {
        return Vec::new();
    }
    vec![json!({"type": "content", "content": {"type": "text", "text": output}})]
}

fn diff_content(path: &Path, old: Option<String>, new: String) -> Value {
    json!({
        "type": "diff",
        "path": path.display().to_string(),
        "oldText": old,
        "newText": new,
    })
}

/// The text before a change, from the text after it and the unified diff between them; `None`
/// when the diff does not fit `new` (the file changed again since).
pub fn reverse_apply(new: &str, diff: &str) -> Option<String> {
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut old = String::with_capacity(new.len());
    let mut pos = 0usize; // next line of `new` not yet copied
    let mut last_was_removed = false;
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("@@ ") {
            // `@@ -a,b +c,d @@`: the hunk starts at line c of the new text (0 when empty).
            let plus = rest.split_whitespace().find(|w| w.starts_with('+'))?;
            let start: usize = plus[1..].split(',').next()?.parse().ok()?;
            let count_is_zero = plus.split(',').nth(1) == Some("0");
            let first = if count_is_zero {
                start
            } else {
                start.checked_sub(1)?
            };
            if first < pos || first > new_lines.len() {
                return None;
            }
            new_lines[pos..first].iter().for_each(|l| old.push_str(l));
            pos = first;
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue; // the `---`/`+++` header
        }
        if line.starts_with('\\') {
            // "\ No newline at end of file": the line before it has no newline.
            if last_was_removed && old.ends_with('\n') {
                old.pop();
            }
            continue;
        }
        let (tag, text) = line.split_at(line.len().min(1));
        match tag {
            " " | "+" => {
                let l = new_lines.get(pos)?;
                if l.trim_end_matches('\n') != text {
                    return None;
                }
                if tag == " " {
                    old.push_str(l);
                }
                pos += 1;
                last_was_removed = false;
            }
            "-" => {
                old.push_str(text);
                old.push('\n');
                last_was_removed = true;
            }
            _ => return None,
        }
    }
    new_lines[pos..].iter().for_each(|l| old.push_str(l));
    Some(old)
}

/// Before and after as the hunks show them (context and changed lines only): what the editor
/// gets when the whole file cannot be rebuilt.
fn hunk_texts(diff: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    let mut in_hunk = false;
    for line in diff.lines() {
        if line.starts_with("@@") {
            if in_hunk {
                old.push_str("…\n");
                new.push_str("…\n");
            }
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        let (tag, text) = line.split_at(line.len().min(1));
        match tag {
            " " => {
                old.push_str(text);
                old.push('\n');
                new.push_str(text);
                new.push('\n');
            }
            "-" => {
                old.push_str(text);
                old.push('\n');
            }
            "+" => {
                new.push_str(text);
                new.push('\n');
            }
            _ => {}
        }
    }
    (old, new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_mcp::{ToolAnnotations, ToolDef};

    fn entry(tool: &str, f: impl FnOnce(&mut ToolDef)) -> ToolEntry {
        let mut def = ToolDef {
            name: tool.into(),
            title: None,
            description: String::new(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            command_arg: None,
            edits_files: false,
        };
        f(&mut def);
        ToolEntry {
            name: format!("s__{tool}"),
            server: "s".into(),
            tool: tool.into(),
            def,
        }
    }

    #[test]
    fn kinds_come_from_annotations_and_meta() {
        let read_only = |d: &mut ToolDef| d.annotations.read_only = Some(true);
        assert_eq!(
            kind(Some(
                &entry("run", |d| d.command_arg = Some("command".into()))
            )),
            "execute"
        );
        assert_eq!(
            kind(Some(&entry("edit_file", |d| d.edits_files = true))),
            "edit"
        );
        assert_eq!(kind(Some(&entry("read_file", read_only))), "read");
        assert_eq!(kind(Some(&entry("grep", read_only))), "search");
        assert_eq!(
            kind(Some(&entry("fetch", |d| {
                d.annotations.read_only = Some(true);
                d.annotations.open_world = Some(true);
            }))),
            "fetch"
        );
        assert_eq!(kind(Some(&entry("echo", |_| {}))), "other");
        assert_eq!(kind(None), "other");
    }

    #[test]
    fn titles_name_the_command_or_the_paths() {
        let shell = entry("run", |d| d.command_arg = Some("command".into()));
        assert_eq!(
            title(
                "shell__run",
                Some(&shell),
                &json!({"command": "cargo test\necho hi"})
            ),
            "shell__run: cargo test…"
        );
        let fs = entry("read_file", |d| d.title = Some("Read file".into()));
        assert_eq!(
            title("fs__read_file", Some(&fs), &json!({"path": "src/lib.rs"})),
            "Read file: src/lib.rs"
        );
        assert_eq!(title("x__y", None, &json!({})), "x__y");
        assert_eq!(
            locations(
                Path::new("/w"),
                Some(&fs),
                &json!({"path": "a/b.txt", "offset": 3})
            ),
            vec![PathBuf::from("/w/a/b.txt")]
        );
    }

    #[test]
    fn the_old_text_is_rebuilt_from_the_new_text_and_the_diff() {
        let cases = [
            (
                "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
                "a\nb\nC\nd\ne\nf\ng\nh\ni\nJ\nk\n",
            ),
            ("one\ntwo\n", "one\ntwo\nthree"),
            ("x\n", ""),
            ("", "new\n"),
            ("keep\nno newline", "keep\nno newline\n"),
        ];
        for (before, after) in cases {
            let diff = similar::TextDiff::from_lines(before, after)
                .unified_diff()
                .context_radius(3)
                .header("f", "f")
                .to_string();
            assert_eq!(
                reverse_apply(after, &diff).as_deref(),
                Some(before),
                "{diff}"
            );
        }
        // A file changed again since the diff: no rebuilt text, the hunks instead.
        let diff = similar::TextDiff::from_lines("a\nb\n", "a\nB\n")
            .unified_diff()
            .header("f", "f")
            .to_string();
        assert_eq!(reverse_apply("zzz\n", &diff), None);
        assert_eq!(
            hunk_texts(&diff),
            ("a\nb\n".to_string(), "a\nB\n".to_string())
        );
    }
}
