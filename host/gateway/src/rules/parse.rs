//! The rule language (issue 4, item 2): `TOOL_GLOB` or `TOOL_GLOB(ARG: PATTERN, ...)`; a bare
//! `TOOL_GLOB(PATTERN)` applies to the tool's command argument, or, for `domain:` patterns, to its
//! URL argument.
//!
//! Config already checked the outer shape at load (so typos carry a `file:line`); this module
//! splits the inside into argument patterns.

/// Which argument of a call a pattern looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgTarget {
    /// The tool's command argument (`command_arg` in config; `shell__run.command` by default).
    Command,
    /// The tool's URL argument (`url`, `uri`): a bare `domain:` pattern.
    Url,
    /// An argument by name.
    Named(String),
}

/// What a pattern says, before it is compiled against the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawPattern {
    /// `domain:HOST` or `domain:*.HOST`: the URL's host, at a dot boundary.
    Domain(String),
    /// A glob: over a command's words, a path, or a plain string, depending on the argument.
    Glob(String),
}

/// One `ARG: PATTERN`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawArg {
    pub target: ArgTarget,
    pub pattern: RawPattern,
}

/// A rule split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRule {
    /// The glob over the model-facing tool name (`server__tool`).
    pub tool_glob: String,
    /// Every argument pattern must match (AND). Empty: the rule covers every call of the tool.
    pub args: Vec<RawArg>,
}

/// Why a rule could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {rule:?}: {message}")]
pub struct RuleParseError {
    pub rule: String,
    pub message: String,
}

/// Parses one rule's text.
pub fn parse_rule(text: &str) -> Result<RawRule, RuleParseError> {
    let err = |message: &str| RuleParseError {
        rule: text.to_owned(),
        message: message.to_owned(),
    };
    tern_config::check_rule_shape(text).map_err(|m| err(&m))?;
    let Some(open) = text.find('(') else {
        return Ok(RawRule {
            tool_glob: text.to_owned(),
            args: Vec::new(),
        });
    };
    let tool_glob = text[..open].to_owned();
    // The shape check guarantees the last character is the matching `)`.
    let inner = text[open + 1..text.len() - 1].trim();
    let args = if let Some(host) = inner.strip_prefix("domain:") {
        vec![RawArg {
            target: ArgTarget::Url,
            pattern: RawPattern::Domain(host.trim().to_owned()),
        }]
    } else if keyed_at(inner).is_some() {
        split_keyed(inner)
            .into_iter()
            .map(|part| {
                let (name, value) = keyed_at(part).ok_or_else(|| err("expected ARG: PATTERN"))?;
                let value = unquote(value.trim());
                if value.is_empty() {
                    return Err(err(&format!("argument `{name}` has an empty pattern")));
                }
                Ok(RawArg {
                    target: ArgTarget::Named(name.to_owned()),
                    pattern: pattern(value),
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![RawArg {
            target: ArgTarget::Command,
            pattern: RawPattern::Glob(inner.to_owned()),
        }]
    };
    Ok(RawRule { tool_glob, args })
}

fn pattern(value: &str) -> RawPattern {
    match value.strip_prefix("domain:") {
        Some(host) => RawPattern::Domain(host.trim().to_owned()),
        None => RawPattern::Glob(value.to_owned()),
    }
}

/// `ident:` at the start of `s` (after spaces): the argument name and the text after the colon.
fn keyed_at(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(s.len(), |(i, _)| i);
    let (name, rest) = s.split_at(end);
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest = rest.trim_start().strip_prefix(':')?;
    first_ok.then_some((name, rest))
}

/// Splits `a: x, b: y` at top-level commas that start another `ident:` (a comma inside a
/// pattern, like `cmd: echo a,b`, stays).
fn split_keyed(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ',') if keyed_at(&inner[i + 1..]).is_some() => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            (None, _) => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, glob: &str) -> RawArg {
        RawArg {
            target: ArgTarget::Named(name.into()),
            pattern: RawPattern::Glob(glob.into()),
        }
    }

    #[test]
    fn bare_tool_globs() {
        let r = parse_rule("time__*").unwrap();
        assert_eq!(r.tool_glob, "time__*");
        assert!(r.args.is_empty());
    }

    #[test]
    fn bare_pattern_is_the_command() {
        let r = parse_rule("shell__run(cargo test *)").unwrap();
        assert_eq!(
            r.args,
            [RawArg {
                target: ArgTarget::Command,
                pattern: RawPattern::Glob("cargo test *".into())
            }]
        );
        // A colon later in a command does not make it keyed.
        let r = parse_rule("shell__run(echo a: b)").unwrap();
        assert_eq!(r.args[0].target, ArgTarget::Command);
    }

    #[test]
    fn keyed_patterns_and_domains() {
        let r = parse_rule("web__fetch(url: domain:*.example.com)").unwrap();
        assert_eq!(
            r.args,
            [RawArg {
                target: ArgTarget::Named("url".into()),
                pattern: RawPattern::Domain("*.example.com".into())
            }]
        );
        let r = parse_rule("fs__*(path: **/.env)").unwrap();
        assert_eq!(r.args, [named("path", "**/.env")]);
        let r = parse_rule("x__y(path: \"a b\", mode: a,b, n: 3)").unwrap();
        assert_eq!(
            r.args,
            [named("path", "a b"), named("mode", "a,b"), named("n", "3")]
        );
        let r = parse_rule("web__fetch(domain:docs.rs)").unwrap();
        assert_eq!(r.args[0].target, ArgTarget::Url);
    }

    #[test]
    fn malformed_rules_are_errors() {
        assert!(parse_rule("shell__run(").is_err());
        assert!(parse_rule("x__y(path: )").is_err());
    }
}
