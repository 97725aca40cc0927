//! Markdown for the terminal, rendered line by line as the answer streams.
//!
//! A model's answer arrives in pieces; the printer shows each piece at once and, when a line is
//! complete, redraws it styled. So rendering works on complete lines, with the little state
//! markdown needs across lines (inside a fenced block or not, and its highlighter). Inline
//! markup — emphasis, strong, code, links — is parsed by a real markdown parser per line.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{
    highlight::CodeBlock,
    style::{BLUE, BOLD, CYAN, DIM, ITALIC, MAGENTA, Palette, UNDERLINE, YELLOW},
    table,
};

/// The rendering state of one answer.
pub struct Markdown {
    palette: Palette,
    /// The open fence (its marker) and its highlighter.
    fence: Option<(String, CodeBlock)>,
    /// The rows of a table being streamed, held until it ends ([`table`]).
    table: Vec<String>,
}

impl Markdown {
    pub fn new(palette: Palette) -> Self {
        Self {
            palette,
            fence: None,
            table: Vec::new(),
        }
    }

    /// Forgets any open fence and held table (a new answer starts).
    pub fn reset(&mut self) {
        self.fence = None;
        self.table.clear();
    }

    /// What to show in place of one complete line, for a terminal `columns` wide: no line (a
    /// fence around highlighted code, or a table row held until its table ends), this line, or
    /// the held table followed by this line.
    pub fn show(&mut self, line: &str, columns: usize) -> Vec<String> {
        let p = self.palette;
        if !p.color {
            return vec![self.line(line)];
        }
        if self.fence.is_none() && table::is_row(line) {
            self.table.push(line.to_string());
            return Vec::new();
        }
        let mut out = self.finish(columns);
        let fence_line = self.is_fence_line(line);
        let rendered = self.line(line);
        // The fence's marker says nothing the highlighting does not show.
        if !(fence_line && self.highlights()) {
            out.push(rendered);
        }
        out
    }

    /// The held table, drawn (the answer or the table ended).
    pub fn finish(&mut self, columns: usize) -> Vec<String> {
        if self.table.is_empty() {
            return Vec::new();
        }
        let rows = std::mem::take(&mut self.table);
        table::render(&rows, columns, self.palette)
    }

    /// Whether `line` opens or closes a fence.
    fn is_fence_line(&self, line: &str) -> bool {
        let trimmed = line.trim();
        match &self.fence {
            Some((marker, _)) => trimmed == marker.as_str(),
            None => trimmed.starts_with("```") || trimmed.starts_with("~~~"),
        }
    }

    /// Code is highlighted (colour on), so a fence's markers can go.
    fn highlights(&self) -> bool {
        self.palette.color
    }

    /// One complete line (without its newline), as it should be shown.
    pub fn line(&mut self, line: &str) -> String {
        let p = self.palette;
        let trimmed = line.trim_start();
        if let Some((marker, _)) = &self.fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                self.fence = None;
                return p.paint(DIM, line);
            }
            if !p.color {
                return line.to_string();
            }
            let highlighted = self.fence.as_mut().and_then(|(_, block)| block.line(line));
            return highlighted.unwrap_or_else(|| p.paint(CYAN, line));
        }
        for marker in ["```", "~~~"] {
            if let Some(info) = trimmed.strip_prefix(marker) {
                let run =
                    marker.len() + info.chars().take_while(|c| marker.starts_with(*c)).count();
                let fence: String = trimmed.chars().take(run).collect();
                let language = trimmed[fence.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                self.fence = Some((fence, CodeBlock::new(language)));
                return p.paint(DIM, line);
            }
        }
        if !p.color {
            return line.to_string();
        }
        inline(line, p)
    }
}

