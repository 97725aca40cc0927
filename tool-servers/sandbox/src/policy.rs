//! What a sandboxed command may do: the policy, as data.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How much of the filesystem a command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Mode {
    /// Nothing is writable (device files such as `/dev/null` aside).
    ReadOnly,
    /// Writes only inside the writable roots and `TMPDIR`; protected paths stay
    /// read-only. The default.
    #[default]
    WorkspaceWrite,
    /// No sandbox: the command runs with the server's own rights. Process
    /// cleanup (nothing outlives the call) still applies.
    FullAccess,
}

/// Whether a command may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Network {
    /// Only a private loopback interface of its own.
    #[default]
    Off,
    /// The host's network.
    On,
}

impl Mode {
    /// The name used on command lines and in config (`workspace-write`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Mode::ReadOnly),
            "workspace-write" => Ok(Mode::WorkspaceWrite),
            "full-access" => Ok(Mode::FullAccess),
            other => Err(format!(
                "unknown sandbox mode `{other}` (expected read-only, workspace-write or full-access)"
            )),
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Network::Off => "off",
            Network::On => "on",
        })
    }
}

impl FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Network::Off),
            "on" => Ok(Network::On),
            other => Err(format!(
                "unknown network setting `{other}` (expected on or off)"
            )),
        }
    }
}

/// The policy one sandbox enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: Mode,
    pub network: Network,
    /// Directories writable in [`Mode::WorkspaceWrite`] (the workspace roots).
    pub writable_roots: Vec<PathBuf>,
    /// Also writable in [`Mode::WorkspaceWrite`]: the commands' `TMPDIR`
    /// (`/tmp` when unset) and `/dev/shm`.
    pub temp_dirs: Vec<PathBuf>,
    /// Kept read-only even inside a writable root, in addition to
    /// [`builtin_protected`] (e.g. `$TERN_HOME`).
    pub protected: Vec<PathBuf>,
    /// Unix sockets a command may still reach when the network is off and the
    /// directory they live in (`/run`, `$XDG_RUNTIME_DIR`, the host's `/tmp`)
    /// is hidden, e.g. an ssh-agent the user wants to lend (`[sandbox]
    /// allow_sockets`).
    pub allow_sockets: Vec<PathBuf>,
    /// How much of each writable root's `.git` a command may change.
    pub git: GitWrites,
    /// Give commands a private `/dev/pts` (and `/dev/ptmx`), for callers that
    /// run them on a pseudo-terminal. Off: no pty can be opened at all.
    pub pty: bool,
}

/// How much of a repository's `.git` a sandboxed command may change.
///
/// Anything under `.git` can make the user's next `git` command, outside any
/// sandbox, run a program: `config` (`core.fsmonitor`), `hooks/`, a planted
/// `commondir` naming a hostile copy of the repository, `modules/*/config`,
/// `worktrees/*/`, `info/`. So the default keeps all of it read-only (as
/// Codex does); `git commit` and friends then need `[sandbox] git_writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GitWrites {
    /// `.git` is read-only as a whole (and, being a mount point in the view,
    /// cannot be renamed or replaced).
    #[default]
    None,
    /// Objects, refs, the index and logs are writable; `config`, `hooks`,
    /// `commondir`, `modules/`, `worktrees/` and `info/` stay read-only, and
    /// any of them a command creates is removed after the call and reported
    /// (see [`crate::GitGuard`]).
    Objects,
}

/// The entries of `.git` that stay read-only under [`GitWrites::Objects`]:
/// each names programs or repositories git uses later.
pub const GIT_CONTROL_ENTRIES: [&str; 6] = [
    "config",
    "hooks",
    "commondir",
    "modules",
    "worktrees",
    "info",
];

impl Policy {
    /// A policy with the usual temporary directories: `$TMPDIR` (else `/tmp`)
    /// and `/dev/shm`.
    pub fn new(mode: Mode, network: Network, writable_roots: Vec<PathBuf>) -> Self {
        let tmp = std::env::var_os("TMPDIR")
            .filter(|t| !t.is_empty())
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        Self {
            mode,
            network,
            writable_roots,
            temp_dirs: vec![tmp, PathBuf::from("/dev/shm")],
            protected: Vec::new(),
            allow_sockets: Vec::new(),
            git: GitWrites::None,
            pty: false,
        }
    }

    /// Every path that must stay read-only and exists right now: the built-in
    /// ones under each writable root plus [`Policy::protected`]. Computed per
    /// command, so a `.git` created by an earlier command is covered.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self
            .writable_roots
            .iter()
            .flat_map(|root| protected_in(root, self.git))
            .chain(self.protected.iter().cloned())
            .filter(|p| p.symlink_metadata().is_ok())
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// The paths under a writable root that a command must not change, because
/// changing them runs code later outside the sandbox: anything in `.git` can
/// make the user's next `git` command run a program (see [`GitWrites`]), and
/// `.tern/` holds tern's project config (which names MCP servers to start).
/// A `.git` *file* (worktrees, submodules) is protected itself: it points git
/// at the repository directory.
pub fn builtin_protected(root: &Path) -> Vec<PathBuf> {
    protected_in(root, GitWrites::None)
}

fn protected_in(root: &Path, git_writes: GitWrites) -> Vec<PathBuf> {
    let git = root.join(".git");
    let mut paths = vec![root.join(".tern")];
    if git.is_file() || git_writes == GitWrites::None {
        paths.push(git);
    } else {
        paths.extend(GIT_CONTROL_ENTRIES.iter().map(|e| git.join(e)));
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_networks_round_trip_through_their_names() {
        for mode in [Mode::ReadOnly, Mode::WorkspaceWrite, Mode::FullAccess] {
            assert_eq!(mode.to_string().parse::<Mode>(), Ok(mode));
        }
        for net in [Network::On, Network::Off] {
            assert_eq!(net.to_string().parse::<Network>(), Ok(net));
        }
        assert!(
            "none"
                .parse::<Mode>()
                .unwrap_err()
                .contains("workspace-write")
        );
    }

    #[test]
    fn protected_paths_exist_and_include_git_and_extras() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let home = root.join("tern-home");
        std::fs::create_dir(&home).unwrap();
        let mut policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![root.clone()]);
        policy.protected.push(home.clone());
        policy.protected.push(root.join("missing"));
        assert_eq!(
            policy.protected_paths(),
            vec![root.join(".git"), home.clone()]
        );
        // git_writes: only the control entries, those that exist.
        policy.git = GitWrites::Objects;
        assert_eq!(
            policy.protected_paths(),
            vec![root.join(".git/config"), root.join(".git/hooks"), home]
        );
    }

    #[test]
    fn a_git_file_is_protected_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![root.clone()]);
        assert_eq!(policy.protected_paths(), vec![root.join(".git")]);
    }
}
