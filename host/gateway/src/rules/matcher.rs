//! Compiled patterns: how one argument value is compared with one pattern.
//!
//! The same pattern text means different things depending on the argument: over a shell command
//! it matches each simple command's canonical words; over a path it is a glob on the normalized
//! absolute path (`*` stays within a directory, `**` crosses them); over a URL, `domain:` compares
//! the host at a dot boundary; over anything else it is a plain `*` wildcard.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use crate::paths::PathScope;
use crate::shell::{Simple, canonical, options, split_pattern};

/// How a rule treats an array of values, and what it does with a value it cannot read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    /// Deny and ask rules: one matching element is enough, and an unreadable URL counts as a match
    /// (fail closed).
    Any,
    /// Allow rules: every element must match, and an unreadable URL does not.
    All,
}

/// A `domain:` pattern.
#[derive(Debug, Clone)]
pub struct Domain {
    /// Lowercased host without a trailing dot.
    host: String,
    /// `*.example.com`: subdomains only.
    subdomains_only: bool,
}

impl Domain {
    pub fn new(pattern: &str) -> Self {
        let p = pattern.trim().trim_end_matches('.').to_ascii_lowercase();
        match p.strip_prefix("*.") {
            Some(rest) => Self {
                host: rest.to_owned(),
                subdomains_only: true,
            },
            None => Self {
                host: p,
                subdomains_only: false,
            },
        }
    }

    /// `docs.rs` matches `docs.rs` and `api.docs.rs`, never `docs.rs.evil.com` nor `evildocs.rs`.
    pub fn matches_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let sub = host
            .strip_suffix(&self.host)
            .is_some_and(|head| head.ends_with('.') && head.len() > 1);
        sub || (!self.subdomains_only && host == self.host)
    }

    fn matches(&self, value: &str, q: Quantifier) -> bool {
        match url::Url::parse(value)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
        {
            Some(host) => self.matches_host(host.trim_start_matches('[').trim_end_matches(']')),
            None => q == Quantifier::Any,
        }
    }
}

/// A glob pattern, compiled for each way it may be used.
#[derive(Debug, Clone)]
pub struct Glob {
    raw: String,
    /// Canonical words, for commands.
    command: String,
    /// The words with their options normalized, when the program's options are known: what
    /// deny and ask rules also compare (`rm -rf *` names `rm -r -f x` too).
    options: Option<options::Normalized>,
    /// Case-sensitive path glob (allow rules): `None` when the text is not a valid glob.
    path: Option<GlobMatcher>,
    /// Case-insensitive path glob (deny and ask rules err on the side of matching).
    path_ci: Option<GlobMatcher>,
    /// The path pattern: `**/…` as written, anything else absolute.
    path_pattern: String,
}

impl Glob {
    pub fn new(raw: &str, ws: &PathScope) -> Self {
        let path_pattern = if raw.starts_with("**") {
            raw.to_owned()
        } else {
            ws.normalize(raw).to_string_lossy().into_owned()
        };
        let build = |ci: bool| {
            GlobBuilder::new(&path_pattern)
                .literal_separator(true)
                .case_insensitive(ci)
                .backslash_escape(true)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        };
        let words = split_pattern(raw);
        Self {
            raw: raw.to_owned(),
            command: canonical(&words),
            options: options::normalize(&words),
            path: build(false),
            path_ci: build(true),
            path_pattern,
        }
    }

