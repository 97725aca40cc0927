//! `WWW-Authenticate: Bearer …` challenges (RFC 6750 §3, RFC 9728 §5.1): what a server that
//! refuses a request says about how to get in.

use std::collections::BTreeMap;

/// The parameters of the `Bearer` challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: where the server's protected resource metadata is (RFC 9728).
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes this request needs (space separated in the header).
    pub(crate) scope: Option<Vec<String>>,
    /// `error`: `invalid_token`, `insufficient_scope`, …
    pub(crate) error: Option<String>,
    /// `error_description`, for messages.
    pub(crate) error_description: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge of `header`; a header without one gives an empty challenge
    /// (discovery then falls back to the well-known locations).
    pub(crate) fn parse(header: &str) -> Self {
        let params = bearer_params(header);
        let get = |k: &str| params.get(k).cloned().filter(|v| !v.is_empty());
        Challenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope").map(|s| split_scopes(&s)),
            error: get("error"),
            error_description: get("error_description"),
        }
    }

    /// Whether the server says the token lacks scope (`error="insufficient_scope"`).
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Scopes from a space-separated `scope` value, without empties or repeats, in order.
pub(crate) fn split_scopes(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in value.split_ascii_whitespace() {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// The auth-params of the first `Bearer` challenge (scheme matched case-insensitively), keys
/// lowercased. A header may hold several challenges (`Bearer …, DPoP …`): a token that is not
/// followed by `=` starts the next one.
fn bearer_params(header: &str) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let mut rest = header.trim_start();
    let mut in_bearer = false;
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..end];
        let after = rest[end..].trim_start_matches([' ', '\t']);
        if token.is_empty() {
            break;
        }
        if let Some(value_part) = after.strip_prefix('=') {
            let value_part = value_part.trim_start_matches([' ', '\t']);
            let (value, remaining) = read_value(value_part);
            if in_bearer {
                params.entry(token.to_ascii_lowercase()).or_insert(value);
            }
            rest = remaining;
        } else {
            // A new challenge's scheme.
            if in_bearer {
                break;
            }
            in_bearer = token.eq_ignore_ascii_case("bearer");
            rest = after;
        }
    }
    params
}

/// A token or a quoted-string (with `\` escapes), and what follows it.
fn read_value(s: &str) -> (String, &str) {
    if let Some(quoted) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        out.push(escaped);
                    }
                }
                '"' => return (out, &quoted[i + 1..]),
                c => out.push(c),
            }
        }
        (out, "")
    } else {
        let end = s
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(s.len());
        (s[..end].to_string(), &s[end..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parameters_the_spec_uses() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="needs \"write\"""#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            c.scope,
            Some(vec!["mcp:basic".to_string(), "mcp:write".to_string()])
        );
        assert!(c.insufficient_scope());
        assert_eq!(c.error_description.as_deref(), Some("needs \"write\""));
    }

    #[test]
    fn only_the_bearer_challenge_counts_and_tokens_need_no_quotes() {
        let c = Challenge::parse(
            r#"DPoP algs="ES256", Bearer realm=mcp, error=invalid_token, Basic scope="x""#,
        );
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope, None);
        assert_eq!(Challenge::parse("Basic realm=\"x\""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
    }
}
