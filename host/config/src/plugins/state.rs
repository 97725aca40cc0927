//! `$TERN_HOME/plugins/installed.json`: which plugins are installed, where from, and whether
//! each is enabled; and the marketplaces added. tern's own file (written by `tern plugin …`
//! through `tern_protocol::files`, `0600`), read by every config load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstalledPlugin {
    /// The manifest's version (`unversioned` without one).
    pub version: String,
    /// The installed copy, `$TERN_HOME/plugins/NAME@VERSION`.
    pub dir: PathBuf,
    /// What `tern plugin add` was given (an absolute path, a git URL or `MARKETPLACE/PLUGIN`),
    /// so `tern plugin update` fetches it again from the same place.
    pub source: String,
    /// Whether its layer is loaded.
    pub enabled: bool,
}

/// One added marketplace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketplaceRecord {
    /// What `tern plugin marketplace add` was given.
    pub source: String,
    /// The folder holding `.claude-plugin/marketplace.json` (a local marketplace's own folder,
    /// or the clone under `$TERN_HOME/plugins/marketplaces/NAME`).
    pub dir: PathBuf,
}

/// The whole state file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginState {
    #[serde(default)]
    pub plugins: BTreeMap<String, InstalledPlugin>,
    #[serde(default)]
    pub marketplaces: BTreeMap<String, MarketplaceRecord>,
}

impl PluginState {
    /// `$TERN_HOME/plugins/installed.json`.
    pub fn path(tern_home: &Path) -> PathBuf {
        tern_home.join("plugins").join("installed.json")
    }

    /// The state under `tern_home`; empty when there is no file yet.
    pub fn read(tern_home: &Path) -> Result<Self> {
        let path = Self::path(tern_home);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(ConfigError::io(&path, e)),
        };
        serde_json::from_str(&text).map_err(|e| ConfigError::Plugin {
            message: format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()),
        })
    }

    /// The text to write back.
    pub fn to_json(&self) -> String {
        // Serializing plain strings, paths and bools cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The enabled plugins, by name.
    pub fn enabled(&self) -> impl Iterator<Item = (&String, &InstalledPlugin)> {
        self.plugins.iter().filter(|(_, p)| p.enabled)
    }
}
