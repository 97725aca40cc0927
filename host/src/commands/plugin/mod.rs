//! `tern plugin add | list | remove | update | enable | disable | marketplace` (issue 19,
//! item 4). The formats and how a plugin becomes a config layer are in `tern_config`'s
//! `plugins` module; this module fetches, copies, asks and records.
//!
//! Layout under `$TERN_HOME/plugins/`: `NAME@VERSION/` (the installed copy, without `.git`),
//! `installed.json` (the state, `0600`), `marketplaces/NAME/` (cloned marketplaces).

mod install;
mod marketplace;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use tern_config::{Config, ConfigPaths, LoadOptions, PluginContents, PluginState};

use crate::cli::{MarketplaceCommand, PluginCommand};
use crate::error::{ConfigFailure, UsageError};

/// What every plugin command works with: `$TERN_HOME`, the working directory and the config
/// load options (a config is loaded only when a command needs one: `remove` must work even
/// when a broken plugin makes the config fail to load).
pub(crate) struct PluginEnv {
    pub cwd: PathBuf,
    pub paths: ConfigPaths,
    pub load: LoadOptions,
    pub env: std::collections::BTreeMap<String, String>,
}

impl PluginEnv {
    fn plugins_dir(&self) -> PathBuf {
        self.paths.tern_home.join("plugins")
    }

    fn read_state(&self) -> anyhow::Result<PluginState> {
        Ok(PluginState::read(&self.paths.tern_home).map_err(ConfigFailure)?)
    }

