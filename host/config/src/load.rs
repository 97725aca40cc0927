//! Loading: read every layer, check each on its own, merge, resolve.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::agent::AgentSection;
use crate::error::{ConfigError, Result};
use crate::expand::EnvLookup;
use crate::layers::{Layer, override_text, parse_layer};
use crate::locate::SourceName;
use crate::paths::ConfigPaths;
use crate::permissions::{PermissionMode, Permissions, RuleList};
use crate::sandbox::SandboxConfig;
use crate::sections::ModelConfig;
use crate::servers::ServerConfig;
use crate::trust::{TrustStatus, TrustStore};

/// The defaults every config starts from: `config/default.toml`, compiled in.
pub const DEFAULT_CONFIG: &str = include_str!("../../../config/default.toml");

/// The pseudo path that errors and rules from [`DEFAULT_CONFIG`] carry.
pub const DEFAULTS_SOURCE: &str = "<defaults>";

/// What the command line adds on top of the files.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// The `--config FILE`s of the runs this one was started by (a sub-agent's parents), oldest
    /// first: layers above the user and project configs, below this run's own `--config`.
    pub inherited_config_files: Vec<PathBuf>,
    /// `--config FILE`: a layer above the user and project configs. It must exist.
    pub config_file: Option<PathBuf>,
    /// `-c key=value`, in order: the top layers. The value is TOML, or else a string.
    pub overrides: Vec<String>,
    /// `--allow RULE`, `--ask RULE`, `--deny RULE`, in the order given.
    pub rules: Vec<(RuleList, String)>,
    /// `--mode`: overrides `permissions.mode` from every layer.
    pub mode: Option<PermissionMode>,
    /// What no layer may widen: the effective policy of the run that started this one (a
    /// sub-agent's parent). Applied after every layer, so a sub-run can only be narrower.
    pub ceiling: Option<Ceiling>,
}

/// The loosest permission mode and shell sandbox a run may have: every `[sandbox]` setting that
/// opens a door is here, so a sub-run's own config can only keep a door its parent had open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceiling {
    pub mode: PermissionMode,
    pub sandbox: tern_sandbox::Mode,
    /// Whether commands may reach the network (`[sandbox] network`).
    pub network: tern_sandbox::Network,
    /// Whether commands may write `.git` (`[sandbox] git_writes`).
    pub git_writes: bool,
    /// The unix sockets commands may reach with the network off (`[sandbox] allow_sockets`):
    /// a sub-run keeps only those of its own that are in this list.
    pub allow_sockets: Vec<PathBuf>,
}

impl Ceiling {
    /// The tighter of two ceilings, field by field.
    pub fn and(self, other: Ceiling) -> Ceiling {
        Ceiling {
            mode: self.mode.at_most(other.mode),
            sandbox: crate::sandbox::at_most(self.sandbox, other.sandbox),
            network: if self.network == other.network {
                self.network
            } else {
                tern_sandbox::Network::Off
            },
            git_writes: self.git_writes && other.git_writes,
            allow_sockets: self
                .allow_sockets
                .into_iter()
                .filter(|s| other.allow_sockets.contains(s))
                .collect(),
        }
    }
}

/// Which layer a loaded source was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// The compiled-in `config/default.toml`.
    Defaults,
    /// `$TERN_HOME/config.toml`.
    User,
    /// An enabled plugin's servers and hooks (`$TERN_HOME/plugins/NAME@VERSION`), above the
    /// user's config: the user enabled it, so it is trusted like the user's own file.
    Plugin,
    /// A trusted project's `.tern/config.toml`.
    Project,
    /// `--config FILE`.
    ConfigFlag,
    /// One `-c key=value`.
    Override,
}

/// A source that contributed to the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedLayer {
    /// Which layer.
    pub kind: LayerKind,
    /// Its file; [`DEFAULTS_SOURCE`] for the defaults, `-c` for an override.
    pub path: PathBuf,
}

