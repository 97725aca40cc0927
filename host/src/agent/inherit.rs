//! A sub-agent's run is bound by the policy of the run that started it.
//!
//! The parent's command line (`--allow/--ask/--deny`, `--config`, `-c`, `--mode`, `--sandbox`)
//! is not in any file the sub-run loads, so without this a `tern run --deny …` would not bind
//! the sub-agents it delegates to. The parent hands its policy to each agent server it starts
//! in the environment (`TERN_PARENT_POLICY`, beside `TERN_PARENT_RUN_ID`: the command line
//! identifies the server for pins and the tool cache, the policy does not), and the server lays
//! it under every sub-run's config: the parent's config files and overrides below the server's
//! own, its rules added (a deny at any layer wins), and its effective permission mode and shell
//! sandbox as a ceiling no layer of the sub-run may widen. A sub-run's own agent servers get the
//! accumulated policy, so the chain holds at every depth. The managed policy binds every run by
//! itself (it is a config layer each one loads).

use std::{collections::BTreeMap, path::PathBuf};

use serde::{Deserialize, Serialize};
use tern_config::{Ceiling, LoadOptions, PermissionMode, RuleList, SandboxConfig, SandboxMode};
use tern_sandbox::Network;

/// The variable carrying a parent run's policy to its agent servers (JSON).
pub const PARENT_POLICY_ENV: &str = "TERN_PARENT_POLICY";

/// What a run passes down to the sub-runs of its agent servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParentPolicy {
    /// Its `--config` files (and its own parents'), oldest first, absolute.
    pub config_files: Vec<PathBuf>,
    /// Its `-c key=value` overrides (and its parents'), in order.
    pub overrides: Vec<String>,
    /// Its `--allow/--ask/--deny` rules (and its parents').
    pub rules: Vec<(RuleList, String)>,
    /// Its effective permission mode: the loosest a sub-run may have.
    pub mode: PermissionMode,
    /// Its effective shell sandbox: the loosest a sub-run may have (by the name
    /// `tern-shell --sandbox` takes).
    #[serde(with = "by_name")]
    pub sandbox: SandboxMode,
    /// Whether its commands may reach the network: a sub-run's may only if these may.
    pub network: bool,
    /// Whether its commands may write `.git`: a sub-run's may only if these may.
    pub git_writes: bool,
    /// The unix sockets its commands may reach: a sub-run keeps only those of its own in here.
    pub allow_sockets: Vec<PathBuf>,
}

/// The sandbox mode by its `--sandbox` name (the sandbox crate's type has no serde).
mod by_name {
    use serde::{Deserialize, Deserializer, Serializer};
    use tern_config::SandboxMode;

    pub fn serialize<S: Serializer>(mode: &SandboxMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&mode.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SandboxMode, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl ParentPolicy {
    /// The policy of a run whose command-line layers are `cli` (already including what its own
    /// parent passed down) and whose resolved config has `mode` and `sandbox`. Relative
    /// `--config` paths are made absolute against `cwd`: the sub-run works elsewhere.
    pub fn of(
        cli: &LoadOptions,
        mode: PermissionMode,
        sandbox: &SandboxConfig,
        cwd: &std::path::Path,
    ) -> Self {
        ParentPolicy {
            config_files: cli
                .inherited_config_files
                .iter()
                .chain(&cli.config_file)
                .map(|f| cwd.join(f))
                .collect(),
            overrides: cli.overrides.clone(),
            rules: cli.rules.clone(),
            mode,
            sandbox: sandbox.mode,
            network: sandbox.network == Network::On,
            git_writes: sandbox.git_writes,
            allow_sockets: sandbox.allow_sockets.clone(),
        }
    }

    /// The policy in `env`, if a parent set one. A value that cannot be read is an error: a
    /// server that silently dropped its parent's denies would be the bug this exists for.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<Option<Self>, String> {
        match env.get(PARENT_POLICY_ENV) {
            None => Ok(None),
            Some(text) => serde_json::from_str(text)
                .map(Some)
                .map_err(|e| format!("{PARENT_POLICY_ENV} is not a policy tern wrote: {e}")),
        }
    }

    /// As the value of [`PARENT_POLICY_ENV`].
    pub fn to_env(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// `own` (a server's or sub-run's config flags) laid over this policy: the parent's files
    /// and overrides below its own, the parent's rules first, and the parent's mode and sandbox
    /// as a ceiling (combined with any ceiling `own` had).
    pub fn under(&self, own: LoadOptions) -> LoadOptions {
        let parent = Ceiling {
            mode: self.mode,
            sandbox: self.sandbox,
            network: if self.network {
                Network::On
            } else {
                Network::Off
            },
            git_writes: self.git_writes,
            allow_sockets: self.allow_sockets.clone(),
        };
        let mut inherited_config_files = self.config_files.clone();
        inherited_config_files.extend(own.inherited_config_files);
        LoadOptions {
            inherited_config_files,
            config_file: own.config_file,
            overrides: self
                .overrides
                .iter()
                .cloned()
                .chain(own.overrides)
                .collect(),
            rules: self.rules.iter().cloned().chain(own.rules).collect(),
            mode: own.mode.map(|m| m.at_most(self.mode)),
            ceiling: Some(match own.ceiling {
                Some(c) => c.and(parent),
                None => parent,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_round_trips_and_binds_what_is_laid_over_it() {
        let cli = LoadOptions {
            config_file: Some("team.toml".into()),
            overrides: vec!["agent.max_steps=5".into()],
            rules: vec![(RuleList::Deny, "fs__read_file(**/.env)".into())],
            ..LoadOptions::default()
        };
        let sandbox = SandboxConfig {
            mode: SandboxMode::ReadOnly,
            network: Network::Off,
            writable: Vec::new(),
            protect: Vec::new(),
            git_writes: false,
            allow_sockets: vec![PathBuf::from("/run/agent.sock")],
        };
        let policy = ParentPolicy::of(
            &cli,
            PermissionMode::Default,
            &sandbox,
            std::path::Path::new("/work/proj"),
        );
        assert_eq!(policy.config_files, [PathBuf::from("/work/proj/team.toml")]);
        let env = BTreeMap::from([(PARENT_POLICY_ENV.to_string(), policy.to_env())]);
        let back = ParentPolicy::from_env(&env).unwrap().unwrap();
        assert_eq!(back, policy);

        let own = LoadOptions {
            config_file: Some("/srv/agent.toml".into()),
            rules: vec![(RuleList::Allow, "fs__read_file".into())],
            mode: Some(PermissionMode::Yolo),
            ..LoadOptions::default()
        };
        let laid = back.under(own);
        assert_eq!(laid.inherited_config_files, policy.config_files);
        assert_eq!(laid.config_file, Some("/srv/agent.toml".into()));
        assert_eq!(
            laid.rules[0],
            (RuleList::Deny, "fs__read_file(**/.env)".into())
        );
        assert_eq!(laid.mode, Some(PermissionMode::Default));
        assert_eq!(
            laid.ceiling,
            Some(Ceiling {
                mode: PermissionMode::Default,
                sandbox: SandboxMode::ReadOnly,
                network: Network::Off,
                git_writes: false,
                allow_sockets: vec![PathBuf::from("/run/agent.sock")],
            })
        );
        let garbled = BTreeMap::from([(PARENT_POLICY_ENV.to_string(), "{".to_string())]);
        assert!(ParentPolicy::from_env(&garbled).is_err());
    }
}