/// A line outside code, with block markers (heading, list, quote, rule) and inline markup.
fn inline(line: &str, p: Palette) -> String {
    if line.trim().is_empty() {
        return String::new();
    }
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let mut out = String::new();
    let mut styles: Vec<&'static str> = Vec::new();
    let mut link: Option<String> = None;
    let mut ordered: Option<u64> = None;
    let restyle = |styles: &[&'static str]| -> String {
        let mut s = String::from("\x1b[0m");
        for st in styles {
            s.push_str(st);
        }
        s
    };
    for event in Parser::new_ext(line, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                let style = match level {
                    HeadingLevel::H1 => MAGENTA,
                    HeadingLevel::H2 => BLUE,
                    _ => YELLOW,
                };
                styles.push(BOLD);
                styles.push(style);
                out.push_str(&restyle(&styles));
            }
            Event::End(TagEnd::Heading(_)) => {
                styles.clear();
                out.push_str(&restyle(&styles));
            }
            Event::Start(Tag::List(first)) => ordered = first,
            Event::Start(Tag::Item) => {
                out.push_str(&indent);
                let marker = match ordered {
                    Some(n) => format!("{n}. "),
                    None => "• ".to_string(),
                };
                out.push_str(&p.paint(DIM, &marker));
            }
            Event::Start(Tag::BlockQuote(_)) => out.push_str(&p.paint(DIM, "│ ")),
            Event::Rule => out.push_str(&p.paint(DIM, &"─".repeat(40))),
            Event::Start(Tag::Emphasis) => {
                styles.push(ITALIC);
                out.push_str(&restyle(&styles));
            }
            Event::Start(Tag::Strong) => {
                styles.push(BOLD);
                out.push_str(&restyle(&styles));
            }
            Event::Start(Tag::Strikethrough) => {
                styles.push("\x1b[9m");
                out.push_str(&restyle(&styles));
            }
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => {
                styles.pop();
                out.push_str(&restyle(&styles));
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                link = Some(dest_url.to_string());
                styles.push(UNDERLINE);
                out.push_str(&restyle(&styles));
            }
            Event::End(TagEnd::Link) => {
                styles.pop();
                out.push_str(&restyle(&styles));
                if let Some(url) = link.take()
                    && !out.ends_with(&url)
                {
                    out.push_str(&p.paint(DIM, &format!(" ({url})")));
                    out.push_str(&restyle(&styles));
                }
            }
            Event::Code(code) => {
                out.push_str(CYAN);
                out.push_str(&code);
                out.push_str(&restyle(&styles));
            }
            Event::Text(text) => out.push_str(&text),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            Event::Html(html) | Event::InlineHtml(html) => out.push_str(&html),
            _ => {}
        }
    }
    if out.trim().is_empty() {
        // Something the per-line parse cannot show (e.g. a table delimiter row): leave it.
        return line.to_string();
    }
    out.push_str("\x1b[0m");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, color: bool) -> String {
        let mut md = Markdown::new(Palette { color });
        text.lines()
            .map(|l| md.line(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Escapes made readable for snapshots.
    fn visible(s: &str) -> String {
        s.replace('\x1b', "⟨ESC⟩")
    }

    const ANSWER: &str = "# Fixed\n\nI changed **add** to use `checked_add`, see [the docs](https://doc.rust-lang.org).\n\n- first *point*\n- second\n  - nested\n1. one\n> quoted\n\n```rust\nfn add(a: u8) -> u8 { a }\n```\n---\nplain";

    /// What the printer shows for `text`, line by line.
    fn shown(text: &str, columns: usize) -> Vec<String> {
        let mut md = Markdown::new(Palette { color: true });
        let mut out: Vec<String> = text.lines().flat_map(|l| md.show(l, columns)).collect();
        out.extend(md.finish(columns));
        out
    }

    #[test]
    fn fences_are_hidden_around_highlighted_code_and_tables_are_aligned() {
        let out = shown(
            "Here:\n```rust\nlet x = 1;\n```\n| a | bb |\n|---|---|\n| ccc | d |\nafter",
            80,
        );
        assert!(out.iter().all(|l| !l.contains("```")), "{out:#?}");
        assert!(out.iter().any(|l| l.contains("let")));
        insta::assert_snapshot!(visible(&out.join("\n")));
        // A table at the end of the answer is drawn by `finish`.
        let out = shown("| a | b |\n|---|---|\n| 1 | 2 |", 80);
        assert_eq!(out.len(), 3, "{out:#?}");
    }

    #[test]
    fn an_answer_renders_styled() {
        insta::assert_snapshot!(visible(&render(ANSWER, true)));
    }

    #[test]
    fn without_colour_the_text_is_left_as_written() {
        assert_eq!(render(ANSWER, false), ANSWER);
    }

    #[test]
    fn emphasis_is_never_printed_raw() {
        let out = render("I changed **add** and *sub*.", true);
        assert!(!out.contains("**") && !out.contains("*sub*"), "{out}");
        assert!(out.contains("add") && out.contains("sub"));
    }

    #[test]
    fn code_in_fences_is_highlighted_and_fences_close() {
        let out = render("```rust\nlet x = 1;\n```\nafter `x`", true);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[1].contains("\x1b[38;2;"),
            "24-bit colour: {}",
            visible(lines[1])
        );
        assert!(!lines[3].contains("\x1b[38;2;"), "the fence closed");
        let unknown = render("```nosuchlang\nx\n```", true);
        assert!(unknown.contains("x"));
    }
}
