//! The Landlock ruleset: read and execute everywhere, write only where the
//! policy says.
//!
//! The ruleset is created once, in the parent, and only its file descriptor
//! crosses into the child, which calls `landlock_restrict_self` on it.
//! Landlock rules only grant, they cannot carve a read-only hole out of a
//! writable directory: the protected paths inside writable roots are made
//! read-only by bind mounts instead (see `child/setup.rs`).
//!
//! With the mount view, the private `/tmp` and `/dev/shm` are tmpfs mounts
//! made in the child, inodes the parent cannot name (and Landlock does not
//! let a rule on a mount point cover what is mounted over it). So the child
//! builds its ruleset itself, after its mounts, from masks computed here
//! ([`ChildRuleset`]); a few system calls per command.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use crate::SandboxError;
use crate::policy::{Mode, Policy};

/// The newest ABI whose rights we ask for; older kernels get what they support
/// (best effort) and the probe reports the version they have.
const ABI_WANTED: ABI = ABI::V6;

/// What the ruleset covers besides the filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpRule {
    /// TCP is left to the network namespace (or allowed).
    Unrestricted,
    /// No TCP bind or connect: the fallback when the network is off but no
    /// network namespace could be made.
    Denied,
}

/// Where commands' temporary files go, which decides what the ruleset grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temp {
    /// The host's `TMPDIR` and `/dev/shm` (no mount view).
    HostDirs,
    /// The view's private `/tmp` and `/dev/shm`: granted by the child.
    PrivateView,
}

/// The access masks of a ruleset the child builds itself, for this kernel's ABI.
#[derive(Debug, Clone, Copy)]
pub struct ChildRuleset {
    /// `struct landlock_ruleset_attr`: handled fs, handled net, scoped.
    pub attr: [u64; 3],
    /// Rights granted on `/`.
    pub read: u64,
    /// Rights granted on `/dev` (device files: read, write, ioctl).
    pub file: u64,
    /// Rights granted on writable roots and the private tmp.
    pub all: u64,
}

/// The masks for the running kernel (`abi` from the probe).
pub fn child_ruleset(abi: u32, tcp: TcpRule) -> ChildRuleset {
    let wanted = ABI_WANTED as i32;
    let abi = ABI::from(i32::try_from(abi).unwrap_or(wanted).min(wanted));
    let net = match tcp {
        TcpRule::Denied => AccessNet::from_all(abi).bits(),
        TcpRule::Unrestricted => 0,
    };
    ChildRuleset {
        attr: [
            AccessFs::from_all(abi).bits(),
            net,
            Scope::from_all(abi).bits(),
        ],
        read: AccessFs::from_read(abi).bits(),
        file: AccessFs::from_file(abi).bits(),
        all: AccessFs::from_all(abi).bits(),
    }
}

/// Builds the ruleset fd for `policy`.
pub fn ruleset(policy: &Policy, tcp: TcpRule, temp: Temp) -> Result<OwnedFd, SandboxError> {
    let err = |e: landlock::RulesetError| SandboxError::Landlock(e.to_string());
    let abi = ABI_WANTED;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if tcp == TcpRule::Denied {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    // Signals and abstract UNIX sockets stay inside the sandbox.
    ruleset = ruleset.scope(Scope::from_all(abi)).map_err(err)?;
    let writable: Vec<PathBuf> = match policy.mode {
        Mode::ReadOnly | Mode::FullAccess => Vec::new(),
        Mode::WorkspaceWrite => policy
            .writable_roots
            .iter()
            .chain(match temp {
                Temp::HostDirs => policy.temp_dirs.as_slice(),
                Temp::PrivateView => &[],
            })
            .cloned()
            .collect(),
    };
    let created = ruleset
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(err)?
        // Device files: /dev/null, /dev/tty, /dev/pts/*: read, write, ioctl.
        .add_rules(path_beneath_rules(["/dev"], AccessFs::from_file(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
        .map_err(err)?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| SandboxError::Landlock("the kernel does not support Landlock".to_string()))
}
