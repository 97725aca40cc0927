//! Syntax highlighting of fenced code, one line at a time as it streams.
//!
//! The syntax definitions load once, on the first fenced block (tens of milliseconds), so a run
//! that prints no code pays nothing.

use std::sync::OnceLock;

use syntect::{
    easy::HighlightLines,
    highlighting::{Theme, ThemeSet},
    parsing::SyntaxSet,
    util::as_24_bit_terminal_escaped,
};

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> Option<&'static Theme> {
    static THEMES: OnceLock<ThemeSet> = OnceLock::new();
    THEMES
        .get_or_init(ThemeSet::load_defaults)
        .themes
        .get("base16-ocean.dark")
}

/// Highlights the lines of one fenced block.
pub struct CodeBlock {
    lines: Option<HighlightLines<'static>>,
}

impl CodeBlock {
    /// A block in `language` (the fence's info string: `rust`, `py`, `sh`, …); unknown languages
    /// are shown unhighlighted.
    pub fn new(language: &str) -> Self {
        let set = syntaxes();
        let syntax = set
            .find_syntax_by_token(language.trim())
            .filter(|_| !language.trim().is_empty());
        let lines = syntax
            .zip(theme())
            .map(|(syntax, theme)| HighlightLines::new(syntax, theme));
        Self { lines }
    }

    /// One line (without its newline), highlighted; `None` when the language is unknown.
    pub fn line(&mut self, text: &str) -> Option<String> {
        let lines = self.lines.as_mut()?;
        let with_newline = format!("{text}\n");
        let ranges = lines.highlight_line(&with_newline, syntaxes()).ok()?;
        let escaped = as_24_bit_terminal_escaped(&ranges, false);
        Some(format!("{}\x1b[0m", escaped.trim_end_matches('\n')))
    }
}
