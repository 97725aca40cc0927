//! The `allowed-tools` list syntax that custom commands, Agent Skills and plugin agents share
//! (Claude Code's frontmatter, the Agent Skills specification): one place, since the host
//! (tern-config) and the skills server (a tool server) both read it.

/// Splits an `allowed-tools` string: names separated by commas (Claude Code) or spaces (the
/// Agent Skills specification), where a comma or space inside parentheses belongs to the entry
/// (`Bash(git log:*)`). Empty entries are dropped.
pub fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c.is_whitespace() || c == ',') => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn commas_and_spaces_separate_except_inside_parentheses() {
        assert_eq!(
            split("Bash(git add:*), Bash(git status:*) Read,,  Grep"),
            ["Bash(git add:*)", "Bash(git status:*)", "Read", "Grep"]
        );
        assert_eq!(split("Bash(echo a, b c)"), ["Bash(echo a, b c)"]);
        assert!(split("  , ").is_empty());
    }
}
