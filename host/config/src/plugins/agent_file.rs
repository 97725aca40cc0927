//! A plugin's `agents/NAME.md` — a Claude Code sub-agent — as a tern agent profile
//! (`[agents.NAME]`, which `tern serve agent`'s `run` offers as a `profile`).
//!
//! Claude Code's file (<https://docs.claude.com/en/docs/claude-code/sub-agents>, "File format"
//! and "Configuration fields"): YAML frontmatter with `name` and `description` (required),
//! `tools` ("Comma-separated list of specific tools. If omitted, inherits all tools from the
//! main thread") and `model` ("a model alias (`sonnet`, `opus`, `haiku`) or `'inherit'`"),
//! then the sub-agent's system prompt. Later versions add `maxTurns`, `disallowedTools`,
//! `permissionMode`, `skills`, `hooks`, `color`; tern maps `maxTurns` to `max_steps` and
//! reports the rest as not applied.
//!
//! Published agents' frontmatter is often not strict YAML (a plain description running over
//! several lines with `Context: …` in it, which Claude Code accepts), so it is read the lenient
//! way: a line starting with a known key at column 0 opens a field, every other line continues
//! the open one.

use std::path::Path;

use crate::claude_tools::{Converted, split_list, to_rules};

/// The keys Claude Code reads in an agent's frontmatter.
const KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "model",
    "maxTurns",
    "disallowedTools",
    "permissionMode",
    "skills",
    "hooks",
    "color",
    "memory",
    "mcpServers",
    "isolation",
    "effort",
];

/// Claude Code's model aliases: names of a family, not of a model a provider serves.
const MODEL_ALIASES: &[&str] = &["sonnet", "opus", "haiku"];

/// One agent, converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginAgent {
    pub name: String,
    /// The `[agents.NAME]` table, as TOML.
    pub toml: String,
    /// What was not carried over, one line each.
    pub warnings: Vec<String>,
}

/// Reads `path` (an agent file) into a profile. `Err` names the file and line.
pub(crate) fn read_agent(path: &Path) -> Result<PluginAgent, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let at = |line: usize, what: &str| format!("{}:{line}: {what}", path.display());
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = text.lines().enumerate();
    if lines.next().map(|(_, l)| l.trim_end()) != Some("---") {
        return Err(at(
            1,
            "an agent file starts with a `---` line opening its frontmatter (name, description)",
        ));
    }
    let mut fields: Vec<(String, String, usize)> = Vec::new();
    let mut body_start = None;
    for (i, line) in lines.by_ref() {
        if line.trim_end() == "---" {
            body_start = Some(i + 1);
            break;
        }
        let key = line
            .split_once(':')
            .map(|(k, _)| k)
            .filter(|k| KEYS.contains(k));
        match (key, fields.last_mut()) {
            (Some(key), _) => {
                let value = line[key.len() + 1..].trim().to_string();
                fields.push((key.to_string(), value, i + 1));
            }
            (None, Some((_, value, _))) => {
                value.push('\n');
                value.push_str(line);
            }
            (None, None) if line.trim().is_empty() || line.trim_start().starts_with('#') => {}
            (None, None) => return Err(at(i + 1, "expected `key: value` (e.g. `name: reviewer`)")),
        }
    }
    let Some(body_start) = body_start else {
        return Err(at(
            1,
            "the frontmatter opened here is never closed by a `---` line",
        ));
    };
    let body: String = text
        .lines()
        .skip(body_start)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string();
    let get = |key: &str| fields.iter().find(|(k, _, _)| k == key);
    let (name, name_line) = match get("name") {
        Some((_, v, line)) => (scalar(v), *line),
        None => return Err(at(2, "the required field `name` is missing")),
    };
    if !crate::check::valid_server_name(&name) {
        return Err(at(
            name_line,
            &format!(
                "agent name `{name}` may only use letters, digits, '_' and '-' (tern names the \
                 profile after it)"
            ),
        ));
    }
    let description = match get("description").map(|(_, v, l)| (scalar(v), *l)) {
        Some((d, _)) if !d.trim().is_empty() => d,
        Some((_, line)) => return Err(at(line, "`description` is empty")),
        None => {
            return Err(at(
                2,
                "the required field `description` is missing (it tells the calling model what \
                 the agent is for)",
            ));
        }
    };
    let mut warnings = Vec::new();
    let mut table = toml_edit::Table::new();
    table.insert("description", toml_edit::value(description));
    if !body.is_empty() {
        table.insert("instructions", toml_edit::value(body));
    }
    if let Some((_, value, line)) = get("tools") {
        let mut tools: Vec<String> = Vec::new();
        for entry in list(value) {
            match to_rules(&entry) {
                Ok(Converted::Rules(rules)) => {
                    for rule in rules {
                        // A profile lists tools; a rule's arguments (`Bash(git add:*)`) narrow
                        // calls, which is the permission rules' job.
                        let tool = rule.split('(').next().unwrap_or(&rule).to_string();
                        if tool != rule {
                            warnings.push(format!(
                                "agent {name} ({}:{line}): `{entry}` offers all of {tool}; the \
                                 permission rules decide which calls run",
                                path.display()
                            ));
                        }
                        if !tools.contains(&tool) {
                            tools.push(tool);
                        }
                    }
                }
                Ok(Converted::Skipped(note)) => {
                    warnings.push(format!("agent {name} ({}:{line}): {note}", path.display()))
                }
                Err(e) => warnings.push(format!(
                    "agent {name} ({}:{line}): {}; skipped",
                    path.display(),
                    e.lines().next().unwrap_or_default()
                )),
            }
        }
        let mut array = toml_edit::Array::new();
        tools.iter().for_each(|t| array.push(t.as_str()));
        table.insert("tools", toml_edit::value(array));
    }
    if let Some((_, value, line)) = get("model") {
        let model = scalar(value);
        if MODEL_ALIASES.contains(&model.as_str()) {
            warnings.push(format!(
                "agent {name} ({}:{line}): model `{model}` is a Claude Code alias; the sub-agent \
                 uses the run's model",
                path.display()
            ));
        } else if !model.is_empty() && model != "inherit" {
            table.insert("model", toml_edit::value(model));
        }
    }
    if let Some((_, value, line)) = get("maxTurns") {
        match scalar(value).parse::<i64>() {
            Ok(n) if n >= 1 => {
                table.insert("max_steps", toml_edit::value(n));
            }
            _ => {
                return Err(at(*line, "`maxTurns` must be a whole number of at least 1"));
            }
        }
    }
    for (key, _, line) in &fields {
        if !matches!(
            key.as_str(),
            "name" | "description" | "tools" | "model" | "maxTurns" | "color"
        ) {
            warnings.push(format!(
                "agent {name} ({}:{line}): `{key}` is not applied by tern",
                path.display()
            ));
        }
    }
    let mut doc = toml_edit::DocumentMut::new();
    let mut agents = toml_edit::Table::new();
    agents.set_implicit(true);
    agents.insert(&name, toml_edit::Item::Table(table));
    doc.insert("agents", toml_edit::Item::Table(agents));
    Ok(PluginAgent {
        name,
        toml: doc.to_string(),
        warnings,
    })
}

