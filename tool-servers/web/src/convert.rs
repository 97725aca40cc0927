//! From a response body to text a model can read.

/// What a body is, judged from its `Content-Type` (and, when that is missing,
/// from its first bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Converted to markdown.
    Html,
    /// Returned as is.
    Text,
    /// Refused: bytes a model cannot use.
    Binary,
}

/// Text media types outside `text/*`.
const TEXTUAL_APPLICATION_TYPES: &[&str] = &[
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "application/x-ndjson",
    "application/csv",
];

/// The media type without parameters, lower-cased (`text/html`).
pub fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The `charset` parameter of a content type, if any.
fn charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"'))
    })
}

/// Classifies a body. `head` is its first bytes (for sniffing when the server
/// sent no content type).
pub fn classify(content_type: Option<&str>, head: &[u8]) -> Kind {
    let Some(ct) = content_type.map(essence).filter(|e| !e.is_empty()) else {
        return sniff(head);
    };
    if ct == "text/html" || ct == "application/xhtml+xml" {
        Kind::Html
    } else if ct.starts_with("text/")
        || TEXTUAL_APPLICATION_TYPES.contains(&ct.as_str())
        || ct.ends_with("+json")
        || ct.ends_with("+xml")
    {
        Kind::Text
    } else {
        Kind::Binary
    }
}

fn sniff(head: &[u8]) -> Kind {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let lower: Vec<u8> = head[start..]
        .iter()
        .take(64)
        .map(u8::to_ascii_lowercase)
        .collect();
    if lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html") {
        return Kind::Html;
    }
    let sample = &head[..head.len().min(4096)];
    let valid_utf8 = match std::str::from_utf8(sample) {
        Ok(_) => true,
        // A sample cut inside a character is still text.
        Err(e) => e.error_len().is_none(),
    };
    if valid_utf8 && !sample.contains(&0) {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// Decodes a body with the charset its content type names (UTF-8 otherwise).
/// Undecodable bytes become U+FFFD rather than failing the fetch.
pub fn decode(body: &[u8], content_type: Option<&str>) -> String {
    let encoding = content_type
        .and_then(charset)
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    // `decode` also honours a byte-order mark, as browsers do.
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// Converts HTML to markdown: headings, links, lists, tables and code survive;
/// scripts, styles and other non-content elements are dropped.
pub fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
            "embed", "form", "button", "input", "select", "textarea",
        ])
        .build();
    match converter.convert(html) {
        Ok(markdown) => collapse_blank_lines(&markdown),
        Err(e) => {
            // html5ever recovers from any malformed HTML; this is an I/O error
            // of the in-memory sink, which should not happen. Fall back to the raw text.
            tracing::warn!("HTML conversion failed: {e}");
            html.to_string()
        }
    }
}

/// At most one empty line in a row: layout-heavy pages otherwise spend much of
/// the character budget on whitespace.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

/// The first `max_chars` characters of `text`, and whether anything was cut.
pub fn truncate_chars(text: &str, max_chars: usize) -> (&str, bool) {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => (&text[..cut], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_classified() {
        assert_eq!(classify(Some("text/html; charset=utf-8"), b""), Kind::Html);
        assert_eq!(classify(Some("application/xhtml+xml"), b""), Kind::Html);
        assert_eq!(classify(Some("text/plain"), b""), Kind::Text);
        assert_eq!(classify(Some("application/json"), b""), Kind::Text);
        assert_eq!(classify(Some("application/ld+json"), b""), Kind::Text);
        assert_eq!(classify(Some("image/png"), b"<html>"), Kind::Binary);
        assert_eq!(
            classify(Some("application/octet-stream"), b"abc"),
            Kind::Binary
        );
        assert_eq!(classify(Some("application/pdf"), b""), Kind::Binary);
    }

    #[test]
    fn missing_content_types_are_sniffed() {
        assert_eq!(classify(None, b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(classify(Some(""), b"plain words\n"), Kind::Text);
        assert_eq!(classify(None, b"\x89PNG\r\n\x1a\n\0\0"), Kind::Binary);
        assert_eq!(
            classify(None, "caf\u{e9}".as_bytes().split_at(4).0),
            Kind::Text
        );
    }

    #[test]
    fn charsets_are_honoured() {
        assert_eq!(
            decode(b"caf\xe9", Some("text/plain; charset=ISO-8859-1")),
            "café"
        );
        assert_eq!(decode("café".as_bytes(), Some("text/plain")), "café");
        assert_eq!(decode(b"a\xffb", None), "a\u{FFFD}b");
    }

    #[test]
    fn html_becomes_markdown_without_scripts() {
        let md = html_to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body>\
             <h1>Title</h1><script>alert(1)</script><p>See <a href=\"https://x.test/doc\">the docs</a>.</p>\
             <ul><li>one</li><li>two</li></ul></body></html>",
        );
        assert!(md.starts_with("# Title"), "{md}");
        assert!(md.contains("[the docs](https://x.test/doc)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("alert") && !md.contains("p{}"), "{md}");
        assert!(!md.contains("\n\n\n"), "{md:?}");
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("héllo", 5), ("héllo", false));
        assert_eq!(truncate_chars("", 0), ("", false));
    }
}
