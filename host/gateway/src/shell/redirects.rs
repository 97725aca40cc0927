//! Redirections and expanded file names: which files a command line writes or names, and
//! whether they are protected or outside the roots (the path half of [`Walker`]).

use brush_parser::ast::{IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};

use super::words::{Literal, literal};
use super::{Access, Walker, glob};

impl Walker<'_> {
    /// Follows one redirection; returns the file it writes, as written, if it writes one.
    pub(super) fn redirect(&mut self, redirect: &IoRedirect, depth: usize) -> Option<String> {
        let written = |this: &mut Self, raw: &str, writes: bool| {
            (this.redirect_path(raw, writes, depth) && writes).then(|| raw.to_string())
        };
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let writes = !matches!(kind, IoFileRedirectKind::Read);
                match target {
                    IoFileRedirectTarget::Filename(w) => return written(self, &w.value, writes),
                    IoFileRedirectTarget::Duplicate(w) => {
                        let fd_like = w.value.chars().all(|c| c.is_ascii_digit() || c == '-');
                        if !fd_like {
                            return written(self, &w.value, writes);
                        }
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                        self.risk("a process substitution <(…)");
                        self.list(&sub.list, depth);
                    }
                }
            }
            IoRedirect::OutputAndError(w, _) => return written(self, &w.value, true),
            IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth);
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let body = &doc.doc.value;
                    if body.contains('$') || body.contains('`') {
                        self.risk("a here-document with expansions");
                        let mut subs = Vec::new();
                        // The body is not a word; scan it for substitutions to check them too.
                        let _ = literal(&format!("\"{}\"", body.replace('"', "\\\"")), &mut subs);
                        for sub in subs {
                            self.source(&sub, depth + 1);
                        }
                    }
                }
            }
        }
        None
    }

    /// A word the shell expands into file names: a risk, or for a write a protected write,
    /// when it may name a protected config location (F1).
    pub(super) fn glob_word(&mut self, text: &str, pattern: &str, access: Access) {
        let expansion = glob::expand(self.ws, &self.cwd, pattern);
        self.out.paths.extend(expansion.matches.iter().cloned());
        if expansion.incomplete {
            self.risk(format!("`{text}` expands to more than the gateway follows"));
        }
        if expansion.reaches_protected {
            match access {
                Access::Writes => self
                    .out
                    .protected_writes
                    .push(self.ws.normalize_from(&self.cwd, text)),
                Access::Names => {
                    self.risk(format!(
                        "`{text}` may expand to a protected config location"
                    ));
                }
            }
        }
    }

    /// Follows a redirection's target; returns whether it names a file (not `/dev/null` or the
    /// like, nor a word the shell decides at run time).
    fn redirect_path(&mut self, raw: &str, writes: bool, depth: usize) -> bool {
        let path = match self.word(raw, depth) {
            Literal::Text(path) => path,
            Literal::Glob { text, pattern } => {
                // Bash expands a redirection target that globs to one file.
                let access = if writes {
                    Access::Writes
                } else {
                    Access::Names
                };
                self.glob_word(&text, &pattern, access);
                return true;
            }
            // Already a risk (the word is decided at run time): no rule allows it anyway.
            Literal::Dynamic { .. } => return false,
        };
        if matches!(
            path.as_str(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        ) {
            return false;
        }
        let abs = self.ws.normalize_from(&self.cwd, &path);
        self.out.paths.push(abs.clone());
        if writes && self.ws.is_protected(&abs) {
            self.out.protected_writes.push(abs);
        } else if !self.ws.in_roots(&abs) {
            self.risk(format!(
                "a redirection to {} outside the roots",
                abs.display()
            ));
        }
        true
    }
}
