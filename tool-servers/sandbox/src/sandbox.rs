//! A policy turned into a plan for this kernel, applied to commands.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::Arc;

use crate::SandboxError;
use crate::child::{self, Fixed, Plan, Session, SharedNamespaces, namespaces};
use crate::landlock_rules::{self, TcpRule};
use crate::policy::{Mode, Network, Policy};
use crate::seccomp;
use crate::support::Support;
use crate::view_plan::{self, ViewPlan, c_path, kept_mount_flags, socket_dirs};

/// A layer the policy asked for that this kernel cannot provide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Degradation {
    /// The missing layer, e.g. "network namespace".
    pub layer: &'static str,
    /// Why it is missing (the probe's error).
    pub reason: String,
    /// What is not enforced because of it, and what is used instead.
    pub consequence: &'static str,
}

impl fmt::Display for Degradation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} unavailable ({}): {}",
            self.layer, self.reason, self.consequence
        )
    }
}

/// A policy prepared for this kernel: build once, apply to many commands.
#[derive(Debug)]
pub struct Sandbox {
    policy: Policy,
    fixed: Arc<Fixed>,
    /// `CLONE_NEW*` flags, `/proc` and loopback choices, when namespaces are used.
    namespaces: Option<(libc::c_int, bool, bool)>,
    /// The user (and, network off, network) namespace every command joins,
    /// when it could be made; else each command creates its own.
    shared: Option<Arc<SharedNamespaces>>,
    /// Directories the mount view hides, when the kernel can build the view.
    view: Option<ViewPlan>,
    degradations: Vec<Degradation>,
}

impl fmt::Debug for SharedNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedNamespaces")
    }
}

impl fmt::Debug for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixed")
            .field(
                "landlock",
                &(self.landlock.is_some() || self.landlock_in_child.is_some()),
            )
            .field("seccomp_instructions", &self.seccomp.as_ref().map(Vec::len))
            .field("drop_capabilities", &self.drop_capabilities)
            .finish()
    }
}

impl Sandbox {
    /// Prepares `policy` with the layers `support` says this kernel has. A
    /// missing layer is recorded in [`Sandbox::degradations`] (say it to the
    /// user once) and the strongest remaining combination is used.
    pub fn new(policy: Policy, support: &Support) -> Result<Self, SandboxError> {
        let mut degradations = Vec::new();
        if policy.mode == Mode::FullAccess {
            return Ok(Self {
                policy,
                fixed: Arc::new(Fixed {
                    landlock: None,
                    landlock_in_child: None,
                    seccomp: None,
                    drop_capabilities: false,
                }),
                namespaces: None,
                shared: None,
                view: None,
                degradations,
            });
        }
        let network_off = policy.network == Network::Off;
        let namespaces = match &support.namespaces {
            Ok(()) => {
                let mut flags = libc::CLONE_NEWUSER
                    | libc::CLONE_NEWPID
                    | libc::CLONE_NEWNS
                    | libc::CLONE_NEWIPC;
                let mut private_network = false;
                if network_off {
                    match &support.network_namespace {
                        Ok(()) => {
                            flags |= libc::CLONE_NEWNET;
                            private_network = true;
                        }
                        Err(reason) => degradations.push(Degradation {
                            layer: "network namespace",
                            reason: reason.clone(),
                            consequence: "network off is enforced by Landlock (TCP, ABI 4+) and \
                                seccomp (no Internet sockets) instead; UDP over an existing \
                                socket type is not covered",
                        }),
                    }
                }
                let mount_proc = match &support.proc_mount {
                    Ok(()) => true,
                    Err(reason) => {
                        degradations.push(Degradation {
                            layer: "fresh /proc",
                            reason: reason.clone(),
                            consequence: "commands see the host's /proc (process list); reading \
                                other processes' environ is still refused by Landlock",
                        });
                        false
                    }
                };
                Some((flags, mount_proc, private_network))
            }
            Err(reason) => {
                degradations.push(Degradation {
                    layer: "user/pid/mount namespaces",
                    reason: reason.clone(),
                    consequence: "commands can see the host's processes; protected paths inside \
                        writable roots (.git/hooks, .git/config, .tern) are writable; network \
                        off relies on Landlock and seccomp; background processes are still \
                        killed when the call ends",
                });
                None
            }
        };
        let view = match (&namespaces, &support.mount_view) {
            (None, _) => None,
            (Some(_), Ok(())) => Some(ViewPlan {
                hidden: if network_off {
                    socket_dirs(&policy)
                } else {
                    Vec::new()
                },
            }),
            (Some(_), Err(reason)) => {
                degradations.push(Degradation {
                    layer: "read-only mount view",
                    reason: reason.clone(),
                    consequence: "metadata outside the workspace (chmod, utime, xattr) is not \
                        confined, TMPDIR and /dev/shm are the host's, host devices and unix \
                        sockets are reachable; writes are still confined by Landlock",
                });
                None
            }
        };
        let private_network = namespaces.is_some_and(|(_, _, net)| net);
        let network_fallback = network_off && !private_network;
        let mut landlock_in_child = None;
        let landlock = match support.landlock_abi {
            Some(abi) if view.is_some() => {
                let tcp = if network_fallback {
                    TcpRule::Denied
                } else {
                    TcpRule::Unrestricted
                };
                landlock_in_child = Some(landlock_rules::child_ruleset(abi, tcp));
                None
            }
            Some(abi) => {
                if network_fallback && abi < 4 {
                    degradations.push(Degradation {
                        layer: "Landlock network rules",
                        reason: format!("Landlock ABI {abi} < 4"),
                        consequence: "TCP is blocked only by the seccomp socket rule",
                    });
                }
                let tcp = if network_fallback {
                    TcpRule::Denied
                } else {
                    TcpRule::Unrestricted
                };
                let temp = if view.is_some() {
                    landlock_rules::Temp::PrivateView
                } else {
                    landlock_rules::Temp::HostDirs
                };
                Some(landlock_rules::ruleset(&policy, tcp, temp)?)
            }
            None => {
                degradations.push(Degradation {
                    layer: "Landlock",
                    reason: "not built into the kernel or not enabled at boot".to_string(),
                    consequence: "writes are NOT confined to the workspace (only the read-only \
                        binds of protected paths hold)",
                });
                None
            }
        };
        let seccomp = match &support.seccomp {
            Ok(()) => Some(seccomp::program(network_fallback)),
            Err(reason) => {
                degradations.push(Degradation {
                    layer: "seccomp",
                    reason: reason.clone(),
                    consequence: "mount, namespace and keyring system calls are not filtered",
                });
                None
            }
        };
        let shared = if namespaces.is_some() {
            let maps = self::namespaces(0, false, false, Vec::new());
            match child::shared_namespaces(maps.uid_map, maps.gid_map, private_network) {
                Ok(shared) => Some(Arc::new(shared)),
                Err(e) => {
                    // Just as isolated: each command makes its own, a bit slower.
                    tracing::debug!("no shared namespaces ({e}); one per command");
                    None
                }
            }
        } else {
            None
        };
        Ok(Self {
            policy,
            fixed: Arc::new(Fixed {
                landlock,
                landlock_in_child,
                seccomp,
                drop_capabilities: true,
            }),
            namespaces,
            shared,
            view,
            degradations,
        })
    }