    /// The pattern as a deny glob for a file server (tern-fs's `--deny-read` and `_meta`
    /// `tern/deny_paths`): relative `**/…` globs are anchored at its roots, others absolute;
    /// letters match either case, as deny rules do here.
    pub fn deny_glob(&self) -> String {
        let mut out = String::with_capacity(self.path_pattern.len() * 2);
        let mut chars = self.path_pattern.chars();
        let mut in_class = false;
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    out.push(c);
                    out.extend(chars.next());
                }
                '[' if !in_class => {
                    in_class = true;
                    out.push(c);
                }
                ']' if in_class => {
                    in_class = false;
                    out.push(c);
                }
                c if !in_class && c.is_ascii_alphabetic() => {
                    out.push('[');
                    out.push(c.to_ascii_lowercase());
                    out.push(c.to_ascii_uppercase());
                    out.push(']');
                }
                c => out.push(c),
            }
        }
        out
    }

    /// Whether the pattern is written as a path, which makes it a path pattern for any argument.
    pub fn path_shaped(&self) -> bool {
        let r = &self.raw;
        r.starts_with('/') || r.starts_with('~') || r.starts_with('.') || r.contains('/')
    }

    /// What an allow pattern covers of one simple command: its text, and its redirections
    /// only when the pattern itself writes one (`git status > status.txt`); a pattern that says
    /// nothing of redirections never covers a command that writes a file.
    pub fn covers_command(&self, command: &crate::shell::Simple) -> bool {
        if command.writes.is_empty() {
            return self.matches_command(&command.text);
        }
        // Spelt the way the pattern was canonicalized: `>` a word of its own, then the target.
        let mut words = command.words.clone();
        for w in &command.writes {
            words.extend([">".to_string(), w.clone()]);
        }
        let with_writes = crate::shell::canonical(&words);
        let redirect = crate::shell::quote(">");
        self.command.contains(redirect.as_str()) && wildcard(&self.command, &with_writes)
    }

    /// Against one canonical simple command.
    pub fn matches_command(&self, text: &str) -> bool {
        wildcard(&self.command, text)
            || self
                .command
                .strip_suffix(" *")
                .is_some_and(|head| head == text)
    }

    /// Deny and ask semantics against one simple command: its text as written, any command it
    /// runs through a wrapper, and either with the options of known programs normalized.
    pub fn names_command(&self, c: &Simple) -> bool {
        std::iter::once(&c.words)
            .chain(&c.wrapped)
            .any(|words| self.names_words(words))
    }

    fn names_words(&self, words: &[String]) -> bool {
        if self.matches_command(&canonical(words)) {
            return true;
        }
        match (&self.options, options::normalize(words)) {
            (Some(pattern), Some(command)) => pattern.covers(&command),
            _ => false,
        }
    }

    /// Against a path argument (already normalized by the caller).
    pub fn matches_path(&self, path: &std::path::Path, q: Quantifier) -> bool {
        let m = match q {
            Quantifier::Any => &self.path_ci,
            Quantifier::All => &self.path,
        };
        m.as_ref().is_some_and(|m| m.is_match(path))
    }

    /// Against any other value: strings as they are, other JSON as its text.
    pub fn matches_plain(&self, value: &Value) -> bool {
        match value {
            Value::String(s) => wildcard(&self.raw, s),
            other => wildcard(&self.raw, &other.to_string()),
        }
    }
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub enum Matcher {
    Domain(Domain),
    Glob(Box<Glob>),
}

impl Matcher {
    /// Matches a URL-ish or plain value (not a command, not a path argument).
    pub fn matches_value(
        &self,
        value: &Value,
        path_arg: bool,
        ws: &PathScope,
        q: Quantifier,
    ) -> bool {
        match value {
            Value::Array(items) if !items.is_empty() => match q {
                Quantifier::Any => items.iter().any(|v| self.matches_value(v, path_arg, ws, q)),
                Quantifier::All => items.iter().all(|v| self.matches_value(v, path_arg, ws, q)),
            },
            _ => self.matches_scalar(value, path_arg, ws, q),
        }
    }

    fn matches_scalar(&self, value: &Value, path_arg: bool, ws: &PathScope, q: Quantifier) -> bool {
        match (self, value) {
            (Matcher::Domain(d), Value::String(s)) => d.matches(s, q),
            (Matcher::Domain(_), _) => q == Quantifier::Any,
            (Matcher::Glob(g), Value::String(s)) if path_arg || g.path_shaped() => {
                let path = ws.normalize(s);
                match q {
                    // Deny and ask: whatever the path opens, through symlinks too.
                    Quantifier::Any => ws.variants(&path).iter().any(|p| g.matches_path(p, q)),
                    Quantifier::All => g.matches_path(&path, q),
                }
            }
            (Matcher::Glob(g), v) => g.matches_plain(v),
        }
    }
}

pub use crate::wildcard::wildcard;

