//! Custom slash commands from markdown files (issue 19, item 3): `/NAME args` expands
//! `NAME.md` from a trusted project's `.tern/commands` or `.claude/commands`, or from
//! `$TERN_HOME/commands` or `~/.claude/commands`, the way Claude Code does: `$ARGUMENTS` is the
//! whole argument line, `$1`…`$9` its words; optional frontmatter gives `description`,
//! `argument-hint`, `model` and `allowed-tools`
//! (<https://code.claude.com/docs/en/slash-commands>, "Frontmatter"). A neutral helper: the
//! REPL (dispatch, `/help`, Tab completion), `tern run "/NAME args"` and `tern acp` read the
//! same list, and hand the engine the same [`Invocation`].
//!
//! `model` and `allowed-tools` hold for the command's own turn only ([`TurnScope`]): the
//! engine talks to that model for the turn and returns to the session's afterwards, and the
//! gateway lets the turn's calls that match `allowed-tools` run without asking — allow rules
//! that never outrank a deny or ask rule, the managed policy, or `plan`/`read-only` mode.

use std::path::{Path, PathBuf};

use tern_config::{
    ExtensionDirs,
    claude_tools::{Converted, split_list, to_rules},
};
use tern_gateway::TurnRule;

/// A frontmatter value and the line of the file it is on (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<T> {
    pub value: T,
    pub line: usize,
}

/// One command file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// `/NAME` (the file name without `.md`; a subfolder adds `dir:` as in Claude Code).
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    /// `model:` as written: the model of the command's turn.
    pub model: Option<Field<String>>,
    /// `allowed-tools:` entries as written (a comma- or space-separated string, or a list).
    pub allowed_tools: Option<Field<Vec<String>>>,
    /// `project`, `user` or `plugin: NAME`.
    pub source: String,
    pub path: PathBuf,
    body: String,
}

/// What holds for the one turn a command starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnScope {
    /// Talk to this model for the turn (the session's model comes back after it).
    pub model: Option<String>,
    /// Allow rules for the turn's calls, in tern's rule language, each naming its file:line.
    pub allow: Vec<TurnRule>,
    /// Entries that allow nothing in tern (a Claude Code tool tern does not have), said once.
    pub notes: Vec<String>,
}

impl TurnScope {
    /// Nothing changes for the turn.
    pub fn is_empty(&self) -> bool {
        self.model.is_none() && self.allow.is_empty()
    }
}

/// A command ready to run: the text to send and what holds for its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub text: String,
    pub scope: TurnScope,
}

/// A command file whose frontmatter cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {key}: {message}", file.display())]
pub struct CommandError {
    pub file: PathBuf,
    pub line: usize,
    pub key: &'static str,
    /// What is wrong; may end with a `hint:` line.
    pub message: String,
}

impl CustomCommand {
    /// The text to send: the body with `$ARGUMENTS` and `$1`…`$9` filled in from `args`. A
    /// body that names neither gets the arguments appended, so they are never lost.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut text = self.body.replace("$ARGUMENTS", args);
        let mut positional = false;
        for i in (1..=9).rev() {
            let key = format!("${i}");
            if text.contains(&key) {
                positional = true;
                text = text.replace(&key, words.get(i - 1).copied().unwrap_or(""));
            }
        }
        if !positional && !self.body.contains("$ARGUMENTS") && !args.is_empty() {
            text.push_str(&format!("\n\n{args}"));
        }
        text.trim().to_string()
    }

    /// [`Self::expand`] and the command's [`TurnScope`]; an error names the file, line and key
    /// of a `model` or `allowed-tools` that cannot be applied (nothing runs then).
    pub fn invoke(&self, args: &str) -> Result<Invocation, CommandError> {
        Ok(Invocation {
            text: self.expand(args),
            scope: self.scope()?,
        })
    }

    /// What `model` and `allowed-tools` say, checked.
    pub fn scope(&self) -> Result<TurnScope, CommandError> {
        let mut scope = TurnScope::default();
        if let Some(model) = &self.model {
            scope.model = turn_model(&model.value).map_err(|message| CommandError {
                file: self.path.clone(),
                line: model.line,
                key: "model",
                message,
            })?;
        }
        if let Some(tools) = &self.allowed_tools {
            let origin = format!("{}:{}", self.path.display(), tools.line);
            for entry in &tools.value {
                let converted = to_rules(entry).map_err(|message| CommandError {
                    file: self.path.clone(),
                    line: tools.line,
                    key: "allowed-tools",
                    message,
                })?;
                match converted {
                    Converted::Rules(rules) => {
                        scope.allow.extend(rules.into_iter().map(|rule| TurnRule {
                            rule,
                            origin: origin.clone(),
                        }))
                    }
                    Converted::Skipped(note) => scope.notes.push(format!("{origin}: {note}")),
                }
            }
        }
        Ok(scope)
    }
}