    /// The policy this sandbox enforces.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Layers asked for but missing on this kernel (empty when all hold).
    pub fn degradations(&self) -> &[Degradation] {
        &self.degradations
    }

    /// One line for logs: mode, network and the layers in force.
    pub fn summary(&self) -> String {
        let mut layers = Vec::new();
        if let Some((flags, proc, _)) = self.namespaces {
            layers.push(if flags & libc::CLONE_NEWNET != 0 {
                "user/pid/mount/ipc/net namespaces"
            } else {
                "user/pid/mount/ipc namespaces"
            });
            if proc {
                layers.push("fresh /proc");
            }
        }
        if self.view.is_some() {
            layers.push("read-only view with private /tmp and /dev");
        }
        if self.fixed.landlock.is_some() || self.fixed.landlock_in_child.is_some() {
            layers.push("Landlock");
        }
        if self.fixed.seccomp.is_some() {
            layers.push("seccomp");
        }
        if layers.is_empty() {
            layers.push("process cleanup only");
        }
        format!(
            "sandbox {} (network {}): {}",
            self.policy.mode,
            self.policy.network,
            layers.join(", ")
        )
    }

    /// The `TMPDIR` commands get: the private tmp of the mount view. `None`
    /// without the view (commands keep the caller's `TMPDIR`).
    pub fn private_tmp(&self) -> Option<&'static Path> {
        self.view.as_ref().map(|_| Path::new("/tmp"))
    }

    /// Makes `cmd` start under this sandbox. The process `cmd.spawn()`
    /// returns is the supervisor: its exit status is the command's, and
    /// [`abort`] on its pid kills everything the command started.
    pub fn configure(&self, cmd: &mut Command, session: Session) -> Result<(), SandboxError> {
        self.configure_hiding(cmd, session, &[])
    }

    /// [`Sandbox::configure`], and the command sees each of `hidden` (files
    /// or directories that exist now, e.g. matches of the host's file deny
    /// rules) as an empty, read-only file or directory — whatever program or
    /// spelling reads it. Without the mount view this is an error: a caller
    /// that asked for a path to be hidden must not run the command with it
    /// readable.
    pub fn configure_hiding(
        &self,
        cmd: &mut Command,
        session: Session,
        hidden: &[PathBuf],
    ) -> Result<(), SandboxError> {
        if !hidden.is_empty() && self.view.is_none() {
            return Err(SandboxError::Path {
                path: hidden[0].display().to_string(),
                reason: "cannot be hidden from the command: this kernel gives no mount view \
                    (see `tern mcp doctor`)"
                    .to_string(),
            });
        }
        let namespaces = match self.namespaces {
            None => None,
            Some((flags, mount_proc, loopback)) => {
                let extra = if self.view.is_some() {
                    libc::MS_NOSUID | libc::MS_NODEV
                } else {
                    0
                };
                // In the view, a protected path outside every root is read-only (or
                // hidden, under the host's /tmp) already.
                let roots: Vec<PathBuf> = self
                    .policy
                    .writable_roots
                    .iter()
                    .filter_map(|r| r.canonicalize().ok())
                    .collect();
                let read_only = self
                    .policy
                    .protected_paths()
                    .iter()
                    .filter(|p| self.view.is_none() || roots.iter().any(|r| p.starts_with(r)))
                    .map(|p| Ok((c_path(p)?, kept_mount_flags(p) | extra)))
                    .collect::<Result<Vec<_>, SandboxError>>()?;
                let mut ns = namespaces(flags, mount_proc, loopback, read_only);
                ns.join = self.shared.clone();
                if let Some(plan) = &self.view {
                    let inherited = cmd.get_current_dir().is_none();
                    let cwd = match cmd.get_current_dir() {
                        Some(dir) => std::path::absolute(dir),
                        None => std::env::current_dir(),
                    }?;
                    let mut view = view_plan::view_for(
                        &self.policy,
                        plan,
                        session == Session::Inherit,
                        hidden,
                        c_path(&cwd)?,
                    )?;
                    if inherited {
                        view.cwd_fallback = Some(view_plan::fallback_cwd(&self.policy)?);
                    }
                    ns.view = Some(view);
                    cmd.env("TMPDIR", "/tmp");
                }
                Some(ns)
            }
        };
        child::install(
            cmd,
            Plan {
                session,
                namespaces,
                fixed: self.fixed.clone(),
            },
        );
        Ok(())
    }

    /// Runs `cmd` (stdio as configured on it, inherited by default) under this
    /// sandbox and waits for it: the library side of `tern sandbox -- CMD`.
    pub fn run_command(
        &self,
        cmd: &mut Command,
        session: Session,
    ) -> Result<ExitStatus, SandboxError> {
        self.configure(cmd, session)?;
        Ok(cmd.status()?)
    }
}

