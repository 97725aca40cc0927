//! Shell words as rules see them: unquoted when they are plain text, flagged when their value
//! is only known at run time.

use brush_parser::{
    ParserOptions,
    word::{TildeExpr, WordPiece, WordPieceWithSource},
};

/// A word's value as a rule can match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    /// Plain text once quotes and escapes are removed.
    Text(String),
    /// Text the shell expands into file names: unquoted `*`, `?`, `[` or a brace expansion.
    /// `text` is the word without its quotes (what command patterns match); `pattern` is the
    /// same as a glob, its quoted characters escaped with `\`.
    Glob { text: String, pattern: String },
    /// The value depends on run-time expansion; the reason names the construct. `raw` is the word
    /// as written, which deny rules still match against.
    Dynamic { raw: String, why: &'static str },
}

impl Literal {
    /// The text rules match: the unquoted value, or the raw text of a dynamic word.
    pub fn text(&self) -> &str {
        match self {
            Literal::Text(t) | Literal::Glob { text: t, .. } => t,
            Literal::Dynamic { raw, .. } => raw,
        }
    }
}

/// A command substitution found inside a word: its text is parsed and checked as well, since it
/// runs too.
pub type Substitutions = Vec<String>;

/// Unquotes one word. Command substitutions met on the way are pushed onto `subs`.
pub fn literal(raw: &str, subs: &mut Substitutions) -> Literal {
    let pieces = match brush_parser::word::parse(raw, &ParserOptions::default()) {
        Ok(p) => p,
        Err(_) => {
            return Literal::Dynamic {
                raw: raw.to_owned(),
                why: "a word the parser cannot read",
            };
        }
    };
    let mut out = Unquoted::default();
    match pieces_text(&pieces, &mut out, subs, Quoting::Bare) {
        Ok(()) if out.expands => Literal::Glob {
            text: out.text,
            pattern: out.pattern,
        },
        Ok(()) => Literal::Text(out.text),
        Err(why) => Literal::Dynamic {
            raw: raw.to_owned(),
            why,
        },
    }
}

/// A word being unquoted: its text, and the same as a glob pattern.
#[derive(Default)]
struct Unquoted {
    text: String,
    pattern: String,
    /// It holds unquoted glob characters or a brace expansion.
    expands: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quoting {
    Bare,
    Quoted,
}

impl Unquoted {
    fn push(&mut self, s: &str, quoting: Quoting) {
        self.text.push_str(s);
        for c in s.chars() {
            let special = "*?[]{},\\".contains(c);
            if quoting == Quoting::Quoted && special {
                self.pattern.push('\\');
            }
            self.pattern.push(c);
        }
        if quoting == Quoting::Bare
            && (s.contains(super::glob::GLOB_CHARS) || super::glob::has_braces(s))
        {
            self.expands = true;
        }
    }
}

fn pieces_text(
    pieces: &[WordPieceWithSource],
    out: &mut Unquoted,
    subs: &mut Substitutions,
    quoting: Quoting,
) -> Result<(), &'static str> {
    let mut dynamic: Option<&'static str> = None;
    for piece in pieces {
        let why = match &piece.piece {
            WordPiece::Text(s) => {
                out.push(s, quoting);
                None
            }
            WordPiece::SingleQuotedText(s) => {
                out.push(s, Quoting::Quoted);
                None
            }
            WordPiece::AnsiCQuotedText(s) if !s.contains('\\') => {
                out.push(s, Quoting::Quoted);
                None
            }
            WordPiece::AnsiCQuotedText(_) => Some("an ANSI-C escape ($'\\…')"),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_text(inner, out, subs, Quoting::Quoted).err()
            }
            WordPiece::TildeExpansion(TildeExpr::Home) => {
                out.push("~", Quoting::Quoted);
                None
            }
            WordPiece::TildeExpansion(_) => Some("a tilde expansion"),
            WordPiece::EscapeSequence(s) => {
                // `\x` is `x`; a backslash-newline is a line continuation and vanishes.
                let c = s.strip_prefix('\\').unwrap_or(s);
                if c != "\n" {
                    out.push(c, Quoting::Quoted);
                }
                None
            }
            WordPiece::ParameterExpansion(_) => Some("a parameter expansion ($VAR)"),
            WordPiece::ArithmeticExpression(_) => Some("an arithmetic expansion $((…))"),
            WordPiece::CommandSubstitution(inner) => {
                subs.push(inner.clone());
                Some("a command substitution $(…)")
            }
            WordPiece::BackquotedCommandSubstitution(inner) => {
                subs.push(inner.clone());
                Some("a backquoted command substitution `…`")
            }
        };
        // Keep walking after the first dynamic piece so every substitution is collected.
        if dynamic.is_none() {
            dynamic = why;
        }
    }
    dynamic.map_or(Ok(()), Err)
}

/// A word in canonical form: bare when it needs no quoting, else single-quoted. Both commands
/// and rule patterns are put in this form before matching, so `git commit -m "a b"` and the
/// pattern `git commit -m 'a b'` compare equal. `*` stays bare: it is the rules' wildcard.
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| !c.is_whitespace() && !"'\"\\$`;&|<>(){}#".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Words joined in canonical form.
pub fn canonical(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// Splits a rule's command pattern into words (quotes and backslashes as in the shell), for
/// [`canonical`]. Patterns come from the user's own config, so this small splitter suffices.
pub fn split_pattern(pattern: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => cur.extend(chars.next()),
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                cur.extend(chars.next());
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(raw: &str) -> Literal {
        literal(raw, &mut Vec::new())
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(lit("'a b'"), Literal::Text("a b".into()));
        assert_eq!(lit("\"x\"y\\z"), Literal::Text("xyz".into()));
        assert_eq!(lit("~/x"), Literal::Text("~/x".into()));
        assert_eq!(lit("$'plain'"), Literal::Text("plain".into()));
    }

    #[test]
    fn expansions_are_dynamic_and_substitutions_collected() {
        let mut subs = Vec::new();
        assert!(matches!(
            literal("a$(rm -rf /)b", &mut subs),
            Literal::Dynamic { .. }
        ));
        assert!(matches!(
            literal("`id`", &mut subs),
            Literal::Dynamic { .. }
        ));
        assert_eq!(subs, ["rm -rf /", "id"]);
        for raw in ["$HOME", "\"${X}\"", "$((1+2))", "$'\\x72m'", "~root"] {
            assert!(matches!(lit(raw), Literal::Dynamic { .. }), "{raw}");
        }
    }

    #[test]
    fn canonical_form_is_shared_by_commands_and_patterns() {
        let words: Vec<String> = ["git", "commit", "-m", "a b"].map(String::from).into();
        assert_eq!(canonical(&words), "git commit -m 'a b'");
        assert_eq!(
            canonical(&split_pattern("git commit -m \"a b\" *")),
            "git commit -m 'a b' *"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
    }
}
