//! `@server:uri` in a REPL line: the server's resource, read and attached to the message (its
//! text after the line, in a `<resource>` block the model can tell from what was typed), with
//! Tab completing the URIs the servers list.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex},
};

use rustyline::{
    Context, Helper, completion::Completer, highlight::Highlighter, hint::Hinter,
    validate::Validator,
};
use tern_mcp::ResourceInfo;

/// One `@server:uri` in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mention {
    pub server: String,
    pub uri: String,
}

/// The mentions of `line`: words `@SERVER:URI` whose server is one of `servers`. A URI that is
/// not listed loses trailing punctuation (`…/features.md.` at the end of a sentence); a URI no
/// server lists is still read (templates, unlisted resources).
pub(super) fn mentions(line: &str, servers: &[String], listed: &[ResourceInfo]) -> Vec<Mention> {
    let mut out = Vec::new();
    for word in line.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else {
            continue;
        };
        let Some((server, uri)) = rest.split_once(':') else {
            continue;
        };
        if uri.is_empty() || !servers.iter().any(|s| s == server) {
            continue;
        }
        let is_listed = |u: &str| listed.iter().any(|r| r.server == server && r.uri == u);
        let trimmed = uri.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
        let uri = if is_listed(uri) || trimmed.is_empty() {
            uri
        } else {
            trimmed
        };
        let mention = Mention {
            server: server.to_string(),
            uri: uri.to_string(),
        };
        if !out.contains(&mention) {
            out.push(mention);
        }
    }
    out
}

/// The block a read resource becomes in the message.
pub(super) fn block(m: &Mention, mime_type: Option<&str>, text: &str) -> String {
    let mime = mime_type
        .map(|t| format!(" mime_type=\"{}\"", attr(t)))
        .unwrap_or_default();
    format!(
        "<resource server=\"{}\" uri=\"{}\"{mime}>\n{}\n</resource>",
        attr(&m.server),
        attr(&m.uri),
        text.trim_end()
    )
}

fn attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;")
}

/// The line editor's helper: completes `@server:uri` from the resources last listed.
#[derive(Default, Clone)]
pub(super) struct ReplHelper {
    /// `@server:uri` of every listed resource.
    pub(super) candidates: Arc<Mutex<Vec<String>>>,
    /// The custom commands' names (Tab completes them after the built-in ones).
    pub(super) commands: Arc<Mutex<Vec<String>>>,
    /// The project's files (`@path`, completed fuzzily).
    pub(super) files: Arc<Mutex<Vec<String>>>,
}

impl ReplHelper {
    /// Replaces the custom command names.
    pub(super) fn set_commands(&self, names: Vec<String>) {
        if let Ok(mut c) = self.commands.lock() {
            *c = names;
        }
    }

    /// Replaces the project's files.
    pub(super) fn set_files(&self, files: Vec<String>) {
        if let Ok(mut f) = self.files.lock() {
            *f = files;
        }
    }

    /// Replaces the candidates with `listed`.
    pub(super) fn set(&self, listed: &[ResourceInfo]) {
        if let Ok(mut c) = self.candidates.lock() {
            *c = listed
                .iter()
                .map(|r| format!("@{}:{}", r.server, r.uri))
                .collect();
        }
    }

    /// The candidates completing the word that ends at `pos`, and where it starts.
    fn complete_at(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        let word = &before[start..];
        // A slash command at the start of the line: complete it from the command table.
        if start == 0
            && let Some(prefix) = word.strip_prefix('/')
        {
            let dynamic = self.commands.lock().map(|c| c.clone()).unwrap_or_default();
            let names = crate::slash_commands::completions_with(prefix, &dynamic);
            return (0, names.into_iter().map(|n| format!("/{n}")).collect());
        }
        if !word.starts_with('@') {
            return (pos, Vec::new());
        }
        let mut candidates: Vec<String> = self
            .candidates
            .lock()
            .map(|c| c.iter().filter(|c| c.starts_with(word)).cloned().collect())
            .unwrap_or_default();
        if let Ok(files) = self.files.lock() {
            let query = &word[1..];
            candidates.extend(
                super::files::fuzzy(query, &files)
                    .into_iter()
                    .map(|f| format!("@{f}")),
            );
        }
        (start, candidates)
    }
}

impl Completer for ReplHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.complete_at(line, pos))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Borrowed(line)
    }
}

/// A line ending in `\` goes on to the next line instead of being sent (the shell's habit);
/// [`join_continued`] removes the backslashes before the text is sent.
impl Validator for ReplHelper {
    fn validate(
        &self,
        ctx: &mut rustyline::validate::ValidationContext<'_>,
    ) -> rustyline::Result<rustyline::validate::ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            rustyline::validate::ValidationResult::Incomplete
        } else {
            rustyline::validate::ValidationResult::Valid(None)
        })
    }
}

/// `input` with each line-continuation backslash (a `\` before a newline) removed.
pub(super) fn join_continued(input: &str) -> String {
    input.replace("\\\n", "\n")
}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(server: &str, uri: &str) -> ResourceInfo {
        ResourceInfo {
            server: server.into(),
            uri: uri.into(),
            name: "n".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    #[test]
    fn mentions_name_known_servers_and_lose_trailing_punctuation() {
        let servers = vec!["everything".to_string(), "docs".to_string()];
        let res = vec![listed("everything", "demo://doc/features.md")];
        let got = mentions(
            "compare @everything:demo://doc/features.md. with @docs:file:///a.txt, not a@b.com \
             or @nobody:x or @everything:demo://doc/features.md",
            &servers,
            &res,
        );
        assert_eq!(
            got,
            vec![
                Mention {
                    server: "everything".into(),
                    uri: "demo://doc/features.md".into()
                },
                Mention {
                    server: "docs".into(),
                    uri: "file:///a.txt".into()
                },
            ]
        );
    }

    #[test]
    fn blocks_quote_their_attributes() {
        let m = Mention {
            server: "s".into(),
            uri: "x://a\"b".into(),
        };
        assert_eq!(
            block(&m, Some("text/plain"), "body\n"),
            "<resource server=\"s\" uri=\"x://a&quot;b\" mime_type=\"text/plain\">\nbody\n</resource>"
        );
    }

    #[test]
    fn tab_completes_slash_commands_from_the_table_at_the_start_of_a_line() {
        let h = ReplHelper::default();
        assert_eq!(
            h.complete_at("/co", 3),
            (
                0,
                vec!["/cost".into(), "/context".into(), "/compact".into()]
            )
        );
        // Not in the middle of a line: that is text for the model.
        assert_eq!(h.complete_at("see /co", 7), (7, vec![]));
        // Custom commands join after the table's.
        h.set_commands(vec!["commit-msg".into(), "review".into()]);
        assert_eq!(
            h.complete_at("/co", 3).1,
            ["/cost", "/context", "/compact", "/commit-msg"]
        );
    }

    #[test]
    fn tab_completes_the_word_at_the_cursor() {
        let h = ReplHelper::default();
        h.set(&[
            listed("everything", "demo://doc/features.md"),
            listed("everything", "demo://doc/structure.md"),
            listed("docs", "file:///a"),
        ]);
        let line = "read @everything:demo://doc/f";
        assert_eq!(
            h.complete_at(line, line.len()),
            (5, vec!["@everything:demo://doc/features.md".to_string()])
        );
        assert_eq!(h.complete_at("@ev", 3).1.len(), 2);
        assert!(h.complete_at("plain word", 10).1.is_empty());
    }
}
