//! `tern plugin marketplace add | list | remove`: where `MARKETPLACE/PLUGIN` names come from.

use std::io::Write;

use anyhow::Context as _;
use tern_config::MarketplaceRecord;

use super::PluginEnv;
use super::install::{clone, is_git_url};
use crate::error::{ConfigFailure, UsageError};

/// `tern plugin marketplace add PATH|GIT_URL`: a folder is used where it is (its edits show);
/// a repository is cloned into `$TERN_HOME/plugins/marketplaces/NAME`.
pub(super) fn add(penv: &PluginEnv, source: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut state = penv.read_state()?;
    let markets = penv.plugins_dir().join("marketplaces");
    let local = penv.cwd.join(source);
    let (marketplace, record) = if is_git_url(source) && !local.exists() {
        let fetched = clone(source, &markets)?;
        let marketplace = tern_config::read_marketplace(&fetched.dir).map_err(ConfigFailure)?;
        let dir = markets.join(&marketplace.name);
        if state.marketplaces.contains_key(&marketplace.name) {
            return Err(clash(&marketplace.name));
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&fetched.dir, &dir)
            .with_context(|| format!("cannot move the clone to {}", dir.display()))?;
        let record = MarketplaceRecord {
            source: source.to_owned(),
            dir,
        };
        (marketplace, record)
    } else {
        let dir = local
            .canonicalize()
            .with_context(|| format!("no marketplace at {}", local.display()))?;
        let marketplace = tern_config::read_marketplace(&dir).map_err(ConfigFailure)?;
        let record = MarketplaceRecord {
            source: dir.display().to_string(),
            dir,
        };
        (marketplace, record)
    };
    if state.marketplaces.contains_key(&marketplace.name) {
        return Err(clash(&marketplace.name));
    }
    state.marketplaces.insert(marketplace.name.clone(), record);
    penv.write_state(&state)?;
    writeln!(
        out,
        "added marketplace {} with {} plugin(s): {}\nhint: `tern plugin add {}/PLUGIN`",
        marketplace.name,
        marketplace.plugins.len(),
        marketplace
            .plugins
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        marketplace.name
    )?;
    Ok(0)
}

fn clash(name: &str) -> anyhow::Error {
    UsageError(format!(
        "a marketplace named `{name}` is already added\nhint: `tern plugin marketplace remove \
         {name}` first"
    ))
    .into()
}

/// `tern plugin marketplace list`.
pub(super) fn list(penv: &PluginEnv, out: &mut dyn Write) -> anyhow::Result<i32> {
    let state = penv.read_state()?;
    if state.marketplaces.is_empty() {
        writeln!(
            out,
            "no marketplaces added\nhint: `tern plugin marketplace add PATH|GIT_URL`"
        )?;
        return Ok(0);
    }
    for (name, record) in &state.marketplaces {
        writeln!(out, "{name}  from {}", record.source)?;
        match tern_config::read_marketplace(&record.dir) {
            Ok(m) => {
                for p in &m.plugins {
                    let about = p.description.as_deref().unwrap_or("");
                    writeln!(out, "  {name}/{}  {about}", p.name)?;
                }
            }
            Err(e) => writeln!(out, "  broken: {e}")?,
        }
    }
    Ok(0)
}

/// `tern plugin marketplace remove NAME`.
pub(super) fn remove(penv: &PluginEnv, name: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut state = penv.read_state()?;
    let Some(record) = state.marketplaces.remove(name) else {
        return Err(UsageError(format!(
            "no marketplace named `{name}`\nhint: `tern plugin marketplace list`"
        ))
        .into());
    };
    penv.write_state(&state)?;
    let markets = penv.plugins_dir().join("marketplaces");
    if record.dir.parent() == Some(markets.as_path()) {
        let _ = std::fs::remove_dir_all(&record.dir);
    }
    writeln!(out, "removed marketplace {name}")?;
    Ok(0)
}
