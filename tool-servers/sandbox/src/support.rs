//! What this machine's kernel can enforce, found by trying it.
//!
//! Kernel version numbers and sysctl files lie (distributions backport, LSMs
//! such as AppArmor refuse user namespaces that the kernel offers), so each
//! namespace layer is probed by starting a real process under it.

use std::fmt;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::child::{self, Fixed, Namespaces, Plan, Session, namespaces};
use crate::seccomp;

/// The sandbox layers this kernel supports; each `Err` says why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// New user, PID, mount and IPC namespaces (as an unprivileged user too).
    pub namespaces: Result<(), String>,
    /// A fresh `/proc` inside the new PID namespace.
    pub proc_mount: Result<(), String>,
    /// A new network namespace.
    pub network_namespace: Result<(), String>,
    /// The read-only mount view with a private `/tmp` and `/dev`
    /// (`open_tree`, `move_mount`, `mount_setattr`: Linux 5.12+).
    pub mount_view: Result<(), String>,
    /// The kernel's Landlock ABI version (`None`: no Landlock).
    pub landlock_abi: Option<u32>,
    /// A seccomp filter can be installed.
    pub seccomp: Result<(), String>,
}

/// The Landlock ABI version of the running kernel (`None`: no Landlock).
pub fn landlock_abi() -> Option<u32> {
    child::landlock_abi()
}

impl Support {
    /// Probes every layer by starting `true` under it (a few milliseconds).
    pub fn detect() -> Self {
        let ns = |flags: libc::c_int, mount_proc: bool| {
            probe(Some(namespaces(flags, mount_proc, false, Vec::new())), None)
        };
        let base =
            libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_NEWIPC;
        let namespaces = ns(base, false);
        let proc_mount = match &namespaces {
            Ok(()) => ns(base, true),
            Err(_) => Err("needs the namespaces above".to_string()),
        };
        let network_namespace = match &namespaces {
            Ok(()) => probe(
                Some(self::namespaces(
                    base | libc::CLONE_NEWNET,
                    false,
                    true,
                    Vec::new(),
                )),
                None,
            ),
            Err(_) => Err("needs the namespaces above".to_string()),
        };
        let mount_view = match &proc_mount {
            Ok(()) => {
                let mut ns = self::namespaces(base, true, false, Vec::new());
                ns.view = Some(crate::child::view::View {
                    attach: Vec::new(),
                    hidden: Vec::new(),
                    pinned: Vec::new(),
                    masked: Vec::new(),
                    pty: false,
                    tty: false,
                    writable_tmp: true,
                    cwd: c"/".to_owned(),
                    cwd_fallback: None,
                });
                probe(Some(ns), None)
            }
            Err(_) => Err("needs the namespaces and /proc above".to_string()),
        };
        let seccomp = if seccomp::SUPPORTED {
            probe(None, Some(seccomp::program(false)))
        } else {
            Err(format!(
                "no seccomp filter for the {} architecture",
                std::env::consts::ARCH
            ))
        };
        Self {
            namespaces,
            proc_mount,
            network_namespace,
            mount_view,
            landlock_abi: landlock_abi(),
            seccomp,
        }
    }

    /// True when every layer is available.
    pub fn is_complete(&self) -> bool {
        self.namespaces.is_ok()
            && self.proc_mount.is_ok()
            && self.network_namespace.is_ok()
            && self.mount_view.is_ok()
            && self.landlock_abi.is_some()
            && self.seccomp.is_ok()
    }
}

/// One line per layer, for `tern mcp doctor` and startup logs.
impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = |f: &mut fmt::Formatter<'_>, name: &str, r: &Result<(), String>| match r {
            Ok(()) => writeln!(f, "{name}: yes"),
            Err(e) => writeln!(f, "{name}: no ({e})"),
        };
        line(f, "user/pid/mount/ipc namespaces", &self.namespaces)?;
        line(f, "fresh /proc in the pid namespace", &self.proc_mount)?;
        line(f, "network namespace", &self.network_namespace)?;
        line(
            f,
            "read-only mount view (private /tmp and /dev)",
            &self.mount_view,
        )?;
        match self.landlock_abi {
            Some(abi) => writeln!(f, "Landlock: ABI {abi}")?,
            None => writeln!(
                f,
                "Landlock: no (not built into the kernel or not enabled at boot)"
            )?,
        }
        line(f, "seccomp", &self.seccomp)
    }
}

/// Starts `true` (or `sh -c :`) under the given layers.
fn probe(
    namespaces: Option<Namespaces>,
    seccomp: Option<Vec<libc::sock_filter>>,
) -> Result<(), String> {
    let mut cmd = match ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    {
        Some(t) => Command::new(t),
        None => {
            let mut c = Command::new("/bin/sh");
            c.args(["-c", ":"]);
            c
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    child::install(
        &mut cmd,
        Plan {
            session: Session::New,
            namespaces,
            fixed: Arc::new(Fixed {
                landlock: None,
                landlock_in_child: None,
                seccomp,
                drop_capabilities: false,
            }),
        },
    );
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the probe exited with {status}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This project's CI and development machines have every layer (Linux
    /// 6.x, Landlock ABI ≥ 4, unprivileged user namespaces): a regression
    /// in a probe must not pass as "the kernel lacks it".
    #[test]
    fn every_layer_is_available_on_the_project_machines() {
        let support = Support::detect();
        assert!(support.is_complete(), "{support}");
        assert!(support.landlock_abi >= Some(4), "{support}");
    }
}
