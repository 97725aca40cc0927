//! Where tern keeps its files, and where a project's config is.

use std::path::{Path, PathBuf};

use crate::error::{ConfigError, Result};
use crate::expand::EnvLookup;

/// The project config's path inside a project directory.
pub const PROJECT_CONFIG: &str = ".tern/config.toml";

/// tern's files: `$TERN_HOME` (default `~/.tern`), the user config in it, and the project directory —
/// the nearest directory from the working directory upward (to the repository root or the filesystem
/// root) that has a `.tern/config.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPaths {
    /// `$TERN_HOME`, absolute.
    pub tern_home: PathBuf,
    /// `$TERN_HOME/config.toml`.
    pub user_config: PathBuf,
    /// The directory holding the project's `.tern/config.toml`, if one was found.
    pub project_dir: Option<PathBuf>,
    /// The administrator's policy file: `$TERN_MANAGED_CONFIG`, else `/etc/tern/managed.toml`.
    pub managed_config: PathBuf,
}

impl ConfigPaths {
    /// Resolves the paths for a run in `cwd`. `TERN_HOME` and `HOME` are read through `env`, so tests
    /// inject them; `HOME` falls back to the OS's notion of the home directory.
    pub fn resolve(cwd: &Path, env: EnvLookup<'_>) -> Result<Self> {
        let home = || {
            env("HOME")
                .filter(|home| !home.is_empty())
                .map(PathBuf::from)
                .or_else(std::env::home_dir)
        };
        let tern_home = match env("TERN_HOME").filter(|value| !value.is_empty()) {
            Some(value) => {
                let path = match value.strip_prefix("~/") {
                    Some(rest) => home().ok_or(ConfigError::NoHome)?.join(rest),
                    None => PathBuf::from(value),
                };
                cwd.join(path)
            }
            None => home().ok_or(ConfigError::NoHome)?.join(".tern"),
        };
        let mut paths = Self::with_home(tern_home, cwd);
        paths.managed_config = crate::managed::ManagedPolicy::path_in(env);
        Ok(paths)
    }

    /// The paths with an explicit `$TERN_HOME`.
    pub fn with_home(tern_home: PathBuf, cwd: &Path) -> Self {
        let user_config = tern_home.join("config.toml");
        let project_dir = find_project_dir(cwd, &user_config);
        Self {
            tern_home,
            user_config,
            project_dir,
            managed_config: PathBuf::from(crate::managed::MANAGED_CONFIG),
        }
    }

    /// The project's `.tern/config.toml`, if there is a project.
    pub fn project_config(&self) -> Option<PathBuf> {
        self.project_dir
            .as_ref()
            .map(|dir| dir.join(PROJECT_CONFIG))
    }

    /// Where a rule saved "for this project" goes, and the project directory it belongs to: the
    /// project's `.tern/config.toml`, or a new one in `cwd` when there is no project yet.
    pub fn rules_target(&self, cwd: &Path) -> (PathBuf, PathBuf) {
        let dir = self
            .project_dir
            .clone()
            .unwrap_or_else(|| cwd.to_path_buf());
        (dir.join(PROJECT_CONFIG), dir)
    }

    /// `$TERN_HOME/trusted.json`: the trusted projects and the hashes of their config.
    pub fn trust_file(&self) -> PathBuf {
        self.tern_home.join("trusted.json")
    }

    /// `$TERN_HOME/runs/`: one directory per run (spill files, events).
    pub fn runs_dir(&self) -> PathBuf {
        self.tern_home.join("runs")
    }

    /// `$TERN_HOME/runs/<run_id>/`.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(run_id)
    }

    /// `$TERN_HOME/sessions/`: saved conversations.
    pub fn sessions_dir(&self) -> PathBuf {
        self.tern_home.join("sessions")
    }

    /// `$TERN_HOME/audit.jsonl`: one line per tool call, append-only.
    pub fn audit_log(&self) -> PathBuf {
        self.tern_home.join("audit.jsonl")
    }

    /// `$TERN_HOME/pins.json`: hashes of approved tool definitions (the rug-pull guard).
    pub fn pins_file(&self) -> PathBuf {
        self.tern_home.join("pins.json")
    }

    /// `$TERN_HOME/logs/`: per-server stderr logs.
    pub fn logs_dir(&self) -> PathBuf {
        self.tern_home.join("logs")
    }

    /// `$TERN_HOME/oauth/`: what `tern mcp login` stored, one `NAME.json` per server.
    pub fn oauth_dir(&self) -> PathBuf {
        self.tern_home.join("oauth")
    }
}

/// Walks up from `cwd`; stops after the first directory holding `.git` (the repository root) so a
/// `.tern/` above the repository cannot reach in. The user's own `$TERN_HOME/config.toml` is never
/// mistaken for a project config (running tern in `~` with the default home).
fn find_project_dir(cwd: &Path, user_config: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let candidate = dir.join(PROJECT_CONFIG);
        if candidate.is_file() && !same_file(&candidate, user_config) {
            return Some(dir.to_path_buf());
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tern_home_comes_from_the_injected_env() {
        let cwd = Path::new("/work/p");
        let env = |name: &str| match name {
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        let paths = ConfigPaths::resolve(cwd, &env).unwrap();
        assert_eq!(paths.tern_home, Path::new("/home/u/.tern"));
        assert_eq!(paths.user_config, Path::new("/home/u/.tern/config.toml"));
        assert_eq!(paths.audit_log(), Path::new("/home/u/.tern/audit.jsonl"));
        assert_eq!(paths.pins_file(), Path::new("/home/u/.tern/pins.json"));
        assert_eq!(paths.run_dir("r1"), Path::new("/home/u/.tern/runs/r1"));
        assert_eq!(paths.sessions_dir(), Path::new("/home/u/.tern/sessions"));

        let env = |name: &str| match name {
            "HOME" => Some("/home/u".to_owned()),
            "TERN_HOME" => Some("~/t".to_owned()),
            _ => None,
        };
        assert_eq!(
            ConfigPaths::resolve(cwd, &env).unwrap().tern_home,
            Path::new("/home/u/t")
        );
        let env = |name: &str| (name == "TERN_HOME").then(|| "rel".to_owned());
        assert_eq!(
            ConfigPaths::resolve(cwd, &env).unwrap().tern_home,
            Path::new("/work/p/rel")
        );
    }
}
