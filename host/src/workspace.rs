//! Where a command works: the directory, the environment, the config files and the loaded
//! config — built once from the command line and passed down as a value.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::Context as _;
use tern_config::{Config, ConfigPaths, LoadOptions};

use crate::error::ConfigFailure;

/// What every command needs.
pub struct Workspace {
    /// The working directory (canonical).
    pub cwd: PathBuf,
    /// The environment, read once (tests and sub-runs pass their own).
    pub env: BTreeMap<String, String>,
    /// `$TERN_HOME` and the config files in play.
    pub paths: ConfigPaths,
    /// The merged config (flags already applied).
    pub config: Config,
    /// This executable, which runs the built-in servers (`tern serve NAME`).
    pub tern_exe: PathBuf,
    /// The command-line layers `config` was loaded with (and what a parent run passed down):
    /// what this run's sub-agents inherit ([`crate::agent::inherit`]).
    pub cli: LoadOptions,
}

impl Workspace {
    /// Resolves the directory (`cd` relative to the current one), paths and config.
    pub fn load(cd: Option<&Path>, options: &LoadOptions) -> anyhow::Result<Workspace> {
        let here = std::env::current_dir().context("cannot read the current directory")?;
        let cwd = match cd {
            Some(dir) => here.join(dir),
            None => here,
        };
        let cwd = cwd
            .canonicalize()
            .with_context(|| format!("cannot use directory {}", cwd.display()))?;
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let lookup = |k: &str| env.get(k).cloned();
        let paths = ConfigPaths::resolve(&cwd, &lookup).map_err(ConfigFailure)?;
        let config = Config::load(&paths, options, &lookup).map_err(ConfigFailure)?;
        let tern_exe = std::env::current_exe().context("cannot find the tern executable")?;
        Ok(Workspace {
            cwd,
            env,
            paths,
            config,
            tern_exe,
            cli: options.clone(),
        })
    }

    /// Notices about the config (e.g. an untrusted project), one line each.
    pub fn notices(&self) -> Vec<String> {
        self.config.notices.iter().map(|n| n.to_string()).collect()
    }

    /// A workspace in `dir` with exactly `env` and the built-in config (for unit tests).
    #[cfg(test)]
    pub fn for_test(dir: &Path, env: BTreeMap<String, String>) -> Workspace {
        let lookup = |k: &str| env.get(k).cloned();
        let paths = ConfigPaths::resolve(dir, &lookup).unwrap_or_else(|e| panic!("{e}"));
        let config = Config::load(&paths, &LoadOptions::default(), &lookup)
            .unwrap_or_else(|e| panic!("{e}"));
        Workspace {
            cwd: dir.to_path_buf(),
            env,
            paths,
            config,
            tern_exe: PathBuf::from("tern"),
            cli: LoadOptions::default(),
        }
    }

    /// Looks a variable up in the workspace's environment.
    pub fn var(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
}
