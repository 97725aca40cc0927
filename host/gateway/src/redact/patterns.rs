//! The shapes of secrets tern was never told about (F8): well-known key prefixes, JWTs, PEM
//! private-key bodies, and the values of `password=`/`secret:`/`…_token=` assignments.
//!
//! Everything here works on text that may be JSON-encoded (an events line holds a tool's output
//! as a JSON string), so a quote may arrive as `\"` and a newline as `\n`.

use super::REDACTED;

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

const fn shape(prefix: &'static str, min_tail: usize) -> Shape {
    Shape {
        prefix,
        min_tail,
        max_tail: usize::MAX,
        tail_char: token_char,
    }
}

/// Longest first where prefixes overlap: `sk-ant-` must win over `sk-`.
const SHAPES: &[Shape] = &[
    shape("sk-ant-", 8),
    shape("sk-", 20),
    // GitHub: classic, OAuth, user-to-server, server-to-server, refresh, fine-grained.
    shape("github_pat_", 20),
    shape("ghp_", 20),
    shape("gho_", 20),
    shape("ghu_", 20),
    shape("ghs_", 20),
    shape("ghr_", 20),
    // GitLab personal, deploy and runner tokens.
    shape("glpat-", 20),
    shape("gldt-", 20),
    shape("glrt-", 20),
    // Slack bot, user, app, refresh, legacy and config tokens.
    shape("xoxb-", 10),
    shape("xoxp-", 10),
    shape("xoxa-", 10),
    shape("xoxr-", 10),
    shape("xoxs-", 10),
    shape("xoxe-", 10),
    shape("xapp-", 10),
    // Google API keys: `AIza` and 35 more.
    shape("AIza", 30),
    // Stripe secret and restricted keys; npm and PyPI tokens.
    shape("sk_live_", 16),
    shape("rk_live_", 16),
    shape("npm_", 30),
    shape("pypi-", 30),
    // AWS access key ids, long-term and temporary.
    Shape {
        prefix: "AKIA",
        min_tail: 16,
        max_tail: 16,
        tail_char: aws_char,
    },
    Shape {
        prefix: "ASIA",
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

/// Key-shaped spans and JWTs replaced.
pub fn shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // The two characters before `rest`, for the word-boundary test.
    let mut prev: (Option<char>, Option<char>) = (None, None);
    'scan: while let Some(c) = rest.chars().next() {
        if at_boundary(prev) {
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
                // `AKIA` ids end exactly: a longer run is some other word.
                if tail_chars >= shape.min_tail && tail_chars <= shape.max_tail {
                    out.push_str(shape.prefix.trim_end());
                    if shape.prefix.ends_with(' ') {
                        out.push(' ');
                    }
                    out.push_str(REDACTED);
                    rest = &after[tail..];
                    prev = (Some(']'), Some('x'));
                    continue 'scan;
                }
            }
            if let Some(len) = jwt_len(rest) {
                out.push_str(REDACTED);
                rest = &rest[len..];
                prev = (Some(']'), Some('x'));
                continue 'scan;
            }
        }
        out.push(c);
        prev = (prev.1, Some(c));
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A key starts at a word boundary — `risk-…` holds `sk-` but is no key — and in JSON-encoded
/// text a line or tab escape (`\n`, `\t`, `\r`) is a boundary too.
fn at_boundary((before, prev): (Option<char>, Option<char>)) -> bool {
    match prev {
        None => true,
        Some(p) if !p.is_ascii_alphanumeric() => true,
        Some('n' | 't' | 'r') => before == Some('\\'),
        Some(_) => false,
    }
}

/// The length of a JWT at the start of `s`: `eyJ…` (a base64url JSON header), a payload and a
/// signature (possibly empty, for `alg: none`), dot-separated.
fn jwt_len(s: &str) -> Option<usize> {
    if !s.starts_with("eyJ") {
        return None;
    }
    let b64 = |t: &str| {
        t.bytes()
            .take_while(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            .count()
    };
    let header = b64(s);
    let after_header = s[header..].strip_prefix('.')?;
    let payload = b64(after_header);
    let after_payload = after_header[payload..].strip_prefix('.')?;
    let signature = b64(after_payload);
    (header >= 10 && payload >= 4).then_some(header + 1 + payload + 1 + signature)
}

/// PEM private-key bodies replaced: everything between `-----BEGIN … PRIVATE KEY-----` and its
/// `-----END …-----` line (to the end of the text when the end is cut off). The markers stay, so
/// a reader still sees that a key was there.
pub fn pem_bodies(text: &str) -> String {
    const BEGIN: &str = "-----BEGIN ";
    if !text.contains(BEGIN) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after_begin = &rest[start + BEGIN.len()..];
        let Some(label_end) = after_begin.find("-----") else {
            break;
        };
        let label = &after_begin[..label_end];
        let header_end = start + BEGIN.len() + label_end + "-----".len();
        out.push_str(&rest[..header_end]);
        rest = &rest[header_end..];
        if !label.contains("PRIVATE KEY") || label.len() > 40 {
            continue;
        }
        out.push_str(REDACTED);
        match rest.find("-----END ") {
            Some(end) => rest = &rest[end..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Names whose value is a secret: containing one of these…
const SECRET_NAME_PARTS: &[&str] = &["password", "passwd", "passphrase", "secret"];
/// …or ending in one of these (`GITHUB_TOKEN`, `access_token`, `x-api-key`, but not
/// `max_tokens`).
const SECRET_NAME_ENDS: &[&str] = &[
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "private_key",
    "auth_key",
];

/// Values that are never secrets, though written after a secret's name.
const NOT_VALUES: &[&str] = &["true", "false", "null", "none", "None", "nil", "undefined"];

/// The values of `NAME=VALUE`, `NAME: VALUE`, `"NAME": "VALUE"` (also JSON-escaped) where the
/// name says it holds a secret, replaced: `password=hunter2` → `password=[REDACTED]`.
pub fn assignments(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !SECRET_NAME_PARTS
        .iter()
        .chain(SECRET_NAME_ENDS)
        .any(|n| lower.contains(n))
    {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.';
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !name_byte(bytes[i]) || (i > 0 && name_byte(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let name_end = i + bytes[i..].iter().take_while(|&&b| name_byte(b)).count();
        let name = &lower[i..name_end];
        let secret_name = SECRET_NAME_PARTS.iter().any(|p| name.contains(p))
            || SECRET_NAME_ENDS.iter().any(|e| name.ends_with(e));
        if secret_name && let Some((start, end)) = assigned_value(bytes, name_end) {
            out.push_str(&text[copied..start]);
            out.push_str(REDACTED);
            copied = end;
            i = end;
            continue;
        }
        i = name_end;
    }
    out.push_str(&text[copied..]);
    out
}

/// After a name ending at `at`: an optional closing quote, a `=`, `:` or `:=` (spaces around),
/// an optional opening quote, and a value of three or more characters. Returns the value's span.
fn assigned_value(b: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let skip_quote = |at: &mut usize| {
        if b.get(*at) == Some(&b'\\') && matches!(b.get(*at + 1), Some(b'"' | b'\'')) {
            *at += 2;
        } else if matches!(b.get(*at), Some(b'"' | b'\'')) {
            *at += 1;
        }
    };
    let skip_spaces = |at: &mut usize| {
        while matches!(b.get(*at), Some(b' ' | b'\t')) {
            *at += 1;
        }
    };
    skip_quote(&mut at);
    skip_spaces(&mut at);
    match (b.get(at), b.get(at + 1)) {
        (Some(b':'), Some(b'=')) => at += 2,
        (Some(b'='), Some(b'=')) => return None,
        (Some(b'=' | b':'), _) => at += 1,
        _ => return None,
    }
    skip_spaces(&mut at);
    skip_quote(&mut at);
    let start = at;
    let end_char = |c: u8| c.is_ascii_whitespace() || b"\"'\\`,;&)]}<>".contains(&c);
    let len = b[start..].iter().take_while(|&&c| !end_char(c)).count();
    let value = std::str::from_utf8(&b[start..start + len]).ok()?;
    (len >= 3 && !NOT_VALUES.contains(&value)).then_some((start, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_after_json_escapes_are_at_a_boundary() {
        let line = "{\"goal\":\"keys:\\nghp_0123456789abcdefghijKLMN\\tAKIAIOSFODNN7EXAMPLE\"}";
        let out = shapes(line);
        assert!(
            !out.contains("0123456789abcdefghij") && !out.contains("IOSFODNN7"),
            "{out}"
        );
        assert_eq!(
            shapes("an ghp_0123456789abcdefghijKLMN"),
            "an ghp_[REDACTED]"
        );
        assert_eq!(shapes("xghp_0123456789abcdefghijKLMN").len(), 29);
    }

    #[test]
    fn jwts_are_found_whole() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU";
        assert_eq!(shapes(&format!("auth {jwt} end")), "auth [REDACTED] end");
        assert_eq!(shapes("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."), REDACTED);
        assert_eq!(shapes("eyJust a word. Not. one"), "eyJust a word. Not. one");
    }

    #[test]
    fn pem_bodies_go_markers_stay() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nq83nd\n-----END RSA PRIVATE KEY-----\nafter";
        let out = pem_bodies(pem);
        assert!(!out.contains("MIIEpAIBAAKCAQEA"), "{out}");
        assert!(out.starts_with("-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END"));
        assert!(out.ends_with("after"));
        // JSON-escaped and cut off.
        let cut = "x \"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk";
        assert!(!pem_bodies(cut).contains("b3BlbnNzaC1rZXk"));
        // Certificates and public keys are not secrets.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(pem_bodies(cert), cert);
    }

    #[test]
    fn secret_assignments_lose_their_values() {
        for (input, gone) in [
            ("password=hunter2", "hunter2"),
            ("DB_PASSWORD = 'hunter2'", "hunter2"),
            ("passwd: s3cr3tvalue", "s3cr3tvalue"),
            ("client_secret=abc123xyz&x=1", "abc123xyz"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "wJalrXUtnFEMI",
            ),
            (
                "{\\\"SecretAccessKey\\\":\\\"wJalrXUtnFEMI/K7MDENG\\\"}",
                "wJalrXUtnFEMI",
            ),
            ("GITHUB_TOKEN=abcdef123456", "abcdef123456"),
            ("pwd := \"x\"; password := \"gopher42\"", "gopher42"),
            ("https://u:p@h/?api_key=zzz999&q=1", "zzz999"),
        ] {
            let out = assignments(input);
            assert!(!out.contains(gone), "{input} -> {out}");
            assert!(out.contains(REDACTED), "{input} -> {out}");
        }
        for input in [
            "\"max_tokens\":4096,\"input_tokens\":12",
            "password == expected",
            "secret: true",
            "a password is needed",
            "PWD=/home/u",
        ] {
            assert_eq!(assignments(input), input);
        }
    }
}
