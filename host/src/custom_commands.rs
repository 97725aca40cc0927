//! Custom slash commands from markdown files (issue 19, item 3): `/NAME args` expands
//! `NAME.md` from a trusted project's `.tern/commands` or `.claude/commands`, or from
//! `$TERN_HOME/commands` or `~/.claude/commands`, the way Claude Code does: `$ARGUMENTS` is the
//! whole argument line, `$1`…`$9` its words; optional frontmatter gives `description`,
//! `argument-hint`, `model` and `allowed-tools`. A neutral helper: the REPL (dispatch, `/help`,
//! Tab completion) and `tern run "/NAME args"` read the same list.

use std::path::{Path, PathBuf};

use tern_config::ExtensionDirs;

/// One command file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    /// `/NAME` (the file name without `.md`; a subfolder adds `dir:` as in Claude Code).
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    /// `model:` as written (reported; the run's model is not switched).
    pub model: Option<String>,
    /// `allowed-tools:` as written (reported; never widens what the rules allow).
    pub allowed_tools: Option<String>,
    /// `project` or `user`.
    pub source: String,
    pub path: PathBuf,
    body: String,
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
        for line in front.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value
                .trim()
                .trim_matches('"')
                .trim_matches('\'')
                .to_string();
            match key.trim() {
                "description" => command.description = value,
                "argument-hint" => command.argument_hint = value,
                "model" => command.model = Some(value),
                "allowed-tools" => command.allowed_tools = Some(value),
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
        assert_eq!(c.model.as_deref(), Some("m"));
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