/// A scalar value: quotes taken off (with `\n` and `\"` read in a double-quoted one), a block
/// (`|`, `>`) or a continued plain value joined.
fn scalar(value: &str) -> String {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return inner
            .replace("\\n", "\n")
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
    }
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    let value = value
        .strip_prefix('|')
        .or_else(|| value.strip_prefix('>'))
        .map(|rest| rest.trim_start_matches(['-', '+']))
        .unwrap_or(value);
    value
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// `tools`: `A, B`, `A B`, `[A, B]` or a block list (`- A` lines).
fn list(value: &str) -> Vec<String> {
    let value = value.trim();
    let unquote = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_string();
    if value
        .lines()
        .skip(1)
        .any(|l| l.trim_start().starts_with("- "))
        || value.starts_with("- ")
    {
        return value
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("- "))
            .map(unquote)
            .filter(|s| !s.is_empty())
            .collect();
    }
    let inner = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    split_list(inner)
        .iter()
        .map(|s| unquote(s))
        .filter(|s| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_becomes_a_profile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reviewer.md");
        std::fs::write(
            &path,
            "---\nname: code-reviewer\ndescription: Reviews code. Examples:\n\n<example>\nContext: a diff\n</example>\ntools: Read, Grep, Bash(git diff:*), WebSearch\nmodel: haiku\nmaxTurns: 7\ncolor: red\npermissionMode: plan\n---\nYou review diffs.\n",
        )
        .unwrap();
        let agent = read_agent(&path).unwrap();
        assert_eq!(agent.name, "code-reviewer");
        let doc: toml::Table = toml::from_str(&agent.toml).unwrap();
        let p = &doc["agents"]["code-reviewer"];
        assert_eq!(
            p["description"].as_str().unwrap(),
            "Reviews code. Examples:\n\n<example>\nContext: a diff\n</example>"
        );
        assert_eq!(p["instructions"].as_str().unwrap(), "You review diffs.");
        let tools: Vec<&str> = p["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tools, ["fs__read_file", "fs__grep", "shell__run"]);
        assert_eq!(p["max_steps"].as_integer(), Some(7));
        assert!(p.get("model").is_none());
        let w = agent.warnings.join("\n");
        for what in ["WebSearch", "alias", "permissionMode", "git diff"] {
            assert!(w.contains(what), "{what} in {w}");
        }
        std::fs::write(&path, "---\ndescription: x\n---\n").unwrap();
        let err = read_agent(&path).unwrap_err();
        assert!(
            err.contains("reviewer.md:2:") && err.contains("`name`"),
            "{err}"
        );
        std::fs::write(&path, "---\nname: a b\ndescription: x\n---\n").unwrap();
        assert!(read_agent(&path).unwrap_err().contains("reviewer.md:2:"));
    }
}
