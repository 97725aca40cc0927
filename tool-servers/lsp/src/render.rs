//! What the model reads: diagnostics as `path:line:col: severity: message`, locations with
//! the line they point at, hovers as their markdown, symbols as an outline — positions
//! 1-based, in characters.

use std::collections::HashMap;

use lsp_types::{
    Diagnostic, DiagnosticSeverity, DocumentSymbol, HoverContents, MarkedString, NumberOrString,
    SymbolKind,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::text;

/// How severe a diagnostic is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    /// An omitted severity is the client's to interpret (LSP 3.17); tern reads it as an error,
    /// the reading that never hides a problem.
    pub fn of(d: &Diagnostic) -> Self {
        match d.severity {
            Some(DiagnosticSeverity::WARNING) => Self::Warning,
            Some(DiagnosticSeverity::INFORMATION) => Self::Information,
            Some(DiagnosticSeverity::HINT) => Self::Hint,
            _ => Self::Error,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Information => "information",
            Self::Hint => "hint",
        }
    }
}

/// A diagnostic as the tools report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl Item {
    /// Converts `d`, whose columns are UTF-16 offsets into `text`.
    pub fn from_lsp(d: &Diagnostic, text: &str) -> Self {
        let (line, column) = position(text, d.range.start.line, d.range.start.character);
        let (end_line, end_column) = position(text, d.range.end.line, d.range.end.character);
        Self {
            line,
            column,
            end_line,
            end_column,
            severity: Severity::of(d),
            message: d.message.trim().to_string(),
            source: d.source.clone(),
            code: d.code.as_ref().map(|c| match c {
                NumberOrString::Number(n) => n.to_string(),
                NumberOrString::String(s) => s.clone(),
            }),
        }
    }

    /// What makes two diagnostics "the same problem" across edits: not where it is (an edit
    /// above it moves it), but what it says.
    pub fn key(&self) -> (Severity, String, Option<String>, Option<String>) {
        (
            self.severity,
            self.message.clone(),
            self.source.clone(),
            self.code.clone(),
        )
    }
}

/// The items of `now` that `before` did not have (as many times): what changed introduced.
pub fn new_since(now: Vec<Item>, before: &[Item]) -> Vec<Item> {
    let mut seen: HashMap<_, usize> = HashMap::new();
    for item in before {
        *seen.entry(item.key()).or_default() += 1;
    }
    now.into_iter()
        .filter(|item| match seen.get_mut(&item.key()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// A 0-based LSP position as 1-based line and character column.
pub fn position(text: &str, line: u32, character: u32) -> (usize, usize) {
    let col = text::line(text, line as usize)
        .map_or(character as usize, |l| text::char_of_utf16(l, character));
    (line as usize + 1, col + 1)
}

/// `path:line:col: severity: message [code] (source)` lines, and the counts.
pub fn diagnostics(shown_path: &str, items: &[Item]) -> String {
    let mut out = String::new();
    for d in items {
        out.push_str(&format!(
            "{shown_path}:{}:{}: {}: {}",
            d.line,
            d.column,
            d.severity.word(),
            d.message.replace('\n', "\n    ")
        ));
        if let Some(code) = &d.code {
            out.push_str(&format!(" [{code}]"));
        }
        if let Some(source) = &d.source {
            out.push_str(&format!(" ({source})"));
        }
        out.push('\n');
    }
    out
}

/// How many of each severity.
pub fn counts(items: &[Item]) -> Value {
    let n = |s: Severity| items.iter().filter(|d| d.severity == s).count();
    json!({
        "error": n(Severity::Error),
        "warning": n(Severity::Warning),
        "information": n(Severity::Information),
        "hint": n(Severity::Hint),
    })
}

/// "2 errors, 1 warning" (or "no problems").
pub fn summary(items: &[Item]) -> String {
    let parts: Vec<String> = [
        Severity::Error,
        Severity::Warning,
        Severity::Information,
        Severity::Hint,
    ]
    .into_iter()
    .filter_map(|s| {
        let n = items.iter().filter(|d| d.severity == s).count();
        let word = match (s, n) {
            (Severity::Information, _) => "information".to_string(),
            (_, 1) => s.word().to_string(),
            _ => format!("{}s", s.word()),
        };
        (n > 0).then(|| format!("{n} {word}"))
    })
    .collect();
    if parts.is_empty() {
        "no problems".into()
    } else {
        parts.join(", ")
    }
}

/// The text of a hover: its markdown, or its marked strings as code blocks.
pub fn hover(contents: &HoverContents) -> String {
    let marked = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(ms) => ms.iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}

/// The word for a symbol kind.
pub fn kind(k: SymbolKind) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    // SymbolKind is 1-based.
    let index = serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_sub(1));
    index
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("symbol")
}

/// One line of an outline.
#[derive(Debug, Clone, Serialize)]
pub struct Outline {
    pub name: String,
    pub kind: &'static str,
    pub line: usize,
    pub end_line: usize,
    pub depth: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A nested document outline, depth first.
pub fn outline(symbols: &[DocumentSymbol], depth: usize, out: &mut Vec<Outline>) {
    for s in symbols {
        out.push(Outline {
            name: s.name.clone(),
            kind: kind(s.kind),
            line: s.selection_range.start.line as usize + 1,
            end_line: s.range.end.line as usize + 1,
            depth,
            detail: s.detail.clone().filter(|d| !d.is_empty()),
        });
        if let Some(children) = &s.children {
            outline(children, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(message: &str, line: usize) -> Item {
        Item {
            line,
            column: 1,
            end_line: line,
            end_column: 2,
            severity: Severity::Error,
            message: message.into(),
            source: Some("Pyright".into()),
            code: None,
        }
    }

    #[test]
    fn new_diagnostics_are_told_by_what_they_say_not_where() {
        let before = vec![item("a", 1), item("b", 2)];
        let now = vec![item("a", 5), item("b", 6), item("b", 7), item("c", 8)];
        let new: Vec<_> = new_since(now, &before)
            .into_iter()
            .map(|i| (i.message, i.line))
            .collect();
        assert_eq!(new, [("b".to_string(), 7), ("c".to_string(), 8)]);
    }

    #[test]
    fn diagnostics_read_as_compiler_output() {
        let items = vec![Item {
            code: Some("reportAssignmentType".into()),
            ..item("Type \"str\" is not assignable", 3)
        }];
        assert_eq!(
            diagnostics("src/app.py", &items),
            "src/app.py:3:1: error: Type \"str\" is not assignable [reportAssignmentType] (Pyright)\n"
        );
        assert_eq!(summary(&items), "1 error");
        assert_eq!(summary(&[]), "no problems");
        assert_eq!(kind(SymbolKind::FUNCTION), "function");
        assert_eq!(kind(SymbolKind::TYPE_PARAMETER), "type parameter");
    }
}
