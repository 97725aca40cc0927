//! Turning byte spans from the TOML parser into `file:line:column` and dotted key paths.
//!
//! `toml`'s serde errors carry a span but not (publicly) the key they are about, so the key is found by
//! walking a span-preserving `toml_edit` parse of the same text.

use std::ops::Range;
use std::path::PathBuf;

use toml_edit::{Item, Table, Value};

use crate::error::Location;

/// Where a layer's text came from, so spans can be reported the way the user wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SourceName {
    /// A real (or embedded) file: spans map to line and column.
    File(PathBuf),
    /// A command-line argument: every span maps to `name:position`.
    Arg {
        /// `-c`, `--allow`, `--ask` or `--deny`.
        name: &'static str,
        /// 1-based position among the arguments of that name.
        position: usize,
    },
}

/// A layer's text, for translating spans.
pub(crate) struct SourceText<'a> {
    pub(crate) name: &'a SourceName,
    pub(crate) text: &'a str,
}

impl SourceText<'_> {
    /// The location of byte offset `offset`.
    pub(crate) fn locate(&self, offset: usize) -> Location {
        match self.name {
            SourceName::File(path) => {
                let (line, column) = line_column(self.text, offset);
                Location {
                    file: path.clone(),
                    line,
                    column,
                }
            }
            SourceName::Arg { name, position } => Location {
                file: PathBuf::from(name),
                line: *position,
                column: 0,
            },
        }
    }

    /// The location of a span's start, or of the start of the text when there is none.
    pub(crate) fn locate_span(&self, span: Option<Range<usize>>) -> Location {
        self.locate(span.map_or(0, |span| span.start))
    }

    /// The dotted path of the key (or value) at `offset`, if the text parses.
    pub(crate) fn key_at(&self, offset: usize) -> Option<String> {
        let doc = toml_edit::Document::parse(self.text).ok()?;
        let mut path = Vec::new();
        find_in_table(doc.as_table(), offset, &mut path).then(|| render_path(&path))
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// One step of a key path: a table key or an array index.
enum Step {
    Key(String),
    Index(usize),
}

fn render_path(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn contains(span: Option<Range<usize>>, offset: usize) -> bool {
    span.is_some_and(|span| span.start <= offset && (offset < span.end || span.is_empty()))
}

/// Pushes the path to the deepest key whose name or value covers `offset`; false if none does.
fn find_in_table(table: &Table, offset: usize, path: &mut Vec<Step>) -> bool {
    for (name, _) in table.iter() {
        let Some((key, item)) = table.get_key_value(name) else {
            continue;
        };
        path.push(Step::Key(name.to_owned()));
        if find_in_item(item, offset, path) || contains(key.span(), offset) {
            return true;
        }
        path.pop();
    }
    false
}

fn find_in_item(item: &Item, offset: usize, path: &mut Vec<Step>) -> bool {
    match item {
        Item::None => false,
        // A `[header]` table's own span is just the header, so always look inside.
        Item::Table(table) => find_in_table(table, offset, path),
        Item::ArrayOfTables(array) => array.iter().enumerate().any(|(i, table)| {
            path.push(Step::Index(i));
            let found = find_in_table(table, offset, path) || contains(table.span(), offset);
            if !found {
                path.pop();
            }
            found
        }),
        Item::Value(value) => find_in_value(value, offset, path),
    }
}

fn find_in_value(value: &Value, offset: usize, path: &mut Vec<Step>) -> bool {
    match value {
        Value::InlineTable(table) => {
            for (name, _) in table.iter() {
                let Some((key, item)) = table.get_key_value(name) else {
                    continue;
                };
                path.push(Step::Key(name.to_owned()));
                if find_in_item(item, offset, path) || contains(key.span(), offset) {
                    return true;
                }
                path.pop();
            }
            contains(value.span(), offset)
        }
        Value::Array(array) => {
            for (i, element) in array.iter().enumerate() {
                path.push(Step::Index(i));
                if find_in_value(element, offset, path) {
                    return true;
                }
                path.pop();
            }
            contains(value.span(), offset)
        }
        _ => contains(value.span(), offset),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_at(text: &str, needle: &str) -> Option<String> {
        let name = SourceName::File(PathBuf::from("t.toml"));
        let source = SourceText { name: &name, text };
        source.key_at(text.find(needle).unwrap())
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_column("a\nbé c", 0), (1, 1));
        assert_eq!(line_column("a\nbé c", 2), (2, 1));
        assert_eq!(line_column("a\nbé c", 6), (2, 4));
    }

    #[test]
    fn finds_keys_in_headers_inline_tables_and_arrays() {
        let text = "[mcp_servers.git]\ncommand = 3\nenv = { A = 1 }\nargs = [\"x\", 2]\n";
        assert_eq!(
            key_at(text, "3").as_deref(),
            Some("mcp_servers.git.command")
        );
        assert_eq!(
            key_at(text, "1 }").as_deref(),
            Some("mcp_servers.git.env.A")
        );
        assert_eq!(
            key_at(text, "2]").as_deref(),
            Some("mcp_servers.git.args[1]")
        );
        assert_eq!(key_at(text, "git]").as_deref(), Some("mcp_servers.git"));
    }
}
