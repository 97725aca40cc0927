//! tern's configuration: strict, layered `config.toml`, project trust and `.mcp.json` import.
//!
//! Layers, later wins: the compiled-in [`DEFAULT_CONFIG`] < `$TERN_HOME/config.toml` < a project's
//! `.tern/config.toml` (only once trusted, see [`TrustStore`]) < `--config FILE` < `-c key=value`,
//! and above them all the administrator's [`ManagedPolicy`] (`/etc/tern/managed.toml`), which no
//! layer or flag can loosen.
//! Each layer is parsed on its own into structs that reject unknown keys, so every mistake is reported
//! as `file:line:column: …` naming the key; then the layers merge and resolve into the typed
//! [`Config`]. Config is a value the host passes down — there is no global.
//!
//! ```no_run
//! use tern_config::{Config, ConfigPaths, LoadOptions};
//!
//! let env = |name: &str| std::env::var(name).ok();
//! let cwd = std::env::current_dir()?;
//! let paths = ConfigPaths::resolve(&cwd, &env)?;
//! let config = Config::load(&paths, &LoadOptions::default(), &env)?;
//! for notice in &config.notices {
//!     eprintln!("note: {notice}");
//! }
//! for server in config.enabled_servers() {
//!     // start it…
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod agents;
mod check;
mod checkpoints;
pub mod claude_tools;
mod context;
mod error;
mod expand;
mod extension_dirs;
mod hooks;
mod import;
mod layers;
mod load;
mod locate;
mod lsp;
mod managed;
mod paths;
mod permissions;
mod plugins;
mod raw;
mod sandbox;
mod sections;
mod servers;
mod skills;
mod telemetry;
mod trust;
mod ui;

pub use agent::{AgentSection, DEFAULT_MAX_STEPS, DEFAULT_STARTUP_GRACE};
pub use agents::AgentProfile;
pub use checkpoints::CheckpointsSection;
pub use context::ContextSection;
pub use error::{ConfigError, Location, Result};
pub use expand::{EnvLookup, ExpandError, expand};
pub use extension_dirs::ExtensionDirs;
pub use hooks::{
    DEFAULT_HOOK_TIMEOUT, HookConfig, HookEvent, HooksImport, HooksSection, import_claude_hooks,
};
pub use import::{ImportReport, import_mcp_json};
pub use load::{
    Ceiling, Config, DEFAULT_CONFIG, DEFAULTS_SOURCE, LayerKind, LoadOptions, LoadedLayer, Notice,
};
pub use lsp::{AfterEdit, LspSection};
pub use managed::{
    MANAGED_CONFIG, MANAGED_CONFIG_ENV, ManagedPolicy, PatternKind, Placed, PolicyPattern,
};
pub use paths::{ConfigPaths, PROJECT_CONFIG};
pub use permissions::{
    PermissionMode, Permissions, RuleList, RuleSource, append_rule, check_rule_shape,
};
pub use plugins::{
    InstalledPlugin, Layout as PluginLayout, LoadedPlugin, Marketplace, MarketplaceEntry,
    MarketplaceRecord, PLUGIN_SOURCE_PREFIX, PluginContents, PluginHook, PluginServer,
    PluginSource, PluginState, plugin_source, read_marketplace, read_plugin,
};
pub use sandbox::SandboxConfig;
pub use sections::{ModelConfig, ModelServer, Provider, ToolCallMode, WireApi};
pub use servers::{
    Builtin, DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, Defer,
    Launch, OAuthConfig, PrivateKeySource, Protocol, SIGNING_ALGS, ServerConfig, ServerRoots,
    ToolLimits, ToolSettings, Transport,
};
pub use skills::SkillsSection;
pub use telemetry::{OtlpProtocol, TelemetrySection};
pub use tern_sandbox::{Mode as SandboxMode, Network as SandboxNetwork};
pub use trust::{TrustStatus, TrustStore, config_hash};
pub use ui::UiSection;