/// Kills a sandboxed command and everything it started, given the pid of the
/// process `spawn` returned (its supervisor). Used on timeout, cancellation
/// and when a call is abandoned; a supervisor that is already gone is fine.
pub fn abort(supervisor_pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(supervisor_pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    match child::signal_abort(pid) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
        Err(e) => tracing::warn!(pid, "cannot abort the sandboxed command: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(what: &str) -> Result<(), String> {
        Err(format!("{what} refused by the test"))
    }

    #[test]
    fn a_missing_layer_is_reported_and_the_rest_still_apply() {
        let mut support = Support::detect();
        support.network_namespace = missing("netns");
        let policy = Policy::new(
            Mode::WorkspaceWrite,
            Network::Off,
            vec!["/nonexistent".into()],
        );
        let sandbox = Sandbox::new(policy, &support).unwrap();
        let layers: Vec<&str> = sandbox.degradations().iter().map(|d| d.layer).collect();
        assert_eq!(layers, ["network namespace"]);
        assert!(
            sandbox.degradations()[0]
                .to_string()
                .contains("netns refused by the test")
        );
        // Network off falls back to Landlock TCP rules and the seccomp socket rule.
        let summary = sandbox.summary();
        assert!(
            summary.contains("Landlock") && summary.contains("seccomp"),
            "{summary}"
        );
        assert!(
            summary.contains("user/pid/mount/ipc namespaces"),
            "{summary}"
        );

        support.namespaces = missing("userns");
        support.landlock_abi = None;
        let policy = Policy::new(Mode::ReadOnly, Network::Off, Vec::new());
        let sandbox = Sandbox::new(policy, &support).unwrap();
        let layers: Vec<&str> = sandbox.degradations().iter().map(|d| d.layer).collect();
        assert_eq!(layers, ["user/pid/mount namespaces", "Landlock"]);
        assert!(
            sandbox.summary().ends_with(": seccomp"),
            "{}",
            sandbox.summary()
        );
    }

    #[test]
    fn full_access_asks_for_nothing_and_reports_nothing() {
        let support = Support {
            namespaces: missing("userns"),
            proc_mount: missing("proc"),
            network_namespace: missing("netns"),
            mount_view: missing("view"),
            landlock_abi: None,
            seccomp: missing("seccomp"),
        };
        let policy = Policy::new(Mode::FullAccess, Network::Off, Vec::new());
        let sandbox = Sandbox::new(policy, &support).unwrap();
        assert!(sandbox.degradations().is_empty());
        assert!(sandbox.summary().ends_with("process cleanup only"));
    }
}
