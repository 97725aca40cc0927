//! One config layer, checked on its own, and the merge of layers, later over earlier.
//!
//! Each section keeps its raw → layer → resolved steps in its own module (`[mcp_servers]` in
//! `servers/`, `[permissions]` in `permissions/`, `[agent]` in `agent.rs`, …); this module only
//! gathers them, so a new key is an edit in its section's module alone. How each section merges
//! is said there: scalars — later wins; tables — per key; lists — later replaces; permission
//! rules accumulate over every layer.

use crate::agent::AgentLayer;
use crate::error::{ConfigError, Result};
use crate::locate::{SourceName, SourceText};
use crate::permissions::PermissionsLayer;
use crate::raw::RawConfig;
use crate::sandbox::SandboxLayer;
use crate::sections::ModelConfig;
use crate::servers::ServersLayer;

/// One layer checked on its own — or several merged (the same shape: merging lays one over the
/// other section by section).
#[derive(Debug, Default)]
pub(crate) struct Layer {
    pub(crate) model: ModelConfig,
    pub(crate) context: crate::context::ContextLayer,
    pub(crate) permissions: PermissionsLayer,
    pub(crate) agent: AgentLayer,
    pub(crate) sandbox: SandboxLayer,
    pub(crate) telemetry: crate::telemetry::TelemetryLayer,
    pub(crate) checkpoints: crate::checkpoints::CheckpointsLayer,
    pub(crate) lsp: crate::lsp::LspLayer,
    pub(crate) ui: crate::ui::UiLayer,
    pub(crate) skills: crate::skills::SkillsLayer,
    pub(crate) servers: ServersLayer,
    pub(crate) agents: crate::agents::AgentsLayer,
    pub(crate) hooks: crate::hooks::HooksLayer,
}

impl Layer {
    /// Checks what can be checked within one layer and records where each value came from.
    pub(crate) fn from_raw(raw: RawConfig, source: &SourceText<'_>) -> Result<Self> {
        let mut layer = Self {
            model: raw.model.unwrap_or_default(),
            servers: ServersLayer::from_raw(raw.mcp_servers, source)?,
            agents: crate::agents::AgentsLayer::from_raw(raw.agents, source)?,
            hooks: crate::hooks::HooksLayer::from_raw(raw.hooks, source)?,
            ..Self::default()
        };
        if let Some(permissions) = raw.permissions {
            layer.permissions = PermissionsLayer::from_raw(permissions, source)?;
        }
        if let Some(agent) = raw.agent {
            layer.agent = AgentLayer::from_raw(agent, source)?;
        }
        if let Some(context) = raw.context {
            layer.context = crate::context::ContextLayer::from_raw(context, source)?;
        }
        if let Some(sandbox) = raw.sandbox {
            layer.sandbox = SandboxLayer::from_raw(sandbox, source)?;
        }
        if let Some(telemetry) = raw.telemetry {
            layer.telemetry = crate::telemetry::TelemetryLayer::from_raw(telemetry, source)?;
        }
        if let Some(checkpoints) = raw.checkpoints {
            layer.checkpoints =
                crate::checkpoints::CheckpointsLayer::from_raw(checkpoints, source)?;
        }
        if let Some(lsp) = raw.lsp {
            layer.lsp = crate::lsp::LspLayer::from_raw(lsp, source)?;
        }
        if let Some(ui) = raw.ui {
            layer.ui = crate::ui::UiLayer::from_raw(ui, source)?;
        }
        if let Some(skills) = raw.skills {
            layer.skills = crate::skills::SkillsLayer::from_raw(skills, source)?;
        }
        Ok(layer)
    }

    /// Lays `later` over everything merged so far.
    pub(crate) fn merge(&mut self, later: Layer) {
        self.model.merge(later.model);
        self.context.merge(later.context);
        self.permissions.merge(later.permissions);
        self.agent.merge(later.agent);
        self.sandbox.merge(later.sandbox);
        self.telemetry.merge(later.telemetry);
        self.checkpoints.merge(later.checkpoints);
        self.lsp.merge(later.lsp);
        self.ui.merge(later.ui);
        self.skills.merge(later.skills);
        self.agents.merge(later.agents);
        self.servers.merge(later.servers);
        self.hooks.merge(later.hooks);
    }
}

/// Turns `-c key=value` into one line of TOML. The value is parsed as a TOML value and, if it is not
/// one, taken as a string, so `-c model.name=gpt-4o` needs no quotes. Parsing the key and the value
/// separately keeps a value from smuggling in further keys.
pub(crate) fn override_text(arg: &str) -> Result<String> {
    let error = |message: &str| ConfigError::Override {
        arg: arg.to_owned(),
        message: message.to_owned(),
    };
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| error("expected key=value, e.g. -c model.name=gpt-4o"))?;
    let keys = toml_edit::Key::parse(key.trim())
        .map_err(|err| error(&format!("bad key {key:?}: {}", err.message())))?;
    let value = value
        .trim()
        .parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(value.trim()));
    let key = keys
        .iter()
        .map(|key| key.display_repr().into_owned())
        .collect::<Vec<_>>()
        .join(".");
    Ok(format!("{key} = {}\n", value.decorated("", "")))
}

/// One layer from the text of a config file named `name` (a file, a flag, a plugin's
/// converted manifest): parsed strictly, then checked section by section.
pub(crate) fn parse_layer(name: &SourceName, text: &str) -> Result<Layer> {
    let source = SourceText { name, text };
    Layer::from_raw(crate::raw::parse(&source)?, &source)
}

#[cfg(test)]
mod tests {
    use super::override_text;

    #[test]
    fn override_values_parse_as_toml_or_fall_back_to_strings() {
        assert_eq!(
            override_text("agent.max_steps=7").unwrap(),
            "agent.max_steps = 7\n"
        );
        assert_eq!(
            override_text("model.name=gpt-4o").unwrap(),
            "model.name = \"gpt-4o\"\n"
        );
        assert_eq!(
            override_text("permissions.allow=[\"a\", \"b\"]").unwrap(),
            "permissions.allow = [\"a\", \"b\"]\n"
        );
        assert_eq!(
            override_text("mcp_servers.\"my-srv\".enabled=false").unwrap(),
            "mcp_servers.\"my-srv\".enabled = false\n"
        );
        // A value cannot add a second key.
        let text = override_text("model.name=a\nb = 1").unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(table.len(), 1, "{text}");
        assert_eq!(table["model"]["name"].as_str(), Some("a\nb = 1"));
        assert!(override_text("no-equals").is_err());
        assert!(override_text("bad key=1").is_err());
    }
}