/// A command's `model:`: `None` for `inherit` (Claude Code's word for the session's model).
fn turn_model(value: &str) -> Result<Option<String>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(
            "is empty\nhint: remove the line to keep the session's model, or name one \
                    (e.g. `model: claude-sonnet-4-5`)"
                .to_string(),
        );
    }
    if value == "inherit" {
        return Ok(None);
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '/' | '@' | '+'))
    {
        return Err(format!(
            "`{value}` is not a model name (letters, digits and - . _ : / @ + only)\nhint: \
             name the model as the provider does, e.g. `model: claude-sonnet-4-5`"
        ));
    }
    Ok(Some(value.to_string()))
}

/// Every command in `dirs`, the first of a name winning (the project's over the user's), by
/// name; with the files that could not be read.
pub fn discover(dirs: &ExtensionDirs) -> (Vec<CustomCommand>, Vec<String>) {
    let mut found: Vec<CustomCommand> = Vec::new();
    let mut problems = Vec::new();
    for (dir, source) in dirs.command_dirs() {
        scan(&dir, &dir, &source, &mut found, &mut problems);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    (found, problems)
}

/// The command `/name`, if one exists.
pub fn find(dirs: &ExtensionDirs, name: &str) -> Option<CustomCommand> {
    discover(dirs).0.into_iter().find(|c| c.name == name)
}

fn scan(
    root: &Path,
    dir: &Path,
    source: &str,
    found: &mut Vec<CustomCommand>,
    problems: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        // No symlinked folders: a command folder must not lead the listing elsewhere.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            scan(root, &path, source, found, problems);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let Some(name) = command_name(root, &path) else {
            continue;
        };
        if found.iter().any(|c| c.name == name) {
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => found.push(parse(name, &text, source.to_owned(), path)),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
}

/// `a/b.md` under the root → `a:b`; names are what a person can type.
fn command_name(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?.with_extension("");
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let name = parts.join(":");
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'));
    ok.then_some(name)
}

fn parse(name: String, text: &str, source: String, path: PathBuf) -> CustomCommand {
    let mut command = CustomCommand {
        name,
        description: String::new(),
        argument_hint: String::new(),
        model: None,
        allowed_tools: None,
        source,
        path,
        body: text.to_string(),
    };
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"));
    if let Some(rest) = rest
        && let Some(end) = rest.find("\n---")
    {
        let front = &rest[..end];
        let after = &rest[end + 4..];
        command.body = after.trim_start_matches(['\r', '\n']).to_string();
        let lines: Vec<&str> = front.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            // The first line of the file is `---`: frontmatter line `i` is file line `i + 2`.
            let line_no = i + 2;
            let line = lines[i];
            i += 1;
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            if line.starts_with([' ', '\t']) {
                continue;
            }
            let value = value.trim();
            match key.trim() {
                "description" => command.description = unquote(value),
                "argument-hint" => command.argument_hint = unquote(value),
                "model" => {
                    command.model = Some(Field {
                        value: unquote(value),
                        line: line_no,
                    })
                }
                "allowed-tools" => {
                    let mut entries = list_value(value);
                    // A YAML block list on the lines below: `  - Bash(git add:*)`.
                    while value.is_empty()
                        && let Some(item) =
                            lines.get(i).and_then(|l| l.trim_start().strip_prefix("- "))
                    {
                        entries.push(unquote(item.trim()));
                        i += 1;
                    }
                    command.allowed_tools = Some(Field {
                        value: entries.into_iter().filter(|e| !e.is_empty()).collect(),
                        line: line_no,
                    });
                }
                _ => {}
            }
        }
    }
    if command.description.is_empty() {
        // Claude Code's fallback: the first line of the body.
        command.description = command
            .body
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_start_matches('#')
            .trim()
            .chars()
            .take(80)
            .collect();
    }
    command
}

