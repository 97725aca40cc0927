//! Everything that runs between `fork` and `exec`, and every other `unsafe`
//! call of this crate.
//!
//! # Why this is sound
//! `Command::pre_exec` runs our closure in the child of a `fork` of a
//! multi-threaded process. Only the forking thread exists there; a lock held
//! by any other thread (the allocator's, stdio's, tracing's) stays locked
//! forever. So from the closure on, this module only makes system calls
//! through `libc`'s thin wrappers (`fork`, `unshare`, `mount`, `waitpid`,
//! `prctl`, …), reads plain data prepared by the parent (byte strings, a BPF
//! program, file descriptors), and uses stack buffers: no allocation, no lock,
//! no `std::io` object, no `tracing`. Processes that never exec (the
//! supervisor and the namespace init) leave only through `_exit`, so no Rust
//! destructor or atexit handler runs in them. Errors are `io::Error::from_raw_os_error`
//! values, which do not allocate.
//!
//! # The process tree
//! ```text
//! server ─ supervisor (setsid; ignores SIGTERM; SIGUSR1 = abort; dies with the server)
//!          ├─ namespaced:  init (pid 1 of a new pid namespace; reaps; exits when the
//!          │               │      command exits, so the kernel kills everything else)
//!          │               └─ command (pid 2: mounts, Landlock, caps, seccomp, exec)
//!          └─ full access: command (the supervisor is its subreaper and kills every
//!                          descendant once it exits)
//! ```
//! The supervisor reports the command's own exit status or signal as its own,
//! so the server sees `bash`'s status as if it had spawned it directly.
#![allow(unsafe_code)]

mod setup;
mod supervise;
pub(crate) mod view;

use std::ffi::{CStr, CString, c_int};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::Arc;

/// Parts of a plan shared by every command of one sandbox.
pub(crate) struct Fixed {
    /// A Landlock ruleset to enforce.
    pub landlock: Option<OwnedFd>,
    /// With the mount view: the masks of the ruleset the child builds after
    /// its mounts (used instead of `landlock`).
    pub landlock_in_child: Option<crate::landlock_rules::ChildRuleset>,
    /// A seccomp filter to install last.
    pub seccomp: Option<Vec<libc::sock_filter>>,
    /// Drop every capability before exec (sandboxed modes).
    pub drop_capabilities: bool,
}

/// Namespaces to enter, and what to set up inside them.
pub(crate) struct Namespaces {
    /// `CLONE_NEW*` flags for `unshare`.
    pub flags: c_int,
    /// `/proc/self/uid_map` and `gid_map` contents.
    pub uid_map: Vec<u8>,
    pub gid_map: Vec<u8>,
    /// Mount a fresh `/proc` for the new pid namespace.
    pub mount_proc: bool,
    /// Bring the new network namespace's `lo` up.
    pub loopback: bool,
    /// Paths to bind read-only onto themselves, with the mount flags that
    /// must be kept (a user namespace may not clear `nosuid` and friends).
    pub read_only: Vec<(CString, libc::c_ulong)>,
    /// Join these user (and network) namespaces instead of creating new ones.
    pub join: Option<Arc<SharedNamespaces>>,
    /// The read-only, `nosuid,nodev` view with a private `/tmp` and `/dev`.
    pub view: Option<view::View>,
}

/// A user namespace (and, network off, a network namespace with `lo` up)
/// made once and joined by every command of a sandbox: creating a user
/// namespace and writing its id maps, or creating and tearing down a network
/// namespace, costs about a millisecond per command. Each command still gets
/// a pid, mount and IPC namespace of its own and holds no capability after
/// exec, so it cannot change the shared ones; a socket in the shared network
/// namespace dies with the process that owns it.
pub(crate) struct SharedNamespaces {
    user: OwnedFd,
    net: Option<OwnedFd>,
}

