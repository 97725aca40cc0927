//! `[sandbox]`: the OS sandbox the built-in shell server runs commands under (issue 15).
//!
//! ```toml
//! [sandbox]
//! mode = "workspace-write"   # read-only | workspace-write | full-access
//! network = "off"            # off | on
//! writable = ["~/.cache/cargo"]
//! protect = ["~/.config/git"]
//! git_writes = false         # true: commands may commit (git's control files stay read-only)
//! allow_sockets = ["~/.ssh/agent.sock"]  # unix sockets reachable with the network off
//! ```
//!
//! Mode and network are `tern_sandbox`'s own types, so the names here are the ones
//! `tern-shell --sandbox` takes. Paths are absolute or start with `~/`: a relative path would
//! mean something different in every directory tern is started from.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tern_sandbox::{Mode, Network};
use toml::Spanned;

use crate::check::invalid;
use crate::error::{Location, Result};
use crate::expand::EnvLookup;
use crate::locate::SourceText;

/// The resolved `[sandbox]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// `mode` (default `workspace-write`).
    pub mode: Mode,
    /// `network` (default `off`).
    pub network: Network,
    /// `writable`: directories writable besides the workspace root and `TMPDIR`.
    pub writable: Vec<PathBuf>,
    /// `protect`: paths kept read-only even inside a writable directory. `$TERN_HOME` is
    /// always the last entry, listed or not: a command that could rewrite tern's own config
    /// would choose the servers of the next run.
    pub protect: Vec<PathBuf>,
    /// `git_writes` (default false): `.git` is read-only as a whole unless this is set; with
    /// it, objects, refs and the index are writable and git's control files are not.
    pub git_writes: bool,
    /// `allow_sockets`: unix sockets commands may connect to with the network off (the view
    /// hides `/run`, `/var/run`, `$XDG_RUNTIME_DIR` and the host's `/tmp` otherwise).
    pub allow_sockets: Vec<PathBuf>,
}

/// `mode`, or `ceiling` when that is tighter: read-only < workspace-write < full-access.
pub(crate) fn at_most(mode: Mode, ceiling: Mode) -> Mode {
    let looseness = |m: Mode| match m {
        Mode::ReadOnly => 0,
        Mode::WorkspaceWrite => 1,
        Mode::FullAccess => 2,
    };
    if looseness(mode) <= looseness(ceiling) {
        mode
    } else {
        ceiling
    }
}

/// `[sandbox]` exactly as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSandbox {
    mode: Option<Spanned<String>>,
    network: Option<Spanned<String>>,
    writable: Option<Vec<Spanned<String>>>,
    protect: Option<Vec<Spanned<String>>>,
    git_writes: Option<bool>,
    allow_sockets: Option<Vec<Spanned<String>>>,
}

/// A path as written and where.
#[derive(Debug, Clone)]
pub(crate) struct PathEntry {
    text: String,
    at: Location,
}

/// `[sandbox]` of one or more layers: later layers win key by key, a list replaces a list.
#[derive(Debug, Clone, Default)]
pub(crate) struct SandboxLayer {
    mode: Option<Mode>,
    network: Option<Network>,
    writable: Option<Vec<PathEntry>>,
    protect: Option<Vec<PathEntry>>,
    git_writes: Option<bool>,
    allow_sockets: Option<Vec<PathEntry>>,
}

impl SandboxLayer {
    /// Checks one layer's `[sandbox]`: names of modes, and paths that are absolute or `~/`.
    pub(crate) fn from_raw(raw: RawSandbox, source: &SourceText<'_>) -> Result<Self> {
        let at = |s: &Spanned<String>| source.locate(s.span().start);
        fn parse<T: std::str::FromStr<Err = String>>(
            source: &SourceText<'_>,
            key: &str,
            value: &Spanned<String>,
        ) -> Result<T> {
            value.get_ref().parse().map_err(|message: String| {
                invalid(
                    source.locate(value.span().start),
                    &format!("sandbox.{key}"),
                    &message,
                )
            })
        }
        let paths = |key: &str, list: Option<Vec<Spanned<String>>>| -> Result<Option<_>> {
            list.map(|items| {
                items
                    .iter()
                    .map(|item| {
                        let text = item.get_ref();
                        if text.starts_with("~/")
                            || text == "~"
                            || PathBuf::from(text).is_absolute()
                        {
                            Ok(PathEntry {
                                text: text.clone(),
                                at: at(item),
                            })
                        } else {
                            Err(invalid(
                                at(item),
                                &format!("sandbox.{key}"),
                                &format!(
                                    "{text:?} is relative; write an absolute path or one starting \
                                     with ~/"
                                ),
                            ))
                        }
                    })
                    .collect()
            })
            .transpose()
        };
        Ok(Self {
            mode: raw
                .mode
                .as_ref()
                .map(|m| parse(source, "mode", m))
                .transpose()?,
            network: raw
                .network
                .as_ref()
                .map(|n| parse(source, "network", n))
                .transpose()?,
            writable: paths("writable", raw.writable)?,
            protect: paths("protect", raw.protect)?,
            git_writes: raw.git_writes,
            allow_sockets: paths("allow_sockets", raw.allow_sockets)?,
        })
    }

    /// Lays `later` over `self`.
    pub(crate) fn merge(&mut self, later: Self) {
        if later.mode.is_some() {
            self.mode = later.mode;
        }
        if later.network.is_some() {
            self.network = later.network;
        }
        if later.writable.is_some() {
            self.writable = later.writable;
        }
        if later.protect.is_some() {
            self.protect = later.protect;
        }
        if later.git_writes.is_some() {
            self.git_writes = later.git_writes;
        }
        if later.allow_sockets.is_some() {
            self.allow_sockets = later.allow_sockets;
        }
    }

    /// The section with defaults filled in, `~/` expanded and `tern_home` protected.
    pub(crate) fn resolve(self, env: EnvLookup<'_>, tern_home: &Path) -> Result<SandboxConfig> {
        let expand = |list: Option<Vec<PathEntry>>, key: &str| -> Result<Vec<PathBuf>> {
            list.unwrap_or_default()
                .into_iter()
                .map(|entry| match entry.text.strip_prefix('~') {
                    Some(rest) => {
                        let home = env("HOME").filter(|h| !h.is_empty()).ok_or_else(|| {
                            invalid(
                                entry.at.clone(),
                                &format!("sandbox.{key}"),
                                "starts with ~ but HOME is not set",
                            )
                        })?;
                        Ok(PathBuf::from(home).join(rest.trim_start_matches('/')))
                    }
                    None => Ok(PathBuf::from(entry.text)),
                })
                .collect()
        };
        let mut protect = expand(self.protect, "protect")?;
        protect.retain(|p| p != tern_home);
        protect.push(tern_home.to_path_buf());
        Ok(SandboxConfig {
            mode: self.mode.unwrap_or_default(),
            network: self.network.unwrap_or_default(),
            writable: expand(self.writable, "writable")?,
            protect,
            git_writes: self.git_writes.unwrap_or(false),
            allow_sockets: expand(self.allow_sockets, "allow_sockets")?,
        })
    }
}