fn unquote(value: &str) -> String {
    value
        .trim()
        .trim_matches('"')
        .trim_matches('\'')
        .to_string()
}

/// `a, b`, `a b` or a YAML flow list `["a", "b"]`.
fn list_value(value: &str) -> Vec<String> {
    match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(inner) => split_list(inner).iter().map(|e| unquote(e)).collect(),
        None => split_list(&unquote(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_and_arguments_expand_like_claude_code() {
        let c = parse(
            "fix-issue".into(),
            "---\ndescription: Fix an issue\nargument-hint: [number] [priority]\nmodel: m\n---\n\
             Fix issue #$1 with priority $2. All: $ARGUMENTS\n",
            "project".into(),
            "x.md".into(),
        );
        assert_eq!(c.description, "Fix an issue");
        assert_eq!(c.argument_hint, "[number] [priority]");
        assert_eq!(
            c.model.as_ref().map(|m| (m.value.as_str(), m.line)),
            Some(("m", 4))
        );
        assert_eq!(
            c.expand("123 high"),
            "Fix issue #123 with priority high. All: 123 high"
        );
        let plain = parse(
            "p".into(),
            "# Review the diff\nBe strict.",
            "user".into(),
            "p.md".into(),
        );
        assert_eq!(plain.description, "Review the diff");
        assert_eq!(
            plain.expand("src/"),
            "# Review the diff\nBe strict.\n\nsrc/"
        );
    }

    #[test]
    fn model_and_allowed_tools_make_the_turns_scope() {
        let c = parse(
            "commit".into(),
            "---\nmodel: inherit\nallowed-tools: [\"Bash(git add:*)\", \"WebSearch\", Read]\n---\nGo",
            "user".into(),
            "/c/commit.md".into(),
        );
        let scope = c.scope().unwrap();
        assert_eq!(scope.model, None, "inherit keeps the session's model");
        let rules: Vec<(&str, &str)> = scope
            .allow
            .iter()
            .map(|r| (r.rule.as_str(), r.origin.as_str()))
            .collect();
        assert_eq!(
            rules,
            [
                ("shell__run(git add *)", "/c/commit.md:3"),
                ("fs__read_file", "/c/commit.md:3")
            ]
        );
        assert_eq!(
            scope.notes.len(),
            1,
            "WebSearch is skipped: {:?}",
            scope.notes
        );
        let c = parse(
            "m".into(),
            "---\nmodel: claude-haiku-4-5\nallowed-tools:\n  - Read\n  - Bsh\n---\nGo",
            "user".into(),
            "/c/m.md".into(),
        );
        let err = c.invoke("").unwrap_err();
        assert_eq!((err.line, err.key), (3, "allowed-tools"));
        assert!(
            err.to_string()
                .starts_with("/c/m.md:3: allowed-tools: `Bsh`"),
            "{err}"
        );
        let c = parse(
            "m".into(),
            "---\nmodel: claude-haiku-4-5\n---\nGo",
            "user".into(),
            "m.md".into(),
        );
        assert_eq!(
            c.scope().unwrap().model.as_deref(),
            Some("claude-haiku-4-5")
        );
    }

    #[test]
    fn the_project_wins_a_name_and_subfolders_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let home = dir.path().join("h");
        std::fs::create_dir_all(project.join(".claude/commands/git")).unwrap();
        std::fs::create_dir_all(home.join(".claude/commands")).unwrap();
        std::fs::write(project.join(".claude/commands/review.md"), "project review").unwrap();
        std::fs::write(project.join(".claude/commands/git/pr.md"), "open a PR").unwrap();
        std::fs::write(home.join(".claude/commands/review.md"), "user review").unwrap();
        let dirs = ExtensionDirs {
            trusted_project: Some(project),
            home: Some(home.clone()),
            tern_home: home.join(".tern"),
            ..ExtensionDirs::default()
        };
        let (found, _) = discover(&dirs);
        let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:pr", "review"]);
        assert_eq!(found[1].source, "project");
        assert_eq!(found[1].expand(""), "project review");
        let untrusted = ExtensionDirs {
            trusted_project: None,
            ..dirs
        };
        assert_eq!(find(&untrusted, "review").unwrap().source, "user");
        assert!(find(&untrusted, "git:pr").is_none());
    }
}