/// Makes the shared namespaces: a short-lived `cat` unshares them, we open
/// its `/proc/<pid>/ns` files, and the open descriptors keep them alive.
pub(crate) fn shared_namespaces(
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    private_network: bool,
) -> io::Result<SharedNamespaces> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let cat = ["/bin/cat", "/usr/bin/cat"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut cmd = Command::new(cat);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let flags = if private_network {
        libc::CLONE_NEWUSER | libc::CLONE_NEWNET
    } else {
        libc::CLONE_NEWUSER
    };
    // SAFETY: system calls and prepared data only, as in `after_fork`.
    unsafe {
        cmd.pre_exec(move || {
            check(libc::unshare(flags))?;
            write_maps(&uid_map, &gid_map)?;
            if private_network {
                setup::loopback_up()?;
            }
            Ok(())
        });
    }
    let mut keeper = cmd.spawn()?;
    let open = |kind: &str| {
        let path = format!("/proc/{}/ns/{kind}", keeper.id());
        std::fs::File::open(path).map(OwnedFd::from)
    };
    let opened = open("user").and_then(|user| {
        let net = if private_network {
            Some(open("net")?)
        } else {
            None
        };
        Ok(SharedNamespaces { user, net })
    });
    drop(keeper.stdin.take());
    keeper.wait()?;
    opened
}

/// Everything one spawn needs, prepared in the parent.
pub(crate) struct Plan {
    pub session: Session,
    pub namespaces: Option<Namespaces>,
    pub fixed: Arc<Fixed>,
}

/// Installs the plan as `cmd`'s pre-exec hook.
pub(crate) fn install(cmd: &mut Command, plan: Plan) {
    use std::os::unix::process::CommandExt;
    // SAFETY: `after_fork` keeps to async-signal-safe system calls and plain
    // data, as the module documentation explains.
    unsafe {
        cmd.pre_exec(move || after_fork(&plan));
    }
}

/// Signals the supervisor handles itself. Blocked from the start so none is
/// lost between `fork` and the moment the supervisor waits for them.
const SUPERVISOR_SIGNALS: [c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGCHLD,
];

/// The signal that asks a supervisor to kill everything and exit; also its
/// parent-death signal, so a server that dies takes its commands along.
pub(crate) const ABORT_SIGNAL: c_int = libc::SIGUSR1;

fn after_fork(plan: &Plan) -> io::Result<()> {
    if plan.session == Session::New {
        check(unsafe { libc::setsid() })?;
    }
    // SAFETY: getppid cannot fail.
    let server = unsafe { libc::getppid() };
    set_mask(libc::SIG_BLOCK, &SUPERVISOR_SIGNALS)?;
    match &plan.namespaces {
        Some(ns) => enter_namespaces(ns, server)?,
        None => {
            // SAFETY: plain prctl.
            check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })?;
            if let Some(command) = fork()? {
                supervise::supervise_tree(command, server);
            }
        }
    }
    // Here only in the process that becomes the command.
    set_mask(libc::SIG_SETMASK, &[])?;
    let view = plan.namespaces.as_ref().and_then(|ns| ns.view.as_ref());
    setup::restrict(&plan.fixed, view)
}

fn enter_namespaces(ns: &Namespaces, server: libc::pid_t) -> io::Result<()> {
    match &ns.join {
        Some(shared) => {
            // Joining a user namespace we own gives every capability in it.
            check(unsafe { libc::setns(shared.user.as_raw_fd(), libc::CLONE_NEWUSER) })?;
            let mut own = ns.flags & !libc::CLONE_NEWUSER;
            if let Some(net) = &shared.net {
                check(unsafe { libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) })?;
                own &= !libc::CLONE_NEWNET;
            }
            check(unsafe { libc::unshare(own) })?;
        }
        None => {
            check(unsafe { libc::unshare(ns.flags) })?;
            write_maps(&ns.uid_map, &ns.gid_map)?;
        }
    }
    let mut fds = [0 as c_int; 2];
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [status_read, status_write] = fds;
    if let Some(init) = fork()? {
        supervise::supervise_init(init, status_read, server);
    }
    // pid 1 of the new pid namespace: dies with the supervisor.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
    if let Some(command) = fork()? {
        supervise::run_init(command, status_write);
    }
    // pid 2, the command.
    unsafe {
        libc::close(status_read);
        libc::close(status_write);
    }
    setup::set_up_mounts(ns)?;
    if ns.loopback && ns.join.is_none() {
        setup::loopback_up()?;
    }
    Ok(())
}

