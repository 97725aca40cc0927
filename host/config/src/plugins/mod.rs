//! Plugins (issue 19, item 4): one installed folder that adds MCP servers, hooks, skills and
//! custom commands at once, in Claude Code's or Codex's layout, so a published plugin works as
//! it is.
//!
//! Where the shapes come from:
//! - Claude Code: `.claude-plugin/plugin.json` (`name` required; `version`, `description`,
//!   and component paths `commands`, `agents`, `skills`, `hooks`, `mcpServers` that add to the
//!   default folders `commands/`, `agents/`, `skills/`, `hooks/hooks.json`, `.mcp.json`), and
//!   `${CLAUDE_PLUGIN_ROOT}` in hook and server commands for the installed folder — the plugins
//!   reference (<https://docs.claude.com/en/docs/claude-code/plugins-reference>) and the plugin
//!   manifest reference in anthropics/claude-code
//!   (`plugins/plugin-dev/skills/plugin-structure/references/manifest-reference.md`).
//!   `hooks/hooks.json` is `{"hooks": {EVENT: [{"matcher", "hooks": [{"type": "command",
//!   "command"}]}]}}`, the settings file's hooks block (converted by [`crate::import_claude_hooks`]).
//! - Claude Code's `.claude-plugin/marketplace.json`: `name`, `owner`, optional
//!   `metadata.pluginRoot`, and `plugins: [{name, source, description?, version?}]`, `source` a
//!   path relative to the marketplace root or `{"source": "github", "repo"}` /
//!   `{"source": "url", "url"}` (<https://code.claude.com/docs/en/plugins/marketplace-reference>).
//! - Codex: `.codex-plugin/plugin.json`, "compatible with Claude Code plugin manifests"
//!   (openai/codex, the plugin manifest schema): the same `name`/`version`/`description`,
//!   `skills: "./skills/"`, `mcpServers: "./.mcp.json"`, `hooks` as a path or a list of paths,
//!   plus an `interface` block for display that tern does not need; its marketplaces live at
//!   `.agents/plugins/marketplace.json` with `{"source": "local", "path"}` entries.
//!
//! A plugin becomes one config layer, between the user's config and a project's: its servers
//! join `[mcp_servers]` (so pins, trust, `tern mcp doctor` and `tern mcp list` treat them like
//! any other, sourced `plugin: NAME`), its hooks `[[hooks.EVENT]]`, its `agents/*.md` (Claude
//! Code sub-agents) `[agents.NAME]` profiles for `agent__run`, and its folders go to the
//! skills server and the custom commands. Disabling or removing it removes the layer, hence
//! everything it added.

mod agent_file;
mod manifest;
mod marketplace;
mod state;

pub use manifest::{Layout, PluginContents, PluginHook, PluginServer, read_plugin};
pub use marketplace::{Marketplace, MarketplaceEntry, PluginSource, read_marketplace};
pub use state::{InstalledPlugin, MarketplaceRecord, PluginState};

use std::path::PathBuf;

/// The pseudo file a plugin's config layer is named by: `plugin: NAME`, in `tern mcp list`,
/// `tern hooks list` and errors about its generated entries.
pub const PLUGIN_SOURCE_PREFIX: &str = "plugin: ";

/// The source name of `plugin`'s layer.
pub fn plugin_source(plugin: &str) -> PathBuf {
    PathBuf::from(format!("{PLUGIN_SOURCE_PREFIX}{plugin}"))
}

/// What an enabled plugin added to the loaded config, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedPlugin {
    /// The plugin's name.
    pub name: String,
    /// Its version (`unversioned` when the manifest has none).
    pub version: String,
    /// The installed folder, `$TERN_HOME/plugins/NAME@VERSION`.
    pub root: PathBuf,
    /// Skill folders (each holds skill folders with a `SKILL.md`).
    pub skill_dirs: Vec<PathBuf>,
    /// Custom-command folders.
    pub command_dirs: Vec<PathBuf>,
}

/// Lays every enabled plugin's layer over `merged` (the defaults and the user's config), in
/// name order. A server a plugin defines that an earlier layer (or plugin) already defines is
/// an error: merging them would make a server neither wrote. An earlier layer that only tunes
/// the name (`enabled = false`) is not a clash, so a user can switch one plugin server off.
pub(crate) fn load_enabled(
    tern_home: &std::path::Path,
    policy: Option<&crate::managed::ManagedPolicy>,
    merged: &mut crate::layers::Layer,
    layers: &mut Vec<crate::LoadedLayer>,
    notices: &mut Vec<crate::Notice>,
) -> crate::Result<Vec<LoadedPlugin>> {
    let state = PluginState::read(tern_home)?;
    let mut loaded = Vec::new();
    let mut owner: std::collections::BTreeMap<String, String> = Default::default();
    for (name, installed) in state.enabled() {
        // A plugin enabled before the policy forbade it stays installed but adds nothing; the
        // install-time check is the host's `commands::plugin::plugin_allowed_by_policy`.
        if let Some(reason) = policy.and_then(|p| p.plugin_blocked(name)) {
            notices.push(crate::Notice::PluginBlocked {
                plugin: name.to_string(),
                reason,
            });
            continue;
        }
        let broken = |e: crate::ConfigError| crate::ConfigError::Plugin {
            message: format!(
                "plugin {name}: {e}\nhint: `tern plugin update {name}` fetches it again, \
                 `tern plugin remove {name}` removes it"
            ),
        };
        let (contents, layer) =
            manifest::read_plugin_layer(&installed.dir, &installed.dir).map_err(broken)?;
        for server in layer.servers.0.keys() {
            if merged
                .servers
                .0
                .get(server)
                .is_some_and(|s| s.has_transport())
            {
                let other = owner
                    .get(server)
                    .map(|p| format!("plugin {p}"))
                    .unwrap_or_else(|| "your config (or tern's defaults)".to_owned());
                return Err(broken(crate::ConfigError::Plugin {
                    message: format!(
                        "its MCP server `{server}` clashes with the server of that name in {other}"
                    ),
                }));
            }
            owner.insert(server.clone(), name.clone());
        }
        for agent in layer.agents.names() {
            if merged.agents.defines(&agent) {
                let other = owner
                    .get(&format!("agent {agent}"))
                    .map(|p| format!("plugin {p}"))
                    .unwrap_or_else(|| "your config (or tern's defaults)".to_owned());
                return Err(broken(crate::ConfigError::Plugin {
                    message: format!(
                        "its agent `{agent}` clashes with the agent profile of that name in {other}"
                    ),
                }));
            }
            owner.insert(format!("agent {agent}"), name.clone());
        }
        merged.merge(layer);
        layers.push(crate::LoadedLayer {
            kind: crate::LayerKind::Plugin,
            path: plugin_source(name),
        });
        loaded.push(LoadedPlugin {
            name: name.clone(),
            version: contents.version,
            root: installed.dir.clone(),
            skill_dirs: contents.skill_dirs,
            command_dirs: contents.command_dirs,
        });
    }
    Ok(loaded)
}