    fn write_state(&self, state: &PluginState) -> anyhow::Result<()> {
        let path = PluginState::path(&self.paths.tern_home);
        tern_protocol::files::write_atomic(&path, state.to_json().as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The config as it loads now (with every enabled plugin).
    fn config(&self) -> anyhow::Result<Config> {
        let lookup = |k: &str| self.env.get(k).cloned();
        Ok(Config::load(&self.paths, &self.load, &lookup).map_err(ConfigFailure)?)
    }
}

/// Runs one `tern plugin …` command.
pub fn run(
    cd: Option<&Path>,
    load: &LoadOptions,
    command: PluginCommand,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = cd.map_or(here.clone(), |d| here.join(d));
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let lookup = |k: &str| env.get(k).cloned();
    let paths = ConfigPaths::resolve(&cwd, &lookup).map_err(ConfigFailure)?;
    tern_protocol::files::prepare_home(&paths.tern_home)
        .with_context(|| format!("cannot prepare {}", paths.tern_home.display()))?;
    let penv = PluginEnv {
        cwd,
        paths,
        load: load.clone(),
        env,
    };
    match command {
        PluginCommand::Add { source, yes } => install::add(&penv, &source, yes, out),
        PluginCommand::Update { name, yes } => install::update(&penv, &name, yes, out),
        PluginCommand::List => list(&penv, out),
        PluginCommand::Remove { name } => remove(&penv, &name, out),
        PluginCommand::Enable { name, yes } => set_enabled(&penv, &name, Some(yes), out),
        PluginCommand::Disable { name } => set_enabled(&penv, &name, None, out),
        PluginCommand::Marketplace { command } => match command {
            MarketplaceCommand::Add { source } => marketplace::add(&penv, &source, out),
            MarketplaceCommand::List => marketplace::list(&penv, out),
            MarketplaceCommand::Remove { name } => marketplace::remove(&penv, &name, out),
        },
    }
}

/// The one place the administrator's managed policy decides whether a plugin may be installed
/// or enabled (`[policy] allowed_plugins`). `Config::load` also skips an enabled plugin the
/// policy came to forbid later, with a notice.
pub fn plugin_allowed_by_policy(config: &Config, name: &str) -> anyhow::Result<()> {
    match config.managed.as_ref().and_then(|p| p.plugin_blocked(name)) {
        None => Ok(()),
        Some(reason) => anyhow::bail!(
            "plugin `{name}` may not be enabled: {reason}\n\
             hint: ask your administrator to add it to `allowed_plugins`"
        ),
    }
}

/// Writes what a plugin adds, for the person deciding whether to enable it.
pub(crate) fn describe(contents: &PluginContents, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(d) = contents.description.as_deref().filter(|d| !d.is_empty()) {
        writeln!(out, "  {d}")?;
    }
    if contents.servers.is_empty() {
        writeln!(out, "  MCP servers: none")?;
    } else {
        writeln!(out, "  MCP servers (run as you):")?;
        for s in &contents.servers {
            writeln!(out, "    {}: {}", s.name, s.launch)?;
        }
    }
    if contents.hooks.is_empty() {
        writeln!(out, "  hooks: none")?;
    } else {
        writeln!(out, "  hooks (run as you):")?;
        for h in &contents.hooks {
            let matcher = h
                .matcher
                .as_deref()
                .map(|m| format!(" [{m}]"))
                .unwrap_or_default();
            writeln!(out, "    {}{matcher}: {}", h.event, h.command)?;
        }
    }
    let list = |names: &[String], prefix: &str| {
        if names.is_empty() {
            "none".to_owned()
        } else {
            names
                .iter()
                .map(|n| format!("{prefix}{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(out, "  skills: {}", list(&contents.skills, ""))?;
    writeln!(out, "  commands: {}", list(&contents.commands, "/"))?;
    // Claude Code sub-agents become agent profiles: what `agent__run` takes as `profile`.
    writeln!(
        out,
        "  agents (profiles for agent__run): {}",
        list(&contents.agents, "")
    )?;
    for w in &contents.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

/// Asks whether to enable `name` (on a terminal), or takes `--yes`; without either, an error
/// that says how to go on.
pub(crate) fn confirm(
    name: &str,
    yes: bool,
    verb: &str,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(UsageError(format!(
            "not enabling plugin {name}: there is no terminal to ask on\nhint: read what it adds \
             (above), then run `tern plugin {verb} --yes` to enable it without asking"
        ))
        .into());
    }
    write!(out, "Enable plugin {name}? [y/N] ")?;
    out.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(UsageError(format!("plugin {name} not enabled: you declined")).into())
    }
}

/// `tern plugin list`.
fn list(penv: &PluginEnv, out: &mut dyn Write) -> anyhow::Result<i32> {
    let state = penv.read_state()?;
    if state.plugins.is_empty() {
        writeln!(
            out,
            "no plugins installed\nhint: `tern plugin add PATH|GIT_URL|MARKETPLACE/PLUGIN`"
        )?;
        return Ok(0);
    }
    for (name, p) in &state.plugins {
        let status = if p.enabled { "enabled" } else { "disabled" };
        writeln!(out, "{name}@{}  {status}  from {}", p.version, p.source)?;
        match tern_config::read_plugin(&p.dir, &p.dir) {
            Ok(contents) => describe(&contents, out)?,
            Err(e) => writeln!(out, "  broken: {e}")?,
        }
    }
    Ok(0)
}

/// The entry for `name`, or an error listing what is installed.
fn installed<'a>(
    state: &'a PluginState,
    name: &str,
) -> anyhow::Result<&'a tern_config::InstalledPlugin> {
    state.plugins.get(name).ok_or_else(|| {
        let names: Vec<&str> = state.plugins.keys().map(String::as_str).collect();
        UsageError(format!(
            "no plugin named `{name}` is installed (installed: {})\nhint: `tern plugin list`",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ))
        .into()
    })
}

/// Deletes an installed copy — only one inside `$TERN_HOME/plugins`, whatever the state says.
pub(crate) fn remove_dir(penv: &PluginEnv, dir: &Path) -> anyhow::Result<()> {
    let plugins = penv.plugins_dir();
    if dir.parent() != Some(plugins.as_path()) {
        anyhow::bail!(
            "refusing to delete {}: not a plugin folder in {}",
            dir.display(),
            plugins.display()
        );
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot delete {}", dir.display())),
    }
}

/// `tern plugin remove NAME`.
fn remove(penv: &PluginEnv, name: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut state = penv.read_state()?;
    let plugin = installed(&state, name)?.clone();
    state.plugins.remove(name);
    penv.write_state(&state)?;
    remove_dir(penv, &plugin.dir)?;
    writeln!(
        out,
        "removed plugin {name}@{}: its servers, hooks, skills, commands and agents are gone ({} deleted)",
        plugin.version,
        plugin.dir.display()
    )?;
    Ok(0)
}

/// `tern plugin enable NAME` (`yes` is `Some`) and `disable NAME` (`None`).
fn set_enabled(
    penv: &PluginEnv,
    name: &str,
    enable: Option<bool>,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut state = penv.read_state()?;
    let plugin = installed(&state, name)?.clone();
    if let Some(yes) = enable {
        let contents = tern_config::read_plugin(&plugin.dir, &plugin.dir).map_err(ConfigFailure)?;
        plugin_allowed_by_policy(&penv.config()?, name)?;
        writeln!(out, "plugin {name}@{} adds:", plugin.version)?;
        describe(&contents, out)?;
        confirm(name, yes, &format!("enable {name}"), out)?;
    }
    let before = state.clone();
    if let Some(p) = state.plugins.get_mut(name) {
        p.enabled = enable.is_some();
    }
    penv.write_state(&state)?;
    if enable.is_some()
        && let Err(e) = penv.config()
    {
        penv.write_state(&before)?;
        return Err(e.context(format!("plugin {name} left disabled")));
    }
    let now = if enable.is_some() {
        "enabled"
    } else {
        "disabled"
    };
    writeln!(out, "plugin {name} {now}")?;
    Ok(0)
}