/// Something the user should know about the config that is not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A project config exists but was never trusted, so it was ignored.
    ProjectUntrusted {
        /// The `.tern/config.toml`.
        config: PathBuf,
        /// Where to run `tern trust`.
        project_dir: PathBuf,
    },
    /// A project config changed since it was trusted, so it was ignored.
    ProjectChanged {
        /// The `.tern/config.toml`.
        config: PathBuf,
        /// Where to run `tern trust`.
        project_dir: PathBuf,
    },
    /// The managed policy kept a server someone configured from starting.
    ServerBlocked {
        /// The server's name.
        server: String,
        /// Why (`blocked by managed policy (FILE:LINE: …)`).
        reason: String,
    },
    /// The managed policy kept an enabled plugin from loading (nothing it adds is used).
    PluginBlocked {
        /// The plugin's name.
        plugin: String,
        /// Why (`blocked by managed policy (FILE:LINE: allowed_plugins …)`).
        reason: String,
    },
    /// A Codex `[mcp_servers]` key tern reads but has no counterpart for (e.g.
    /// `experimental_environment = "remote"`): said, never silently dropped.
    ServerKeyIgnored {
        /// The dotted key.
        key: String,
        /// Where it was written.
        at: crate::error::Location,
        /// What tern does instead, and why.
        why: String,
    },
    /// The managed policy lowered the shell sandbox the config asked for.
    SandboxLowered {
        /// What the config asked for.
        asked: tern_sandbox::Mode,
        /// What the policy allows.
        allowed: tern_sandbox::Mode,
        /// Where the policy says so.
        at: crate::error::Location,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProjectUntrusted {
                config,
                project_dir,
            } => write!(
                f,
                "project config {} ignored: not trusted; run `tern trust` in {}",
                config.display(),
                project_dir.display()
            ),
            Self::ProjectChanged {
                config,
                project_dir,
            } => write!(
                f,
                "project config {} ignored: changed since it was trusted; review it, then run \
                 `tern trust` in {} again",
                config.display(),
                project_dir.display()
            ),
            Self::ServerBlocked { server, reason } => {
                write!(f, "server `{server}` not started: {reason}")
            }
            Self::PluginBlocked { plugin, reason } => {
                write!(f, "plugin `{plugin}` not loaded: {reason}")
            }
            Self::ServerKeyIgnored { key, at, why } => {
                write!(f, "{key} ignored ({at}): {why}")
            }
            Self::SandboxLowered { asked, allowed, at } => write!(
                f,
                "sandbox {asked} lowered to {allowed}: the managed policy allows no more ({at})"
            ),
        }
    }
}

/// The resolved config: every layer merged, validated, `${VAR}`s expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[mcp_servers.NAME]`, by name (so start order and tool order are deterministic).
    ///
    /// A disabled server whose `${VAR}` cannot be expanded is kept with the text unexpanded rather than
    /// failing the load: it is never started, and naming it in an error would be noise.
    pub mcp_servers: BTreeMap<String, ServerConfig>,
    /// `[model]`.
    pub model: ModelConfig,
    /// `[permissions]`.
    pub permissions: Permissions,
    /// `[agent]`.
    pub agent: AgentSection,
    /// `[context]`.
    pub context: crate::context::ContextSection,
    /// `[sandbox]`: what the built-in shell server's commands may do.
    pub sandbox: SandboxConfig,
    /// `[telemetry]`: OpenTelemetry export (the host lays the `OTEL_*` variables under it).
    pub telemetry: crate::telemetry::TelemetrySection,
    /// `[checkpoints]`: the workspace recorded before each turn, for rewind.
    pub checkpoints: crate::checkpoints::CheckpointsSection,
    /// `[ui]`: notifications of the interactive terminal.
    pub ui: crate::ui::UiSection,
    /// `[lsp]`: diagnostics after an edit.
    pub lsp: crate::lsp::LspSection,
    /// `[skills]`: whether a loaded skill's `allowed-tools` narrows the turn.
    pub skills: crate::skills::SkillsSection,
    /// `[agents.NAME]`: the enabled agent profiles, by name.
    pub agents: BTreeMap<String, crate::agents::AgentProfile>,
    /// `[[hooks.EVENT]]`: every layer's hooks (a project's only once it is trusted).
    pub hooks: crate::hooks::HooksSection,
    /// Where skills and custom commands are found (a project's only once it is trusted).
    pub extension_dirs: crate::extension_dirs::ExtensionDirs,
    /// The enabled plugins and what each added (`$TERN_HOME/plugins/installed.json`).
    pub plugins: Vec<crate::plugins::LoadedPlugin>,
    /// The administrator's policy, when there is one: already applied to this config (its
    /// rules are in `permissions`, its sandbox bound in `sandbox`, blocked servers disabled);
    /// kept for what is decided later (plugins, a mode switched during a session).
    pub managed: Option<crate::managed::ManagedPolicy>,
    /// Servers the managed policy kept from starting (they are disabled), by name, with why.
    pub blocked_servers: BTreeMap<String, String>,
    /// The sources that were applied, lowest first.
    pub layers: Vec<LoadedLayer>,
    /// Things to tell the user, e.g. an untrusted project config.
    pub notices: Vec<Notice>,
}

