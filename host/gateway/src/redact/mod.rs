//! Secrets that never print, and the redactor every byte the gateway writes goes through.
//!
//! Issue 4, item 8: the audit log, spill files and events must never carry an API key, whether it
//! came from the environment or showed up in a tool's output. Two nets: the *values* of configured
//! secrets (exact match), and the [`patterns`] of secrets tern was never told about: well-known
//! key prefixes (`sk-ant-…`, `ghp_…`, `xoxb-…`, `glpat-…`, `AIza…`, `AKIA…`, `Bearer …`), JWTs,
//! PEM private-key bodies and `password=`/`secret:`/`…_token=` values (F8).
//!
//! A key split by an invisible character (`sk-ant-api03-ab\u{200B}cd…`) is one key to whoever
//! copies it out of the log, so zero-width characters do not hide it from either net.

mod patterns;

use std::fmt;

/// What a redacted span is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Characters that render as nothing: zero width space, non-joiner and joiner, word joiner,
/// and the byte-order mark (zero width no-break space).
const ZERO_WIDTH: &[char] = &['\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}'];

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

/// Removes secrets from text. Cheap to clone-share (`Arc` it); the gateway applies it to the
/// audit line, the spill file, the events and the text handed back to the model.
#[derive(Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole. Behind a lock
    /// because a run learns secrets as it goes (an OAuth token obtained mid-run: [`Self::add`]).
    secrets: std::sync::RwLock<Vec<Secret>>,
}

impl Clone for Redactor {
    fn clone(&self) -> Self {
        Self {
            secrets: std::sync::RwLock::new(
                self.secrets.read().map(|s| s.clone()).unwrap_or_default(),
            ),
        }
    }
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
        Self {
            secrets: std::sync::RwLock::new(secrets),
        }
    }

    /// Adds a secret learned during the run (e.g. an OAuth token a refresh just returned), kept
    /// in longest-first order; too short or known ones are ignored.
    pub fn add(&self, secret: Secret) {
        if secret.expose().len() < MIN_SECRET_LEN {
            return;
        }
        if let Ok(mut secrets) = self.secrets.write()
            && !secrets.contains(&secret)
        {
            let at = secrets.partition_point(|s| s.expose().len() >= secret.expose().len());
            secrets.insert(at, secret);
        }
    }

    /// How many bytes at the end of `text` could be the start of a known secret value (the
    /// longest such suffix, shorter than the secret). A stream printed piece by piece holds
    /// them back until the next piece says whether the secret follows: a key split across two
    /// deltas is then still redacted whole.
    pub fn pending_prefix(&self, text: &str) -> usize {
        let secrets = match self.secrets.read() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut longest = 0;
        for secret in secrets.iter() {
            let value = secret.expose();
            let max = value.len().saturating_sub(1).min(text.len());
            for n in (longest + 1..=max).rev() {
                let start = text.len() - n;
                if text.is_char_boundary(start) && value.starts_with(&text[start..]) {
                    longest = n;
                    break;
                }
            }
        }
        longest
    }

    /// `text` with every configured secret value and every secret-shaped span replaced.
    pub fn redact(&self, text: &str) -> String {
        if text.contains(ZERO_WIDTH) {
            // Look again without the invisible characters; keep them when that finds nothing,
            // so text without secrets is never changed.
            let visible: String = text.chars().filter(|c| !ZERO_WIDTH.contains(c)).collect();
            let redacted = self.redact_visible(&visible);
            if redacted != visible {
                return redacted;
            }
        }
        self.redact_visible(text)
    }

    fn redact_visible(&self, text: &str) -> String {
        let mut out = text.to_owned();
        let secrets = match self.secrets.read() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        for secret in secrets.iter() {
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
        patterns::shapes(&patterns::assignments(&patterns::pem_bodies(&out)))
    }

    /// [`Redactor::redact`] for a line whose end was cut off (ending in `cut`, e.g. a live tail's
    /// `…`): a secret that began before the cut shows only its start, which no value matches, so
    /// that start is replaced too.
    pub fn redact_cut(&self, text: &str, cut: char) -> String {
        let Some(kept) = text.strip_suffix(cut) else {
            return self.redact(text);
        };
        let redacted = self.redact(kept);
        let start = redacted.len() - self.pending_prefix(&redacted);
        if start == redacted.len() {
            return format!("{redacted}{cut}");
        }
        format!("{}{REDACTED}{cut}", &redacted[..start])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_learned_during_a_run_are_redacted_from_then_on() {
        let r = Redactor::new([Secret::new("abcdef")]);
        let token = "opaque-oauth-token-1234";
        assert_eq!(r.redact(token), token);
        r.add(Secret::new(token));
        r.add(Secret::new("abc"));
        assert_eq!(r.redact(&format!("got {token}")), format!("got {REDACTED}"));
        assert_eq!(r.redact("abc"), "abc");
        // A clone carries what was learned.
        assert_eq!(r.clone().redact(token), REDACTED);
    }

    #[test]
    fn a_line_cut_inside_a_secret_shows_none_of_it() {
        let r = Redactor::new([Secret::new("hunter2-very-secret")]);
        assert_eq!(
            r.redact_cut("token=x hunter2-ve…", '…'),
            format!("token=x {REDACTED}…")
        );
        assert_eq!(r.redact_cut("plain hun", '…'), "plain hun", "not cut: kept");
        assert_eq!(r.redact_cut("nothing secret…", '…'), "nothing secret…");
        assert_eq!(
            r.redact_cut("a hunter2-very-secret b…", '…'),
            format!("a {REDACTED} b…")
        );
    }

    #[test]
    fn the_start_of_a_secret_at_the_end_of_a_piece_is_held_back() {
        let r = Redactor::new([Secret::new("sk-ant-0123456789")]);
        assert_eq!(r.pending_prefix("your key is sk-an"), "sk-an".len());
        assert_eq!(r.pending_prefix("your key is s"), 1);
        assert_eq!(r.pending_prefix("no key here."), 0);
        // The whole secret is not pending: it is redacted as it is.
        assert_eq!(r.pending_prefix("sk-ant-0123456789"), 0);
        assert_eq!(r.pending_prefix("é"), 0);
    }

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
    fn more_key_shapes_are_redacted() {
        let r = Redactor::default();
        for (input, gone) in [
            ("xoxb-1234567890-0987654321-AbCdEfGh", "1234567890"),
            ("glpat-AbCdEfGhIjKlMnOpQrSt", "AbCdEfGhIjKlMnOpQrSt"),
            (
                "key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv",
                "SyA1b2C3d4E5f6G7h8I9j0",
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghij",
                "11ABCDEFG0123456789",
            ),
            ("ASIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
        ] {
            let out = r.redact(input);
            assert!(!out.contains(gone), "{input} -> {out}");
        }
    }

    #[test]
    fn a_key_split_by_a_zero_width_character_is_still_found() {
        let r = Redactor::new([Secret::new("topsecretvalue-123")]);
        for zw in ZERO_WIDTH {
            let split = format!("k=ghp_0123456789{zw}abcdefghijABCDEF and topsecret{zw}value-123");
            let out = r.redact(&split);
            assert!(
                !out.contains("abcdefghij") && !out.contains("value-123"),
                "{out:?}"
            );
        }
        // Text without secrets keeps its invisible characters.
        assert_eq!(r.redact("a\u{200B}b"), "a\u{200B}b");
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
