//! Claude Code's tool names and permission-rule syntax, in tern's terms — the one table every
//! place that reads Claude Code files uses: hook matchers (`tern-gateway`), custom commands'
//! and skills' `allowed-tools` (turn-scoped rules, skill narrowing) and plugin agents' `tools`
//! (profiles).
//!
//! Claude Code's rules are `Tool` or `Tool(specifier)` (<https://code.claude.com/docs/en/iam>,
//! "Permission rules"; <https://code.claude.com/docs/en/slash-commands>, "Frontmatter"):
//! `Bash(git add:*)` is a command prefix (`:*` = any further words), `Bash(npm test)` one
//! command, `Read(./src/**)`/`Edit(docs/**)` gitignore-style paths (`//x` absolute, `~/x` home,
//! `/x` from the project root, else from the working directory), `WebFetch(domain:x)` a host,
//! `mcp__server` / `mcp__server__tool` an MCP server's tools.

/// Claude Code's built-in tools and tern's counterparts: the obvious ones only.
pub const CLAUDE_TOOLS: &[(&str, &[&str])] = &[
    ("Bash", &["shell__run"]),
    ("Read", &["fs__read_file"]),
    ("Write", &["fs__write_file"]),
    ("Edit", &["fs__edit_file"]),
    ("MultiEdit", &["fs__edit_file"]),
    ("Grep", &["fs__grep"]),
    ("Glob", &["fs__glob"]),
    ("LS", &["fs__list_dir"]),
    ("WebFetch", &["web__fetch"]),
    ("TodoWrite", &["todo__write"]),
    ("Task", &["agent__run"]),
    ("Agent", &["agent__run"]),
];

/// Claude Code tools tern has no counterpart for: an entry naming one is skipped with a note
/// (skipping an allowance can only make tern ask more, never less).
pub const CLAUDE_ONLY_TOOLS: &[&str] = &[
    "WebSearch",
    "NotebookEdit",
    "NotebookRead",
    "BashOutput",
    "KillShell",
    "KillBash",
    "SlashCommand",
    "Skill",
    "ExitPlanMode",
    "AskUserQuestion",
];

/// tern's tools for Claude Code's `name`, when it has an obvious counterpart.
pub fn tern_names(name: &str) -> Option<&'static [&'static str]> {
    CLAUDE_TOOLS
        .iter()
        .find(|(claude, _)| *claude == name)
        .map(|(_, tern)| *tern)
}

/// An `allowed-tools` / `tools` entry read into tern's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Converted {
    /// tern permission rules (`shell__run(git add *)`, `fs__read_file`, `github__*`), each
    /// of a shape [`crate::check_rule_shape`] accepts.
    Rules(Vec<String>),
    /// A Claude Code tool tern does not have: nothing to allow; the text says so.
    Skipped(String),
}

/// Splits an `allowed-tools` string (see [`tern_protocol::allowed_tools::split`]).
pub fn split_list(text: &str) -> Vec<String> {
    tern_protocol::allowed_tools::split(text)
}