impl Config {
    /// Loads the config for `paths` (see [`ConfigPaths::resolve`]): defaults < user < trusted project <
    /// `--config` < `-c` < `--allow`/`--ask`/`--deny`/`--mode` < the managed policy.
    pub fn load(paths: &ConfigPaths, options: &LoadOptions, env: EnvLookup<'_>) -> Result<Self> {
        // First, so a broken policy stops tern before anything else is read.
        let managed = crate::managed::ManagedPolicy::load(&paths.managed_config)?;
        let mut merged = Layer::default();
        let mut layers = Vec::new();
        let mut notices = Vec::new();

        let defaults = SourceName::File(PathBuf::from(DEFAULTS_SOURCE));
        merged.merge(parse_layer(&defaults, DEFAULT_CONFIG)?);
        layers.push(loaded(LayerKind::Defaults, DEFAULTS_SOURCE));

        if let Some(text) = read_optional(&paths.user_config)? {
            merged.merge(parse_layer(
                &SourceName::File(paths.user_config.clone()),
                &text,
            )?);
            layers.push(loaded(LayerKind::User, &paths.user_config));
        }

        let plugins = crate::plugins::load_enabled(
            &paths.tern_home,
            managed.as_ref(),
            &mut merged,
            &mut layers,
            &mut notices,
        )?;

        if let (Some(project_dir), Some(config)) = (&paths.project_dir, paths.project_config())
            && let Some(text) = read_optional(&config)?
        {
            {
                let store = TrustStore::for_paths(paths);
                match store.status(project_dir, text.as_bytes())? {
                    TrustStatus::Trusted => {
                        merged.merge(parse_layer(&SourceName::File(config.clone()), &text)?);
                        layers.push(loaded(LayerKind::Project, &config));
                    }
                    TrustStatus::Untrusted => notices.push(Notice::ProjectUntrusted {
                        config,
                        project_dir: project_dir.clone(),
                    }),
                    TrustStatus::Changed => notices.push(Notice::ProjectChanged {
                        config,
                        project_dir: project_dir.clone(),
                    }),
                }
            }
        }

        for file in options
            .inherited_config_files
            .iter()
            .chain(&options.config_file)
        {
            let text = std::fs::read_to_string(file).map_err(|err| ConfigError::io(file, err))?;
            merged.merge(parse_layer(&SourceName::File(file.clone()), &text)?);
            layers.push(loaded(LayerKind::ConfigFlag, file));
        }

        for (i, arg) in options.overrides.iter().enumerate() {
            let name = SourceName::Arg {
                name: "-c",
                position: i + 1,
            };
            merged.merge(parse_layer(&name, &override_text(arg)?)?);
            layers.push(loaded(LayerKind::Override, "-c"));
        }

        merged
            .permissions
            .apply_flags(&options.rules, options.mode)?;
        if let Some(policy) = &managed {
            // After every flag: a deny (or ask) here is beyond any allow.
            merged.permissions.add_rules(
                (policy.deny.iter().map(|r| (RuleList::Deny, r.clone())))
                    .chain(policy.ask.iter().map(|r| (RuleList::Ask, r.clone()))),
            );
        }

        // Codex's approval modes are rules like any other: a deny or ask of any layer (or the
        // policy's) still wins over an `approve`.
        let approval_rules = merged.servers.approval_rules()?;
        merged.permissions.add_rules(approval_rules);
        notices.extend(merged.servers.ignored());

        let trusted_project = layers
            .iter()
            .any(|l| l.kind == LayerKind::Project)
            .then(|| paths.project_dir.clone())
            .flatten();
        let mut config = resolve(merged, env, &paths.tern_home, layers, notices)?;
        config.extension_dirs = crate::extension_dirs::ExtensionDirs {
            trusted_project,
            home: env("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .or_else(std::env::home_dir),
            tern_home: paths.tern_home.clone(),
            plugin_skill_dirs: plugins
                .iter()
                .flat_map(|p| p.skill_dirs.iter().cloned())
                .collect(),
            plugin_command_dirs: plugins
                .iter()
                .flat_map(|p| {
                    p.command_dirs
                        .iter()
                        .map(|d| (d.clone(), format!("plugin: {}", p.name)))
                })
                .collect(),
        };
        config.plugins = plugins;
        if let Some(ceiling) = &options.ceiling {
            config.permissions.mode = config.permissions.mode.at_most(ceiling.mode);
            config.sandbox.mode = crate::sandbox::at_most(config.sandbox.mode, ceiling.sandbox);
            if ceiling.network == tern_sandbox::Network::Off {
                config.sandbox.network = tern_sandbox::Network::Off;
            }
            config.sandbox.git_writes &= ceiling.git_writes;
            config
                .sandbox
                .allow_sockets
                .retain(|s| ceiling.allow_sockets.contains(s));
        }
        if let Some(policy) = managed {
            config.managed = Some(policy.clone());
            apply_managed(&mut config, &policy, options, env)?;
        }
        Ok(config)
    }

    /// Sets the shell sandbox to `mode`, or to the managed policy's bound when `mode` is looser
    /// (`tern run --sandbox` is applied after loading, and must not pass the policy either);
    /// the notice saying so, when it lowered it.
    pub fn bound_sandbox(&mut self, mode: tern_sandbox::Mode) -> Option<Notice> {
        self.sandbox.mode = mode;
        let bound = self.managed.as_ref()?.sandbox.as_ref()?;
        let lowered = crate::sandbox::at_most(mode, bound.value);
        if lowered == mode {
            return None;
        }
        self.sandbox.mode = lowered;
        Some(Notice::SandboxLowered {
            asked: mode,
            allowed: lowered,
            at: bound.at.clone(),
        })
    }

    /// The servers to start, by name.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.mcp_servers.values().filter(|server| server.enabled)
    }
}

