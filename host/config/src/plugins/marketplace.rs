//! A marketplace: a folder whose `.claude-plugin/marketplace.json` (Claude Code) or
//! `.agents/plugins/marketplace.json` (Codex) lists plugins by name with where each one is.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ConfigError, Result};

/// Where a marketplace entry's plugin is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A folder inside the marketplace.
    Path(PathBuf),
    /// A git repository to clone.
    Git(String),
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceEntry {
    pub name: String,
    pub description: Option<String>,
    pub source: PluginSource,
}

/// A marketplace file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marketplace {
    pub name: String,
    pub plugins: Vec<MarketplaceEntry>,
}

impl Marketplace {
    /// The entry named `plugin`.
    pub fn entry(&self, plugin: &str) -> Option<&MarketplaceEntry> {
        self.plugins.iter().find(|p| p.name == plugin)
    }
}

#[derive(Deserialize)]
struct RawMarketplace {
    name: String,
    #[serde(default)]
    metadata: RawMetadata,
    #[serde(default)]
    plugins: Vec<RawEntry>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawMetadata {
    plugin_root: Option<String>,
}

#[derive(Deserialize)]
struct RawEntry {
    name: String,
    description: Option<String>,
    source: Value,
}

/// The marketplace files tern looks for, in order.
const MARKETPLACE_FILES: [&str; 2] = [
    ".claude-plugin/marketplace.json",
    ".agents/plugins/marketplace.json",
];

fn error(message: String) -> ConfigError {
    ConfigError::Plugin { message }
}

/// Reads the marketplace in `dir`.
pub fn read_marketplace(dir: &Path) -> Result<Marketplace> {
    let path = MARKETPLACE_FILES
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            error(format!(
                "{} is not a marketplace: it has no .claude-plugin/marketplace.json (or Codex's \
                 .agents/plugins/marketplace.json)",
                dir.display()
            ))
        })?;
    let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::io(&path, e))?;
    let raw: RawMarketplace = serde_json::from_str(&text).map_err(|e| {
        error(format!(
            "{}:{}:{}: not a valid marketplace file: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if !super::manifest::valid_name(&raw.name) {
        return Err(error(format!(
            "{}: marketplace name {:?} may only use letters, digits, '-', '_' and '.'",
            path.display(),
            raw.name
        )));
    }
    let root = raw.metadata.plugin_root.unwrap_or_default();
    let mut plugins = Vec::new();
    for entry in raw.plugins {
        let bad = |why: &str| {
            error(format!(
                "{}: plugin {:?}: {why}",
                path.display(),
                entry.name
            ))
        };
        let relative = |rel: &str| -> Result<PluginSource> {
            let joined = Path::new(&root).join(rel);
            if joined.is_absolute() || joined.components().any(|c| c == Component::ParentDir) {
                return Err(bad("a path source must stay inside the marketplace"));
            }
            Ok(PluginSource::Path(dir.join(joined)))
        };
        let field = |key: &str| entry.source.get(key).and_then(Value::as_str);
        let source = match &entry.source {
            Value::String(rel) => relative(rel)?,
            Value::Object(_) => match field("source") {
                Some("github") => PluginSource::Git(format!(
                    "https://github.com/{}.git",
                    field("repo").ok_or_else(|| bad("a github source needs `repo`"))?
                )),
                Some("url" | "git") => PluginSource::Git(
                    field("url")
                        .ok_or_else(|| bad("a url source needs `url`"))?
                        .to_owned(),
                ),
                Some("local") => {
                    relative(field("path").ok_or_else(|| bad("a local source needs `path`"))?)?
                }
                other => {
                    return Err(bad(&format!(
                        "source kind {other:?} is not supported (tern reads a path, \"github\", \
                         \"url\", \"git\" and \"local\")"
                    )));
                }
            },
            _ => return Err(bad("`source` must be a path or an object")),
        };
        plugins.push(MarketplaceEntry {
            name: entry.name,
            description: entry.description,
            source,
        });
    }
    Ok(Marketplace {
        name: raw.name,
        plugins,
    })
}