/// Closes every descriptor except `keep` (-1: close all). The supervisor and
/// init must not hold the output pipe (its reader would never see EOF) nor
/// std's exec-error pipe (`spawn` would wait for them instead of the exec).
fn close_all_but(keep: c_int) {
    match libc::c_uint::try_from(keep) {
        Ok(keep) => {
            if keep > 0 {
                close_fds(0, keep - 1);
            }
            close_fds(keep + 1, libc::c_uint::MAX);
        }
        Err(_) => close_fds(0, libc::c_uint::MAX),
    }
}

fn close_fds(first: libc::c_uint, last: libc::c_uint) {
    let done = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    if done != 0 {
        // Before Linux 5.9: one by one, up to a sane bound.
        for fd in first..=last.min(65_535) {
            unsafe { libc::close(fd as c_int) };
        }
    }
}

/// Maps our uid and gid to themselves in a user namespace we just created.
fn write_maps(uid_map: &[u8], gid_map: &[u8]) -> io::Result<()> {
    match write_file(c"/proc/self/setgroups", b"deny") {
        // Kernels before 3.19 have no setgroups file and need no denial.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        other => other?,
    }
    write_file(c"/proc/self/uid_map", uid_map)?;
    write_file(c"/proc/self/gid_map", gid_map)
}

fn fork() -> io::Result<Option<libc::pid_t>> {
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::from_raw_os_error(errno())),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

fn write_file(path: &CStr, data: &[u8]) -> io::Result<()> {
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) })?;
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let error = errno();
    unsafe { libc::close(fd) };
    if usize::try_from(written).ok() == Some(data.len()) {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(error))
    }
}

fn empty_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sigemptyset(&mut set) };
    set
}

fn set_mask(how: c_int, signals: &[c_int]) -> io::Result<()> {
    let mut set = empty_set();
    for &signal in signals {
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    check(unsafe { libc::sigprocmask(how, &set, std::ptr::null_mut()) }).map(drop)
}

fn errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(result: c_int) -> io::Result<c_int> {
    if result < 0 {
        Err(io::Error::from_raw_os_error(errno()))
    } else {
        Ok(result)
    }
}

fn check_long(result: libc::c_long) -> io::Result<libc::c_long> {
    if result < 0 {
        Err(io::Error::from_raw_os_error(errno()))
    } else {
        Ok(result)
    }
}

/// The Landlock ABI version the running kernel supports (`None` without Landlock).
pub(crate) fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 this system call only
    // returns the ABI version; it touches no memory of ours.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(version).ok().filter(|v| *v > 0)
}

/// Sends the abort signal to a supervisor (by its pid).
pub(crate) fn signal_abort(supervisor: libc::pid_t) -> io::Result<()> {
    check(unsafe { libc::kill(supervisor, ABORT_SIGNAL) }).map(drop)
}

/// Whether the command gets a session (and process group) of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Session {
    /// `setsid`: detached from any terminal; the supervisor's pid is the
    /// group id, so one signal reaches the whole command. For servers.
    New,
    /// Stay in the caller's session and process group, so an interactive
    /// `tern sandbox -- CMD` keeps its terminal and Ctrl-C.
    Inherit,
}

/// The namespace part of a plan; uid and gid map to themselves, so files the
/// command creates belong to the server's user.
pub(crate) fn namespaces(
    flags: libc::c_int,
    mount_proc: bool,
    loopback: bool,
    read_only: Vec<(CString, libc::c_ulong)>,
) -> Namespaces {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    Namespaces {
        flags,
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        mount_proc,
        loopback,
        read_only,
        join: None,
        view: None,
    }
}