/// Binds `config` by the managed policy: yolo refused, the sandbox lowered to the policy's
/// bound, and servers outside the policy disabled with the reason recorded.
fn apply_managed(
    config: &mut Config,
    policy: &crate::managed::ManagedPolicy,
    options: &LoadOptions,
    env: EnvLookup<'_>,
) -> Result<()> {
    let from = if options.mode == Some(config.permissions.mode) {
        "--mode"
    } else {
        "permissions.mode ="
    };
    policy.check_mode(config.permissions.mode, from)?;
    if let Some(notice) = config.bound_sandbox(config.sandbox.mode) {
        config.notices.push(notice);
    }
    for server in config.mcp_servers.values_mut() {
        if !server.enabled {
            continue;
        }
        if let Some(reason) = policy.server_blocked(server, env) {
            server.enabled = false;
            // Someone configured it: say why it is missing. The shipped servers an allow-list
            // leaves out are in `tern mcp list`, not in every run's notes.
            if server.defined_at.file != Path::new(DEFAULTS_SOURCE) {
                config.notices.push(Notice::ServerBlocked {
                    server: server.name.clone(),
                    reason: reason.clone(),
                });
            }
            config.blocked_servers.insert(server.name.clone(), reason);
        }
    }
    Ok(())
}

fn resolve(
    merged: Layer,
    env: EnvLookup<'_>,
    tern_home: &Path,
    layers: Vec<LoadedLayer>,
    notices: Vec<Notice>,
) -> Result<Config> {
    Ok(Config {
        mcp_servers: merged.servers.resolve(env)?,
        sandbox: merged.sandbox.resolve(env, tern_home)?,
        agents: merged.agents.resolve()?,
        model: merged.model,
        permissions: merged.permissions.resolve(),
        agent: merged.agent.resolve(),
        context: merged.context.resolve(),
        telemetry: merged.telemetry.resolve(),
        checkpoints: merged.checkpoints.resolve(),
        ui: merged.ui.resolve(),
        lsp: merged.lsp.resolve(),
        skills: merged.skills.resolve(),
        hooks: merged.hooks.resolve(),
        extension_dirs: Default::default(),
        plugins: Vec::new(),
        managed: None,
        blocked_servers: BTreeMap::new(),
        layers,
        notices,
    })
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(ConfigError::io(path, err)),
    }
}

fn loaded(kind: LayerKind, path: impl AsRef<Path>) -> LoadedLayer {
    LoadedLayer {
        kind,
        path: path.as_ref().to_path_buf(),
    }
}
