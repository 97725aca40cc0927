//! Secrets that never print, and the redactor every byte the gateway writes goes through.
//!
//! Issue 4, item 8: the audit log, spill files and events must never carry an API key, whether it
//! came from the environment or showed up in a tool's output. Two nets: the *values* of configured
//! secrets (exact match), and the *shapes* of well-known keys (`sk-ant-…`, `sk-…`, `ghp_…`,
//! `AKIA…`, `Bearer …`) for keys tern was never told about.

use std::fmt;

/// What a redacted span is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Configured secrets shorter than this are not redacted by value: replacing every `abc` in every
/// output would make the audit useless and a three-letter "secret" protects nothing.
const MIN_SECRET_LEN: usize = 6;

/// A secret value (an API key, a token). Its `Debug` and `Display` print `[REDACTED]`, so it
/// cannot leak through a log line or an error message by accident; [`Secret::expose`] is the
/// one, greppable, way to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that must send it (an HTTP header, the redactor).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A key shape: a literal prefix and how many token characters must follow it.
struct Shape {
    prefix: &'static str,
    /// Minimum token characters after the prefix for the span to count as a key (so that the
    /// words `sk-learn` or `Bearer of news` stay as they are).
    min_tail: usize,
    /// Maximum tail length (`AKIA` ids are exactly 16 more characters).
    max_tail: usize,
    tail_char: fn(char) -> bool,
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn bearer_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=".contains(c)
}

fn aws_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

/// Longest first: `sk-ant-` must win over `sk-`.
const SHAPES: &[Shape] = &[
    Shape {
        prefix: "sk-ant-",
        min_tail: 8,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "sk-",
        min_tail: 20,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "github_pat_",
        min_tail: 20,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "ghp_",
        min_tail: 20,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "gho_",
        min_tail: 20,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "ghs_",
        min_tail: 20,
        max_tail: usize::MAX,
        tail_char: token_char,
    },
    Shape {
        prefix: "AKIA",
        min_tail: 16,
        max_tail: 16,
        tail_char: aws_char,
    },
    Shape {
        prefix: "Bearer ",
        min_tail: 8,
        max_tail: usize::MAX,
        tail_char: bearer_char,
    },
];

/// Removes secrets from text. Cheap to clone-share (`Arc` it); the gateway applies it to the
/// audit line, the spill file, the events and the text handed back to the model.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<Secret>,
}

impl Redactor {
    /// A redactor for the key shapes and for these secret values (e.g. the values of the env vars
    /// the config names as holding keys).
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        let mut secrets: Vec<Secret> = secrets
            .into_iter()
            .filter(|s| s.expose().len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every configured secret value and every key-shaped span replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            let value = secret.expose();
            if out.contains(value) {
                out = out.replace(value, REDACTED);
            }
            // The same value as it appears inside a JSON string (quotes, backslashes escaped).
            let escaped = serde_json::to_string(value).unwrap_or_default();
            let escaped = escaped.trim_matches('"');
            if escaped != value && out.contains(escaped) {
                out = out.replace(escaped, REDACTED);
            }
        }
        redact_shapes(&out)
    }

    /// Redacts every string inside a JSON value.
    pub fn redact_json(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.redact(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.redact_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.redact(k), self.redact_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn redact_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    'scan: while let Some(c) = rest.chars().next() {
        // A key starts at a word boundary: `risk-…` holds `sk-` but is no key.
        if prev.is_none_or(|p| !p.is_ascii_alphanumeric()) {
            for shape in SHAPES {
                let Some(after) = rest.strip_prefix(shape.prefix) else {
                    continue;
                };
                let tail: usize = after
                    .chars()
                    .take_while(|&c| (shape.tail_char)(c))
                    .map(char::len_utf8)
                    .sum();
                let tail_chars = after[..tail].chars().count();
                let fits = tail_chars >= shape.min_tail && tail_chars <= shape.max_tail;
                // `AKIA` ids end exactly: a longer run is some other word.
                if fits {
                    out.push_str(shape.prefix.trim_end());
                    if shape.prefix.ends_with(' ') {
                        out.push(' ');
                    }
                    out.push_str(REDACTED);
                    rest = &after[tail..];
                    prev = Some('x');
                    continue 'scan;
                }
            }
        }
        out.push(c);
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("sk-ant-api03-very-secret");
        assert_eq!(format!("{s}"), REDACTED);
        assert!(!format!("{s:?}").contains("very-secret"));
        assert_eq!(s.expose(), "sk-ant-api03-very-secret");
    }

    #[test]
    fn key_shapes_are_redacted() {
        let r = Redactor::default();
        for (input, gone) in [
            ("key=sk-ant-api03-AbCdEf123456 end", "AbCdEf123456"),
            ("sk-proj-0123456789abcdefghijkl", "0123456789abcdefghijkl"),
            (
                "token ghp_0123456789abcdefghijABCDEF",
                "0123456789abcdefghij",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
            ("Authorization: Bearer abc.def-ghi_123", "abc.def-ghi_123"),
        ] {
            let out = r.redact(input);
            assert!(!out.contains(gone), "{input} -> {out}");
            assert!(out.contains(REDACTED), "{input} -> {out}");
        }
    }

    #[test]
    fn ordinary_words_survive() {
        let r = Redactor::default();
        for input in [
            "pip install scikit-learn; risk-assessment",
            "sk-learn",
            "Bearer of bad news",
            "AKIA is short",
            "task-0123456789abcdefghijklmnop",
        ] {
            assert_eq!(r.redact(input), input);
        }
    }

    #[test]
    fn configured_values_are_redacted_also_json_escaped() {
        let r = Redactor::new([Secret::new("hunter2\"pw"), Secret::new("abc")]);
        assert_eq!(r.redact("pw is hunter2\"pw"), format!("pw is {REDACTED}"));
        let json = serde_json::json!({"x": "hunter2\"pw"}).to_string();
        assert!(!r.redact(&json).contains("hunter2"));
        // Too short to redact by value.
        assert_eq!(r.redact("abc"), "abc");
    }

    #[test]
    fn json_values_are_walked() {
        let r = Redactor::new([Secret::new("topsecretvalue")]);
        let v = serde_json::json!({"a": ["topsecretvalue", 1], "b": {"c": "x sk-ant-api03-zzzzzzzzzz"}});
        let out = r.redact_json(&v).to_string();
        assert!(
            !out.contains("topsecretvalue") && !out.contains("zzzzzzzzzz"),
            "{out}"
        );
    }
}
