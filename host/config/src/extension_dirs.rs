//! Where a run finds the extensions users bring (issue 19): Agent Skills and custom commands,
//! in the project (only a trusted one: its files become instructions to the model) and in the
//! user's folders, Claude Code's included so a copied `.claude/` works as it is.

use std::path::PathBuf;

/// The folders a run searches for skills and commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtensionDirs {
    /// The project directory, when its `.tern/config.toml` is trusted (and was loaded).
    pub trusted_project: Option<PathBuf>,
    /// `$HOME`, when known.
    pub home: Option<PathBuf>,
    /// `$TERN_HOME`.
    pub tern_home: PathBuf,
    /// The enabled plugins' skill folders, after the user's.
    pub plugin_skill_dirs: Vec<PathBuf>,
    /// The enabled plugins' command folders, each with its source (`plugin: NAME`), after the
    /// user's.
    pub plugin_command_dirs: Vec<(PathBuf, String)>,
}

impl ExtensionDirs {
    /// The user's skills folders, in precedence order: `~/.agents/skills`,
    /// `$TERN_HOME/skills`, `~/.claude/skills`, then the enabled plugins'.
    pub fn user_skill_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(home) = &self.home {
            dirs.push(home.join(".agents/skills"));
        }
        dirs.push(self.tern_home.join("skills"));
        if let Some(home) = &self.home {
            dirs.push(home.join(".claude/skills"));
        }
        dirs.extend(self.plugin_skill_dirs.iter().cloned());
        dirs
    }

    /// The custom-command folders with the source each is listed under, highest precedence
    /// first: the trusted project's `.tern/commands` and `.claude/commands`, then
    /// `$TERN_HOME/commands` and `~/.claude/commands`, then the enabled plugins' (`plugin: NAME`).
    pub fn command_dirs(&self) -> Vec<(PathBuf, String)> {
        let mut dirs = Vec::new();
        if let Some(project) = &self.trusted_project {
            dirs.push((project.join(".tern/commands"), "project".to_owned()));
            dirs.push((project.join(".claude/commands"), "project".to_owned()));
        }
        dirs.push((self.tern_home.join("commands"), "user".to_owned()));
        if let Some(home) = &self.home {
            dirs.push((home.join(".claude/commands"), "user".to_owned()));
        }
        dirs.extend(self.plugin_command_dirs.iter().cloned());
        dirs
    }
}
