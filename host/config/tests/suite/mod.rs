//! tern-config's integration tests. Every test builds its own `$TERN_HOME` and project in a temp dir
//! and injects the environment, so nothing reads or changes the real one.

mod codex_keys;
mod examples;
mod expand;
mod import;
mod inherit;
mod layers;
mod managed;
mod oauth;
mod parse;
mod plugins;
mod sandbox;
mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tern_config::{Config, ConfigPaths, LoadOptions, Result, TrustStore};

/// A temp `$TERN_HOME` and a git project with a `.tern/` dir.
pub struct Fixture {
    _root: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub env: BTreeMap<String, String>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home/.tern");
        let project = root.join("work/proj");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        Self {
            _root: dir,
            root,
            home,
            project,
            env: BTreeMap::new(),
        }
    }

    /// Writes `text` to `path` (relative to the temp root), creating parents; returns the full path.
    pub fn write(&self, path: &str, text: &str) -> PathBuf {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn user_config(&self, text: &str) -> PathBuf {
        self.write("home/.tern/config.toml", text)
    }

    pub fn project_config(&self, text: &str) -> PathBuf {
        self.write("work/proj/.tern/config.toml", text)
    }

    pub fn paths(&self) -> ConfigPaths {
        self.paths_in(&self.project)
    }

    /// The paths for a run in `cwd`; the managed policy is the fixture's `managed.toml`
    /// (absent unless a test writes it), never the machine's `/etc/tern/managed.toml`.
    pub fn paths_in(&self, cwd: &Path) -> ConfigPaths {
        let mut paths = ConfigPaths::with_home(self.home.clone(), cwd);
        paths.managed_config = self.root.join("etc/managed.toml");
        paths
    }

    /// Writes the managed policy.
    pub fn managed(&self, text: &str) -> PathBuf {
        self.write("etc/managed.toml", text)
    }

    pub fn trust(&self) {
        TrustStore::for_paths(&self.paths())
            .trust(&self.project)
            .unwrap();
    }

    pub fn load(&self, options: &LoadOptions) -> Result<Config> {
        let env = |name: &str| self.env.get(name).cloned();
        Config::load(&self.paths(), options, &env)
    }
}

/// `LoadOptions` with only `--config FILE`.
pub fn with_config_file(file: PathBuf) -> LoadOptions {
    LoadOptions {
        config_file: Some(file),
        ..LoadOptions::default()
    }
}