/// One entry as tern rules. `Err` says what is wrong with it (the caller adds file and line).
pub fn to_rules(entry: &str) -> Result<Converted, String> {
    let entry = entry.trim();
    let (name, spec) = match entry.find('(') {
        Some(open) => {
            let Some(inner) = entry[open + 1..].strip_suffix(')') else {
                return Err(format!("`{entry}`: unbalanced parentheses"));
            };
            (&entry[..open], Some(inner.trim()))
        }
        None => (entry, None),
    };
    if name.is_empty() {
        return Err(format!("`{entry}`: no tool name"));
    }
    if let Some(rest) = name.strip_prefix("mcp__") {
        // `mcp__server` is every tool of the server; `mcp__server__tool` one of them.
        let rule = match rest.split_once("__") {
            Some((server, "*")) | Some((server, "")) => format!("{server}__*"),
            Some((server, tool)) => format!("{server}__{tool}"),
            None => format!("{rest}__*"),
        };
        return checked(vec![with_spec(&rule, spec)?]);
    }
    if let Some(tools) = tern_names(name) {
        let rules = tools
            .iter()
            .map(|t| with_claude_spec(name, t, spec))
            .collect::<Result<Vec<_>, _>>()?;
        return checked(rules);
    }
    if CLAUDE_ONLY_TOOLS.contains(&name) {
        return Ok(Converted::Skipped(format!(
            "`{entry}`: tern has no counterpart of Claude Code's {name}; skipped"
        )));
    }
    if name.contains("__") {
        // Already tern's `server__tool` (or a glob over them), with tern's own arguments.
        return checked(vec![entry.to_string()]);
    }
    Err(format!(
        "`{entry}`: unknown tool `{name}`\nhint: use Claude Code's names ({}), \
         `mcp__SERVER__TOOL`, or tern's `server__tool`",
        CLAUDE_TOOLS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn checked(rules: Vec<String>) -> Result<Converted, String> {
    for rule in &rules {
        crate::check_rule_shape(rule).map_err(|e| format!("`{rule}`: {e}"))?;
    }
    Ok(Converted::Rules(rules))
}

/// A tern rule with an MCP tool's specifier (taken as tern's own argument syntax).
fn with_spec(rule: &str, spec: Option<&str>) -> Result<String, String> {
    Ok(match spec {
        None | Some("") | Some("*") => rule.to_string(),
        Some(spec) => format!("{rule}({spec})"),
    })
}

/// `name(spec)` of a built-in Claude Code tool as `tool(…)` in tern's rule language.
fn with_claude_spec(name: &str, tool: &str, spec: Option<&str>) -> Result<String, String> {
    let Some(spec) = spec.filter(|s| !s.is_empty() && *s != "*") else {
        return Ok(tool.to_string());
    };
    match name {
        "Bash" => {
            // `git add:*` is Claude Code's prefix form: the words, then anything.
            let command = match spec.strip_suffix(":*") {
                Some(prefix) => format!("{} *", prefix.trim()),
                None => spec.to_string(),
            };
            Ok(format!("{tool}({command})"))
        }
        "Read" | "Write" | "Edit" | "MultiEdit" | "Grep" | "Glob" | "LS" => {
            Ok(format!("{tool}(path: \"{}\")", claude_path(spec)?))
        }
        "WebFetch" => match spec.strip_prefix("domain:") {
            Some(host) => Ok(format!("{tool}(domain:{})", host.trim())),
            None => Err(format!(
                "`{name}({spec})`: a WebFetch rule names a host, as `WebFetch(domain:example.com)`"
            )),
        },
        _ => Err(format!(
            "`{name}({spec})`: tern cannot narrow {name} by an argument; write `{name}` alone"
        )),
    }
}

/// A Claude Code path pattern as one of tern's path globs: `//x` is absolute, `~/x` stays (the
/// home), `/x` is from the project root (tern's working directory), anything else relative.
fn claude_path(spec: &str) -> Result<String, String> {
    if spec.contains('"') {
        return Err(format!("`{spec}`: a path pattern cannot contain `\"`"));
    }
    Ok(if let Some(abs) = spec.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(rel) = spec.strip_prefix('/') {
        rel.to_string()
    } else {
        spec.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(entry: &str) -> Vec<String> {
        match to_rules(entry).unwrap() {
            Converted::Rules(r) => r,
            Converted::Skipped(s) => panic!("skipped: {s}"),
        }
    }

    #[test]
    fn claude_code_rules_become_terns() {
        assert_eq!(rules("Bash(git add:*)"), ["shell__run(git add *)"]);
        assert_eq!(rules("Bash(npm test)"), ["shell__run(npm test)"]);
        assert_eq!(rules("Bash"), ["shell__run"]);
        assert_eq!(rules("Read"), ["fs__read_file"]);
        assert_eq!(
            rules("Edit(/docs/**)"),
            ["fs__edit_file(path: \"docs/**\")"]
        );
        assert_eq!(
            rules("Read(//etc/hosts)"),
            ["fs__read_file(path: \"/etc/hosts\")"]
        );
        assert_eq!(
            rules("WebFetch(domain:docs.rs)"),
            ["web__fetch(domain:docs.rs)"]
        );
        assert_eq!(rules("mcp__github__create_issue"), ["github__create_issue"]);
        assert_eq!(rules("mcp__github"), ["github__*"]);
        assert_eq!(rules("mcp__github__*"), ["github__*"]);
        assert_eq!(
            rules("shell__run(cargo test *)"),
            ["shell__run(cargo test *)"]
        );
        assert!(matches!(to_rules("WebSearch"), Ok(Converted::Skipped(_))));
        let err = to_rules("Bsh(ls)").unwrap_err();
        assert!(
            err.contains("unknown tool `Bsh`") && err.contains("hint:"),
            "{err}"
        );
        assert!(to_rules("Bash(ls").is_err());
        assert!(to_rules("WebFetch(example.com)").is_err());
    }

    #[test]
    fn lists_split_on_commas_and_spaces_outside_parentheses() {
        assert_eq!(
            split_list("Bash(git add:*), Bash(git status:*), Read"),
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
        assert_eq!(split_list("Read Grep  Glob"), ["Read", "Grep", "Glob"]);
        assert!(split_list("  ").is_empty());
    }
}
