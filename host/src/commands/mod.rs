//! The subcommands that inspect and manage servers. Each writes to the given
//! writer (stdout at the binary's edge) and returns the process exit code.

pub mod mcp;
pub mod runs;
pub mod tools;

use std::{collections::BTreeMap, path::PathBuf};

use anyhow::Context as _;
use tern_config::{Config, ConfigPaths, LoadOptions};

use crate::cli::GlobalArgs;

/// What every command needs: where we are, the environment, the loaded config.
pub struct Ctx {
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub paths: ConfigPaths,
    pub config: Config,
    pub tern_exe: PathBuf,
}

/// A config problem: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ConfigFailure(#[from] pub tern_config::ConfigError);

impl Ctx {
    /// Resolves the directory, paths and config from the global flags.
    pub fn load(global: &GlobalArgs) -> anyhow::Result<Ctx> {
        let here = std::env::current_dir().context("cannot read the current directory")?;
        let cwd = match &global.cd {
            Some(dir) => here.join(dir),
            None => here,
        };
        let cwd = cwd
            .canonicalize()
            .with_context(|| format!("cannot use directory {}", cwd.display()))?;
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let lookup = |k: &str| env.get(k).cloned();
        let paths = ConfigPaths::resolve(&cwd, &lookup).map_err(ConfigFailure)?;
        let mut rules = Vec::new();
        for (list, items) in [
            (tern_config::RuleList::Allow, &global.allow),
            (tern_config::RuleList::Ask, &global.ask),
            (tern_config::RuleList::Deny, &global.deny),
        ] {
            rules.extend(items.iter().map(|r| (list, r.clone())));
        }
        let options = LoadOptions {
            config_file: global.config.clone(),
            overrides: global.overrides.clone(),
            rules,
            mode: global.mode.map(|m| match m {
                crate::cli::ModeArg::Default => tern_config::PermissionMode::Default,
                crate::cli::ModeArg::AcceptEdits => tern_config::PermissionMode::AcceptEdits,
                crate::cli::ModeArg::ReadOnly => tern_config::PermissionMode::ReadOnly,
                crate::cli::ModeArg::Yolo => tern_config::PermissionMode::Yolo,
            }),
        };
        let config = Config::load(&paths, &options, &lookup).map_err(ConfigFailure)?;
        let tern_exe = std::env::current_exe().context("cannot find the tern executable")?;
        Ok(Ctx {
            cwd,
            env,
            paths,
            config,
            tern_exe,
        })
    }

    /// Notices about the config (e.g. an untrusted project), one line each.
    pub fn notices(&self) -> Vec<String> {
        self.config.notices.iter().map(|n| n.to_string()).collect()
    }
}

/// `tern trust`: trusts the project config of the working directory.
pub fn trust(ctx: &Ctx, out: &mut dyn std::io::Write) -> anyhow::Result<i32> {
    let Some(project) = ctx.paths.project_dir.clone() else {
        anyhow::bail!(
            "no .tern/config.toml found from {} upward: nothing to trust",
            ctx.cwd.display()
        );
    };
    let store = tern_config::TrustStore::for_paths(&ctx.paths);
    let hash = store.trust(&project).map_err(ConfigFailure)?;
    writeln!(
        out,
        "trusted {} (config sha256 {}); any change to it needs `tern trust` again",
        project.join(tern_config::PROJECT_CONFIG).display(),
        &hash[..hash.len().min(12)]
    )?;
    Ok(0)
}
