//! `tern plugin add` and `update`: fetch (a folder, a git clone, a marketplace entry), show,
//! ask, copy into `$TERN_HOME/plugins/NAME@VERSION`, record, and check the result loads.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use tern_config::{InstalledPlugin, PluginContents, PluginSource};

use super::{PluginEnv, confirm, describe, plugin_allowed_by_policy, remove_dir};
use crate::error::{ConfigFailure, UsageError};

/// A fetched plugin folder; a clone is deleted when this is dropped.
pub(crate) struct Fetched {
    pub dir: PathBuf,
    clone: Option<PathBuf>,
}

impl Drop for Fetched {
    fn drop(&mut self) {
        if let Some(clone) = &self.clone {
            let _ = std::fs::remove_dir_all(clone);
        }
    }
}

/// Whether `source` names a git repository rather than a folder.
pub(crate) fn is_git_url(source: &str) -> bool {
    ["file://", "https://", "http://", "ssh://", "git://", "git@"]
        .iter()
        .any(|p| source.starts_with(p))
        || source.ends_with(".git")
}

/// `git clone --depth 1 URL` into a fresh folder under `parent`.
pub(crate) fn clone(url: &str, parent: &Path) -> anyhow::Result<Fetched> {
    tern_protocol::files::private_dir(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let dir = parent.join(format!(".fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let output = Command::new("git")
        // A URL from a marketplace file is someone else's text: no `ext::` command transport.
        .args(["-c", "protocol.ext.allow=never"])
        .args(["clone", "--quiet", "--depth", "1", "--"])
        .arg(url)
        .arg(&dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .context("cannot run `git`\nhint: install git, or give a local folder instead")?;
    let fetched = Fetched {
        dir: dir.clone(),
        clone: Some(dir),
    };
    if !output.status.success() {
        anyhow::bail!(
            "git clone {url} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(fetched)
}

/// Finds what `source` names: a folder, a git URL, or `MARKETPLACE/PLUGIN`. Returns the folder
/// and what to record as its source (so `update` can fetch it again).
fn fetch(penv: &PluginEnv, source: &str) -> anyhow::Result<(Fetched, String)> {
    if is_git_url(source) && !penv.cwd.join(source).exists() {
        return Ok((clone(source, &penv.plugins_dir())?, source.to_owned()));
    }
    let local = penv.cwd.join(source);
    if local.exists() {
        let dir = local
            .canonicalize()
            .with_context(|| format!("cannot use {}", local.display()))?;
        let recorded = dir.display().to_string();
        return Ok((Fetched { dir, clone: None }, recorded));
    }
    if let Some((market, plugin)) = source.split_once('/')
        && !market.is_empty()
        && !plugin.is_empty()
        && !plugin.contains('/')
    {
        let state = penv.read_state()?;
        let Some(record) = state.marketplaces.get(market) else {
            let known: Vec<&str> = state.marketplaces.keys().map(String::as_str).collect();
            return Err(UsageError(format!(
                "unknown marketplace `{market}` (added: {})\nhint: `tern plugin marketplace add \
                 PATH|GIT_URL` adds one; `tern plugin marketplace list` shows them",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ))
            .into());
        };
        let marketplace = tern_config::read_marketplace(&record.dir).map_err(ConfigFailure)?;
        let Some(entry) = marketplace.entry(plugin) else {
            let names: Vec<&str> = marketplace
                .plugins
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            return Err(UsageError(format!(
                "marketplace `{market}` has no plugin `{plugin}` (it lists: {})",
                names.join(", ")
            ))
            .into());
        };
        let fetched = match &entry.source {
            PluginSource::Path(dir) => Fetched {
                dir: dir.clone(),
                clone: None,
            },
            PluginSource::Git(url) => clone(url, &penv.plugins_dir())?,
        };
        return Ok((fetched, source.to_owned()));
    }
    Err(UsageError(format!(
        "no plugin at `{source}`: not a folder, a git URL or MARKETPLACE/PLUGIN\nhint: give the \
         plugin's folder, a repository URL (https://…, file://…, …/repo.git) or an added \
         marketplace's NAME/PLUGIN"
    ))
    .into())
}

/// Reads the fetched plugin as it will be once installed: `${CLAUDE_PLUGIN_ROOT}` is the final
/// folder.
fn read(penv: &PluginEnv, fetched: &Fetched) -> anyhow::Result<(PluginContents, PathBuf)> {
    let first = tern_config::read_plugin(&fetched.dir, &fetched.dir).map_err(ConfigFailure)?;
    let target = penv
        .plugins_dir()
        .join(format!("{}@{}", first.name, first.version));
    let contents = tern_config::read_plugin(&fetched.dir, &target).map_err(ConfigFailure)?;
    Ok((contents, target))
}

/// `tern plugin add SOURCE [--yes]`.
pub(super) fn add(
    penv: &PluginEnv,
    source: &str,
    yes: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let (fetched, recorded) = fetch(penv, source)?;
    let (contents, target) = read(penv, &fetched)?;
    let name = contents.name.clone();
    let mut state = penv.read_state()?;
    if let Some(existing) = state.plugins.get(&name) {
        return Err(UsageError(format!(
            "a plugin named `{name}` is already installed ({}@{} from {})\nhint: `tern plugin \
             update {name}` fetches it again; `tern plugin remove {name}` first to install this \
             one instead",
            name, existing.version, existing.source
        ))
        .into());
    }
    let config = penv.config()?;
    plugin_allowed_by_policy(&config, &name)?;
    for server in &contents.servers {
        if let Some(existing) = config.mcp_servers.get(&server.name) {
            return Err(UsageError(format!(
                "plugin {name} adds an MCP server `{}`, but a server of that name is already \
                 configured ({})\nhint: remove or rename that server, or the plugin's, then add \
                 it again",
                server.name, existing.defined_at
            ))
            .into());
        }
    }
    writeln!(
        out,
        "plugin {name}@{} ({} layout) from {recorded} adds:",
        contents.version,
        contents.layout.label()
    )?;
    describe(&contents, out)?;
    confirm(&name, yes, &format!("add {source}"), out)?;
    place(penv, &fetched, &target)?;
    let before = state.clone();
    state.plugins.insert(
        name.clone(),
        InstalledPlugin {
            version: contents.version.clone(),
            dir: target.clone(),
            source: recorded,
            enabled: true,
        },
    );
    penv.write_state(&state)?;
    if let Err(e) = penv.config() {
        penv.write_state(&before)?;
        remove_dir(penv, &target)?;
        return Err(e.context(format!(
            "plugin {name} not installed: the config would not load"
        )));
    }
    writeln!(
        out,
        "installed and enabled plugin {name}@{} in {}",
        contents.version,
        target.display()
    )?;
    Ok(0)
}

/// `tern plugin update NAME [--yes]`.
pub(super) fn update(
    penv: &PluginEnv,
    name: &str,
    yes: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut state = penv.read_state()?;
    let old = super::installed(&state, name)?.clone();
    let (fetched, recorded) = fetch(penv, &old.source)?;
    let (contents, target) = read(penv, &fetched)?;
    if contents.name != name {
        anyhow::bail!(
            "{} now holds plugin `{}`, not `{name}`\nhint: `tern plugin remove {name}`, then \
             `tern plugin add {}`",
            old.source,
            contents.name,
            old.source
        );
    }
    plugin_allowed_by_policy(&penv.config()?, name)?;
    writeln!(
        out,
        "plugin {name}: {} → {} from {recorded}; it adds:",
        old.version, contents.version
    )?;
    describe(&contents, out)?;
    if old.enabled {
        confirm(name, yes, &format!("update {name}"), out)?;
    }
    // The old copy goes first: the new one may have the same version (and folder).
    remove_dir(penv, &old.dir)?;
    place(penv, &fetched, &target)?;
    state.plugins.insert(
        name.to_owned(),
        InstalledPlugin {
            version: contents.version.clone(),
            dir: target,
            source: recorded,
            enabled: old.enabled,
        },
    );
    penv.write_state(&state)?;
    penv.config()
        .with_context(|| format!("plugin {name} was updated but the config does not load"))?;
    writeln!(out, "updated plugin {name} to {}", contents.version)?;
    Ok(0)
}

/// Copies (a folder) or moves (a clone) the plugin to `target`, without `.git`.
fn place(penv: &PluginEnv, fetched: &Fetched, target: &Path) -> anyhow::Result<()> {
    remove_dir(penv, target)?;
    let staging = penv.plugins_dir().join(format!(
        ".staging-{}",
        target
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    ));
    let _ = std::fs::remove_dir_all(&staging);
    copy_tree(&fetched.dir, &staging).with_context(|| {
        format!(
            "cannot copy {} into {}",
            fetched.dir.display(),
            staging.display()
        )
    })?;
    std::fs::rename(&staging, target)
        .with_context(|| format!("cannot move the plugin into {}", target.display()))?;
    Ok(())
}

/// Copies `from` into a new private folder `to`: files with their modes (scripts stay
/// executable), symlinks as symlinks, `.git` left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    tern_protocol::files::private_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_name() == ".git" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}
