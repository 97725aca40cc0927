//! `tern hooks import FILE`: a Claude Code settings file's `hooks` block →
//! `[[hooks.EVENT]]` tables, appended to a config.toml's text and checked as a layer before
//! anything is written.
//!
//! Claude Code's shape is `{"hooks": {EVENT: [{"matcher": M, "hooks": [{"type": "command",
//! "command": C, "timeout": SECONDS}]}]}}`. Matchers and commands are kept as written (tern maps
//! Claude Code's tool names when it matches, and sets `$CLAUDE_PROJECT_DIR` for the command).
//! A hook of another `type` (`prompt`) and an event tern does not have are skipped with a warning.

use serde_json::Value;

use super::HookEvent;
use crate::error::{ConfigError, Result};
use crate::layers::parse_layer;
use crate::locate::SourceName;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HooksImport {
    /// The new config.toml text.
    pub config_text: String,
    /// The tables added (also at the end of `config_text`).
    pub added: String,
    /// How many hooks were imported.
    pub imported: usize,
    /// What was skipped, one readable line each.
    pub warnings: Vec<String>,
}

fn error(message: String) -> ConfigError {
    ConfigError::Import { message }
}

fn quote(text: &str) -> String {
    toml_edit::Value::from(text).decorated("", "").to_string()
}

/// Converts the `hooks` of a Claude Code settings JSON (`from` names it in the comment) and
/// appends them to `config_text`, which must still be a valid config afterwards.
pub fn import_claude_hooks(json_text: &str, config_text: &str, from: &str) -> Result<HooksImport> {
    let root: Value =
        serde_json::from_str(json_text).map_err(|e| error(format!("not valid JSON: {e}")))?;
    let hooks = root
        .get("hooks")
        .ok_or_else(|| error("no `hooks` object in the file (nothing to import)".into()))?
        .as_object()
        .ok_or_else(|| error("`hooks` is not an object".into()))?;
    let mut added = format!("\n# Imported from {from} by `tern hooks import`.\n");
    let mut imported = 0;
    let mut warnings = Vec::new();
    for (event_name, groups) in hooks {
        let Some(event) = HookEvent::parse(event_name) else {
            warnings.push(format!(
                "skipped event {event_name:?}: tern has no such hook event"
            ));
            continue;
        };
        let groups = groups
            .as_array()
            .ok_or_else(|| error(format!("hooks.{event_name} is not a list")))?;
        for group in groups {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            let entries = group
                .get("hooks")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    error(format!(
                        "an entry of hooks.{event_name} has no `hooks` list"
                    ))
                })?;
            for hook in entries {
                let kind = hook
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                if kind != "command" {
                    warnings.push(format!(
                        "skipped a {event_name} hook of type {kind:?}: tern runs command hooks only"
                    ));
                    continue;
                }
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    return Err(error(format!("a {event_name} hook has no `command`")));
                };
                added.push_str(&format!("[[hooks.{event}]]\n"));
                if !matcher.is_empty() && event.matches_tools() {
                    added.push_str(&format!("matcher = {}\n", quote(matcher)));
                }
                added.push_str(&format!("command = {}\n", quote(command)));
                if let Some(timeout) = hook.get("timeout").and_then(Value::as_f64) {
                    added.push_str(&format!("timeout_sec = {timeout:?}\n"));
                }
                imported += 1;
            }
        }
    }
    if imported == 0 {
        return Err(error(format!(
            "no command hook found to import{}",
            if warnings.is_empty() {
                String::new()
            } else {
                format!(" ({})", warnings.join("; "))
            }
        )));
    }
    let mut config_text = config_text.to_string();
    if !config_text.is_empty() && !config_text.ends_with('\n') {
        config_text.push('\n');
    }
    config_text.push_str(&added);
    // The result must load: a config with an inline `hooks = {…}` cannot take the tables.
    parse_layer(&SourceName::File(from.into()), &config_text).map_err(|e| {
        error(format!(
            "the config would not load with the imported hooks: {e}"
        ))
    })?;
    Ok(HooksImport {
        config_text,
        added,
        imported,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_block_becomes_hook_tables() {
        let json = r#"{"permissions": {"allow": []}, "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh", "timeout": 30}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}, {"type": "command", "command": "echo hi"}]}],
            "Mystery": []}}"#;
        let out = import_claude_hooks(json, "[model]\nname = \"x\"", "settings.json").unwrap();
        assert_eq!(out.imported, 2);
        assert!(
            out.added
                .contains("[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n"),
            "{}",
            out.added
        );
        let table: toml::Table = toml::from_str(&out.added).unwrap();
        assert_eq!(
            table["hooks"]["PreToolUse"][0]["command"].as_str(),
            Some("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh")
        );
        assert!(out.added.contains("timeout_sec = 30.0\n"));
        assert!(
            out.added
                .contains("[[hooks.Stop]]\ncommand = \"echo hi\"\n")
        );
        assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
        assert!(out.config_text.starts_with("[model]\nname = \"x\"\n"));
        assert!(import_claude_hooks("{}", "", "s").is_err());
        assert!(import_claude_hooks(json, "hooks = 3\n", "s").is_err());
    }
}
