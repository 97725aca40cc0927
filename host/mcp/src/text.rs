//! Library error text made readable for a person: a leaf every module may use (the transport,
//! OAuth and error classification alike) without importing each other.

/// Longest message kept.
const MAX_MESSAGE_CHARS: usize = 300;

/// One readable line from a library's error text: Rust type names, rmcp's
/// `Transport [...] error:` prefixes and HTML bodies go; whitespace collapses; long text is cut.
pub(crate) fn clean(text: &str) -> String {
    let mut s = text.to_string();
    // `Transport [WorkerTransport<…>] error: ` → ``
    while let Some(start) = s.find("Transport [") {
        let Some(close) = s[start..].find("] error: ") else {
            break;
        };
        s.replace_range(start..start + close + "] error: ".len(), "");
    }
    // An HTML page as a message: keep its title.
    let lower = s.to_ascii_lowercase();
    if let Some(start) = lower.find("<!doctype").or_else(|| lower.find("<html")) {
        let title = lower.find("<title>").and_then(|t| {
            let from = t + "<title>".len();
            lower[from..]
                .find("</title>")
                .map(|end| s[from..from + end].trim().to_string())
        });
        let replacement = match title {
            Some(t) if !t.is_empty() => format!("(an HTML page: \"{t}\")"),
            _ => "(an HTML page)".to_string(),
        };
        s.replace_range(start.., &replacement);
    }
    // Generic Rust paths with type parameters (`Foo<bar::Baz<…>>`): drop the parameters.
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' if out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_') => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    let out = out.trim();
    if out.chars().count() > MAX_MESSAGE_CHARS {
        let cut: String = out.chars().take(MAX_MESSAGE_CHARS).collect();
        format!("{cut}…")
    } else {
        out.to_string()
    }
}
