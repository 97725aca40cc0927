//! Permission rules as config holds them: the text, unparsed, and where it was written.
//!
//! The gateway parses and evaluates rules (issue 4, item 2). Config only checks the outer shape —
//! `TOOL_GLOB` or `TOOL_GLOB(...)` — so that a typo is reported at its `file:line` when config loads rather
//! than silently never matching, and keeps every rule's origin because the audit log names the rule that
//! decided a call and "a deny at any config layer wins".

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which permission list a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleList {
    /// `permissions.allow`
    Allow,
    /// `permissions.ask`
    Ask,
    /// `permissions.deny`
    Deny,
}

impl RuleList {
    /// The key under `[permissions]`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    /// The command-line flag that adds to this list (`--allow`, `--ask`, `--deny`).
    pub fn flag(self) -> &'static str {
        match self {
            Self::Allow => "--allow",
            Self::Ask => "--ask",
            Self::Deny => "--deny",
        }
    }
}

impl fmt::Display for RuleList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// One permission rule and where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleSource {
    /// The rule text exactly as written, e.g. `shell__run(cargo test *)`.
    pub rule: String,
    /// The config file, or `-c` / `--allow` / `--ask` / `--deny` /
    /// [`DEFAULTS_SOURCE`](crate::DEFAULTS_SOURCE) for rules that did not come from a file.
    pub file: PathBuf,
    /// 1-based line in `file`; for a command-line source, the position of the argument.
    pub line: usize,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}:{})", self.rule, self.file.display(), self.line)
    }
}

/// Checks a rule's outer shape: `TOOL_GLOB` or `TOOL_GLOB(ARGS)` with balanced parentheses.
///
/// `TOOL_GLOB` may use the characters of sanitized tool names (`A-Z a-z 0-9 _ -`) and the glob
/// characters `* ? [ ] !`. Parentheses inside quotes (`"…"`, `'…'`) do not count, so
/// `shell__run(echo ")")` is fine. Returns what is wrong, for the caller to put a location on.
pub fn check_rule_shape(rule: &str) -> Result<(), String> {
    let (glob, rest) = match rule.find('(') {
        Some(i) => (&rule[..i], Some(&rule[i..])),
        None => (rule, None),
    };
    if glob.is_empty() {
        return Err(format!(
            "rule {rule:?} has no tool name before its arguments"
        ));
    }
    if let Some(bad) = glob
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-*?[]!".contains(*c)))
    {
        return Err(format!(
            "rule {rule:?}: {bad:?} cannot appear in a tool name pattern; \
             expected TOOL_GLOB or TOOL_GLOB(ARGS), e.g. \"shell__run(cargo test *)\""
        ));
    }
    let Some(args) = rest else {
        return Ok(());
    };
    check_parens(rule, args)
}

/// `args` starts with `(`; it must close exactly at its last character.
fn check_parens(rule: &str, args: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let last = args.len() - 1;
    for (i, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth = depth.checked_sub(1).ok_or_else(|| unbalanced(rule))?;
                if depth == 0 && i != last {
                    if args[i + 1..].contains(')') {
                        return Err(unbalanced(rule));
                    }
                    return Err(format!(
                        "rule {rule:?} has text after its closing parenthesis"
                    ));
                }
            }
            (None, _) => {}
        }
    }
    if quote.is_some() {
        return Err(format!("rule {rule:?} has an unterminated quote"));
    }
    if depth != 0 {
        return Err(unbalanced(rule));
    }
    if args[1..last].trim().is_empty() {
        return Err(format!(
            "rule {rule:?} has empty parentheses; write the tool name alone to match every call"
        ));
    }
    Ok(())
}

fn unbalanced(rule: &str) -> String {
    format!("rule {rule:?} has unbalanced parentheses")
}

#[cfg(test)]
mod tests {
    use super::check_rule_shape;

    #[test]
    fn accepts_the_documented_shapes() {
        for rule in [
            "fs__read_file",
            "time__*",
            "*",
            "shell__run(cargo test *)",
            "web__fetch(url: domain:*.example.com)",
            "fs__*(path: **/.env)",
            "*(path: ~/.ssh/**)",
            "shell__run(echo \")\")",
            "shell__run(f (x))",
        ] {
            assert_eq!(check_rule_shape(rule), Ok(()), "{rule}");
        }
    }

    #[test]
    fn rejects_malformed_rules() {
        for (rule, why) in [
            ("", "no tool name"),
            ("(x)", "no tool name"),
            ("shell__run(cargo test", "unbalanced"),
            ("shell__run(a))", "unbalanced"),
            ("shell__run(a) b", "after its closing"),
            ("shell run", "cannot appear"),
            ("shell__run()", "empty parentheses"),
            ("shell__run(echo \")", "unterminated quote"),
        ] {
            let err = check_rule_shape(rule).unwrap_err();
            assert!(err.contains(why), "{rule}: {err}");
        }
    }
}
