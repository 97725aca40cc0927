//! The mount view a sandbox gives each command: what it fixes once (the socket directories it
//! hides with the network off) and what it builds per command (the writable roots and allowed
//! sockets re-attached, denied paths masked, `.git` pinned, the working directory).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::SandboxError;
use crate::child::view::{self, Attach, AttachKind, View};
use crate::policy::{Mode, Policy};

/// The parts of the mount view fixed for a sandbox.
#[derive(Debug, Clone)]
pub(crate) struct ViewPlan {
    /// Covered by an empty tmpfs (network off: where host unix sockets live).
    pub(crate) hidden: Vec<PathBuf>,
}

/// The directories whose unix sockets a command must not reach with the
/// network off: `/run` (and `/var/run` when it is not a link to it) and
/// `$XDG_RUNTIME_DIR` — Docker, D-Bus, systemd, ssh-agent, gpg-agent live
/// there. The host's `/tmp` (X11, tmux, ssh-agent) is replaced by the private
/// one anyway. A directory inside a writable root is the workspace's own.
pub(crate) fn socket_dirs(policy: &Policy) -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = [PathBuf::from("/run"), PathBuf::from("/var/run")]
        .into_iter()
        .chain(runtime)
        .filter_map(|d| d.canonicalize().ok())
        .filter(|d| d.is_dir() && d != Path::new("/"))
        .filter(|d| !d.starts_with("/tmp") && !d.starts_with("/dev"))
        .filter(|d| !policy.writable_roots.iter().any(|r| d.starts_with(r)))
        .collect();
    dirs.sort();
    dirs.dedup();
    // A directory inside another hidden one is hidden with it.
    let all = dirs.clone();
    dirs.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
    dirs
}

/// The mount view of one command (`tty`: it keeps the caller's terminal).
pub(crate) fn view_for(
    policy: &Policy,
    plan: &ViewPlan,
    tty: bool,
    hidden: &[PathBuf],
    cwd: CString,
) -> Result<View, SandboxError> {
    let kind = match policy.mode {
        Mode::WorkspaceWrite => AttachKind::WritableDir,
        Mode::ReadOnly | Mode::FullAccess => AttachKind::ReadOnlyDir,
    };
    let mut roots: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .filter(|r| r.is_dir() && r != Path::new("/dev") && !r.starts_with("/dev/"))
        .collect();
    roots.sort_by_key(|r| r.as_os_str().len());
    roots.dedup();
    let sockets = policy
        .allow_sockets
        .iter()
        .filter_map(|s| s.canonicalize().ok())
        .filter(|s| {
            use std::os::unix::fs::FileTypeExt;
            s.metadata().is_ok_and(|m| m.file_type().is_socket())
        });
    let mut attach = Vec::new();
    for root in &roots {
        attach.push(Attach {
            path: c_path(root)?,
            ancestors: view::ancestors(root),
            kind,
        });
    }
    for socket in sockets {
        attach.push(Attach {
            path: c_path(&socket)?,
            ancestors: view::ancestors(&socket),
            kind: AttachKind::Socket,
        });
    }
    if attach.len() > view::MAX_ATTACH {
        return Err(SandboxError::Path {
            path: roots
                .first()
                .map(|r| r.display().to_string())
                .unwrap_or_default(),
            reason: format!(
                "more than {} writable roots and allowed sockets",
                view::MAX_ATTACH
            ),
        });
    }
    let masked = hidden
        .iter()
        .filter_map(|p| {
            let meta = p.symlink_metadata().ok()?;
            // A symlink is hidden where it points (a mount follows it).
            let is_dir = if meta.file_type().is_symlink() {
                p.metadata().ok()?.is_dir()
            } else {
                meta.is_dir()
            };
            Some(c_path(p).map(|c| (c, is_dir)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Under git_writes `.git` is writable but must stay where it is: a
    // renamed `.git` and a new one made in its place would escape the
    // read-only control entries.
    let pinned = match (policy.git, policy.mode) {
        (crate::policy::GitWrites::Objects, Mode::WorkspaceWrite) => roots
            .iter()
            .map(|r| r.join(".git"))
            .filter(|g| g.symlink_metadata().is_ok_and(|m| m.is_dir()))
            .map(|g| c_path(&g))
            .collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    Ok(View {
        attach,
        pinned,
        hidden: plan
            .hidden
            .iter()
            .map(|d| c_path(d))
            .collect::<Result<_, _>>()?,
        masked,
        pty: policy.pty,
        tty,
        writable_tmp: policy.mode == Mode::WorkspaceWrite,
        cwd,
        cwd_fallback: None,
    })
}

/// Where a command whose inherited directory the view hides starts instead: the first
/// writable root (the workspace), else `/`. A caller that named a directory
/// (`Command::current_dir`) gets the error instead, since it asked for that place.
pub(crate) fn fallback_cwd(policy: &Policy) -> Result<std::ffi::CString, SandboxError> {
    let root = policy
        .writable_roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .find(|r| r.is_dir());
    c_path(root.as_deref().unwrap_or(Path::new("/")))
}

pub(crate) fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Path {
        path: path.display().to_string(),
        reason: "contains a NUL byte".to_string(),
    })
}

/// Flags of the mount a path lives on that a bind remount inside a user
/// namespace must repeat: the kernel refuses to clear locked ones.
pub(crate) fn kept_mount_flags(path: &Path) -> libc::c_ulong {
    use rustix::fs::StatVfsMountFlags as St;
    let Ok(stat) = rustix::fs::statvfs(path) else {
        return 0;
    };
    let pairs = [
        (St::NOSUID, libc::MS_NOSUID),
        (St::NODEV, libc::MS_NODEV),
        (St::NOEXEC, libc::MS_NOEXEC),
        (St::NOATIME, libc::MS_NOATIME),
        (St::NODIRATIME, libc::MS_NODIRATIME),
        (St::RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .into_iter()
        .filter(|(st, _)| stat.f_flag.contains(*st))
        .fold(0, |acc, (_, ms)| acc | ms)
}