/// Argument names that hold paths (so a plain pattern over them is a path glob, and writes
/// through them are checked for protected locations).
pub fn is_path_arg(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    const NAMES: &[&str] = &[
        "path",
        "paths",
        "file",
        "files",
        "filename",
        "filepath",
        "dir",
        "directory",
        "cwd",
        "root",
        "dest",
        "destination",
        "target",
        "source",
        "src",
        "output",
        "out",
    ];
    NAMES.contains(&n.as_str())
        || ["_path", "_dir", "_file", "_directory"]
            .iter()
            .any(|s| n.ends_with(s))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn ws() -> PathScope {
        PathScope {
            cwd: "/p".into(),
            roots: vec!["/p".into()],
            home: Some("/home/u".into()),
            tern_home: "/home/u/.tern".into(),
        }
    }

    #[test]
    fn command_patterns_match_canonical_words_and_a_bare_prefix() {
        let g = Glob::new("cargo test *", &ws());
        assert!(g.matches_command("cargo test"));
        assert!(g.matches_command("cargo test -p x"));
        assert!(!g.matches_command("cargo testx"));
        let g = Glob::new("git commit -m \"a b\"", &ws());
        assert!(g.matches_command("git commit -m 'a b'"));
    }

    #[test]
    fn domains_match_at_a_dot_boundary() {
        let d = Domain::new("docs.rs");
        assert!(d.matches_host("docs.rs"));
        assert!(d.matches_host("DOCS.rs."));
        assert!(d.matches_host("api.docs.rs"));
        assert!(!d.matches_host("docs.rs.evil.com"));
        assert!(!d.matches_host("evildocs.rs"));
        let d = Domain::new("*.example.com");
        assert!(d.matches_host("a.example.com"));
        assert!(d.matches_host("a.b.example.com"));
        assert!(!d.matches_host("example.com"));
        assert!(!d.matches_host("badexample.com"));
        let m = Matcher::Domain(Domain::new("docs.rs"));
        let v = |s: &str| Value::String(s.into());
        assert!(m.matches_value(&v("https://docs.rs/x"), false, &ws(), Quantifier::All));
        assert!(!m.matches_value(
            &v("https://docs.rs.evil.com/"),
            false,
            &ws(),
            Quantifier::All
        ));
        assert!(!m.matches_value(
            &v("https://docs.rs@evil.com/"),
            false,
            &ws(),
            Quantifier::All
        ));
        // Unreadable URLs: deny/ask fail closed, allow does not.
        assert!(m.matches_value(&v("not a url"), false, &ws(), Quantifier::Any));
        assert!(!m.matches_value(&v("not a url"), false, &ws(), Quantifier::All));
    }

    #[test]
    fn path_globs_match_normalized_absolute_paths() {
        let w = ws();
        let env = Glob::new("**/.env", &w);
        assert!(env.matches_path(&w.normalize(".env"), Quantifier::All));
        assert!(env.matches_path(&w.normalize("a/b/../.env"), Quantifier::All));
        assert!(!env.matches_path(&w.normalize(".env.example"), Quantifier::All));
        let ssh = Glob::new("~/.ssh/**", &w);
        assert!(ssh.matches_path(&w.normalize("/home/u/.ssh/id_rsa"), Quantifier::All));
        assert!(ssh.matches_path(&w.normalize("../home/u/.ssh/id_rsa"), Quantifier::All));
        assert!(!ssh.matches_path(Path::new("/p/.ssh/id"), Quantifier::All));
        let src = Glob::new("src/*", &w);
        assert!(src.matches_path(&w.normalize("./src/x.rs"), Quantifier::All));
        assert!(!src.matches_path(&w.normalize("src/a/x.rs"), Quantifier::All));
        // Deny/ask compare without case.
        assert!(env.matches_path(&w.normalize(".ENV"), Quantifier::Any));
        assert!(!env.matches_path(&w.normalize(".ENV"), Quantifier::All));
    }

    #[test]
    fn deny_globs_for_file_servers_match_either_case() {
        let w = ws();
        assert_eq!(Glob::new("**/.env", &w).deny_glob(), "**/.[eE][nN][vV]");
        assert_eq!(
            Glob::new("secrets/[ab]*.txt", &w).deny_glob(),
            "/[pP]/[sS][eE][cC][rR][eE][tT][sS]/[ab]*.[tT][xX][tT]"
        );
    }

    #[test]
    fn arrays_any_versus_all() {
        let w = ws();
        let m = Matcher::Glob(Box::new(Glob::new("src/**", &w)));
        let v = serde_json::json!(["src/a", "/etc/passwd"]);
        assert!(m.matches_value(&v, true, &w, Quantifier::Any));
        assert!(!m.matches_value(&v, true, &w, Quantifier::All));
    }
}
