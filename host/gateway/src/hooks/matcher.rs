//! A hook's `matcher`: which tool calls it sees. Written like a rule's tool pattern (`*` globs
//! over `server__tool`), with Claude Code's `A|B` alternatives, its `.*` and its own tool names,
//! so a matcher copied from `.claude/settings.json` keeps meaning what it meant there.

use crate::wildcard::wildcard;

/// A compiled matcher: tern-name globs, any of which may match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    globs: Vec<String>,
}

impl Matcher {
    /// Compiles `pattern`; `None` (or empty, or `*`) matches every tool.
    pub fn new(pattern: Option<&str>) -> Self {
        let Some(pattern) = pattern.map(str::trim).filter(|p| !p.is_empty()) else {
            return Self {
                globs: vec!["*".into()],
            };
        };
        let mut globs = Vec::new();
        for alt in pattern.split('|').map(str::trim).filter(|a| !a.is_empty()) {
            // Claude Code matchers are regular expressions; the ones people write are names,
            // alternatives and `.*`, which say the same as a glob's `*`.
            let alt = alt.trim_start_matches('^').trim_end_matches('$');
            let alt = alt.replace(".*", "*");
            if let Some(names) = tern_config::claude_tools::tern_names(&alt) {
                globs.extend(names.iter().map(|n| (*n).to_string()));
            } else if let Some(rest) = alt.strip_prefix("mcp__") {
                // `mcp__server__tool` is tern's `server__tool`.
                globs.push(rest.to_string());
            } else {
                globs.push(alt);
            }
        }
        Self { globs }
    }

    /// Whether the call of `tool` (tern's `server__tool`) is one this hook sees.
    pub fn is_match(&self, tool: &str) -> bool {
        self.globs.iter().any(|g| wildcard(g, tool))
    }
}

#[cfg(test)]
mod tests {
    use super::Matcher;

    #[test]
    fn claude_code_names_and_tern_globs_both_match() {
        let m = Matcher::new(Some("Bash"));
        assert!(m.is_match("shell__run"));
        assert!(!m.is_match("fs__read_file"));
        let m = Matcher::new(Some("Edit|Write"));
        assert!(m.is_match("fs__edit_file") && m.is_match("fs__write_file"));
        assert!(!m.is_match("fs__read_file"));
        let m = Matcher::new(Some("mcp__github__.*"));
        assert!(m.is_match("github__create_issue"));
        assert!(!m.is_match("gitlab__create_issue"));
        let m = Matcher::new(Some("fs__*"));
        assert!(m.is_match("fs__grep") && !m.is_match("shell__run"));
        assert!(Matcher::new(None).is_match("anything__at_all"));
        assert!(Matcher::new(Some("*")).is_match("x__y"));
        assert!(Matcher::new(Some("")).is_match("x__y"));
    }
}
