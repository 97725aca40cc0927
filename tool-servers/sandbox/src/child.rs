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

use std::ffi::{CStr, CString, c_int};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::Arc;

use crate::sandbox::Session;

/// Parts of a plan shared by every command of one sandbox.
pub(crate) struct Fixed {
    /// A Landlock ruleset to enforce.
    pub landlock: Option<OwnedFd>,
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
                supervise_tree(command, server);
            }
        }
    }
    // Here only in the process that becomes the command.
    set_mask(libc::SIG_SETMASK, &[])?;
    restrict(&plan.fixed)
}

fn enter_namespaces(ns: &Namespaces, server: libc::pid_t) -> io::Result<()> {
    check(unsafe { libc::unshare(ns.flags) })?;
    match write_file(c"/proc/self/setgroups", b"deny") {
        // Kernels before 3.19 have no setgroups file and need no denial.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
        other => other?,
    }
    write_file(c"/proc/self/uid_map", &ns.uid_map)?;
    write_file(c"/proc/self/gid_map", &ns.gid_map)?;
    let mut fds = [0 as c_int; 2];
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [status_read, status_write] = fds;
    if let Some(init) = fork()? {
        supervise_init(init, status_read, server);
    }
    // pid 1 of the new pid namespace: dies with the supervisor.
    check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
    if let Some(command) = fork()? {
        run_init(command, status_write);
    }
    // pid 2, the command.
    unsafe {
        libc::close(status_read);
        libc::close(status_write);
    }
    set_up_mounts(ns)?;
    if ns.loopback {
        loopback_up()?;
    }
    Ok(())
}

fn set_up_mounts(ns: &Namespaces) -> io::Result<()> {
    let none: *const libc::c_char = std::ptr::null();
    // Nothing we mount may propagate back to the host.
    check(unsafe {
        libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    })?;
    if ns.mount_proc {
        check(unsafe {
            libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            )
        })?;
    }
    for (path, kept_flags) in &ns.read_only {
        check(unsafe {
            libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                none,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        })?;
        check(unsafe {
            libc::mount(
                none,
                path.as_ptr(),
                none,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept_flags,
                std::ptr::null(),
            )
        })?;
    }
    Ok(())
}

/// A new network namespace has only `lo`, and it is down: bring it up so
/// servers and clients inside one command can still talk over loopback.
fn loopback_up() -> io::Result<()> {
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    ifr.ifr_name[0] = b'l' as libc::c_char;
    ifr.ifr_name[1] = b'o' as libc::c_char;
    let result = (|| {
        check(unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) })?;
        // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
        unsafe { ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
        check(unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) })
    })();
    unsafe { libc::close(fd) };
    result.map(drop)
}

/// Landlock, capabilities, seccomp: the last steps before exec, in the order
/// where each still has the rights it needs.
fn restrict(fixed: &Fixed) -> io::Result<()> {
    if fixed.landlock.is_some() || fixed.seccomp.is_some() {
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    }
    if let Some(ruleset) = &fixed.landlock {
        check_long(unsafe {
            libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0)
        })?;
    }
    if fixed.drop_capabilities {
        drop_capabilities()?;
    }
    if let Some(filter) = &fixed.seccomp {
        let program = libc::sock_fprog {
            len: u16::try_from(filter.len())
                .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
            filter: filter.as_ptr().cast_mut(),
        };
        check(unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            )
        })?;
    }
    Ok(())
}

/// Empties the bounding, ambient, effective, permitted and inheritable sets,
/// so not even uid 0 inside the user namespace keeps a capability after exec.
fn drop_capabilities() -> io::Result<()> {
    for cap in 0..64 {
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            // EINVAL: past the last capability this kernel knows.
            break;
        }
    }
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    check_long(unsafe { libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) })
        .map(drop)
}

/// The supervisor of a namespaced command: waits for the namespace's init and
/// reports the command's status (sent by init through `status_read`) as its own.
fn supervise_init(init: libc::pid_t, status_read: c_int, server: libc::pid_t) -> ! {
    close_all_but(status_read);
    let server_gone = become_supervisor(server);
    let mut init_status = None;
    let mut aborted = server_gone;
    loop {
        if aborted {
            // Killing init makes the kernel kill the whole namespace.
            unsafe { libc::kill(init, libc::SIGKILL) };
        }
        match reap(Some(init)) {
            Reaped::Target(status) => {
                init_status = Some(status);
                break;
            }
            Reaped::NoChildren => break,
            Reaped::Pending => {}
        }
        aborted |= wait_signal();
    }
    let mut buf = [0u8; 4];
    let n = unsafe { libc::read(status_read, buf.as_mut_ptr().cast(), buf.len()) };
    let status = if n == 4 {
        Some(c_int::from_ne_bytes(buf))
    } else {
        init_status
    };
    mirror(status)
}

/// pid 1 of the namespace: reaps every orphan; when the command exits, sends
/// its status to the supervisor and exits, which kills what is left.
fn run_init(command: libc::pid_t, status_write: c_int) -> ! {
    close_all_but(status_write);
    hide_memory();
    loop {
        let mut status: c_int = 0;
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == command {
            let bytes = status.to_ne_bytes();
            unsafe {
                libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0)
            }
        }
        if pid < 0 && errno() != libc::EINTR {
            unsafe { libc::_exit(255) }
        }
    }
}

/// The supervisor of a command without namespaces: as the subreaper of
/// everything the command starts, it can find and kill every descendant,
/// even those that left the process group with `setsid`.
fn supervise_tree(command: libc::pid_t, server: libc::pid_t) -> ! {
    close_all_but(-1);
    let mut aborted = become_supervisor(server);
    let mut status = None;
    loop {
        if aborted {
            kill_children();
        }
        match reap(Some(command)) {
            Reaped::Target(s) => {
                status = Some(s);
                break;
            }
            Reaped::NoChildren => break,
            Reaped::Pending => {}
        }
        aborted |= wait_signal();
    }
    // The command is gone: nothing it started may outlive it.
    loop {
        kill_children();
        let mut ignored: c_int = 0;
        let pid = unsafe { libc::waitpid(-1, &mut ignored, 0) };
        if pid < 0 && errno() == libc::ECHILD {
            break;
        }
    }
    mirror(status)
}

/// Ignores the termination signals meant for the command's group, arranges to
/// hear of the server's death, and tells whether the server is already gone.
fn become_supervisor(server: libc::pid_t) -> bool {
    hide_memory();
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, ABORT_SIGNAL, 0, 0, 0) };
    unsafe { libc::getppid() != server }
}

/// The supervisor and init are copies of the server, secrets in memory
/// included (an agent host holds its API key). Not dumpable: their
/// `/proc/<pid>/{environ,mem}` belong to the real root and cannot be ptraced
/// from inside the sandbox, whatever else fails.
fn hide_memory() {
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

enum Reaped {
    Target(c_int),
    Pending,
    NoChildren,
}

/// Reaps every child that has exited, without blocking.
fn reap(target: Option<libc::pid_t>) -> Reaped {
    loop {
        let mut status: c_int = 0;
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match pid {
            0 => return Reaped::Pending,
            p if p > 0 && Some(p) == target => return Reaped::Target(status),
            p if p > 0 => continue,
            _ if errno() == libc::EINTR => continue,
            _ => return Reaped::NoChildren,
        }
    }
}

/// Blocks until SIGCHLD or the abort signal arrives; true for abort. The
/// signals are blocked, so one sent before we got here is still pending.
fn wait_signal() -> bool {
    let mut set = empty_set();
    for signal in [libc::SIGCHLD, ABORT_SIGNAL] {
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    loop {
        let signal = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
        if signal == ABORT_SIGNAL {
            return true;
        }
        if signal == libc::SIGCHLD {
            return false;
        }
    }
}

/// SIGKILLs every child of this (single-threaded) process, as listed in
/// `/proc/thread-self/children`.
fn kill_children() {
    let fd = unsafe {
        libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 4096];
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    unsafe { libc::close(fd) };
    let Ok(n) = usize::try_from(n) else { return };
    // Only whole numbers: a pid cut at the buffer's end is killed next round.
    let complete = if n == buf.len() {
        buf.iter().rposition(|b| *b == b' ').unwrap_or(0)
    } else {
        n
    };
    let mut pid: libc::pid_t = 0;
    for &b in &buf[..complete] {
        if b.is_ascii_digit() {
            pid = pid
                .saturating_mul(10)
                .saturating_add(libc::pid_t::from(b - b'0'));
        } else {
            if pid > 1 {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            pid = 0;
        }
    }
    if pid > 1 {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Exits the way the command did: same exit code, or killed by the same signal.
fn mirror(status: Option<c_int>) -> ! {
    match status {
        Some(s) if libc::WIFEXITED(s) => unsafe { libc::_exit(libc::WEXITSTATUS(s)) },
        Some(s) if libc::WIFSIGNALED(s) => {
            let signal = libc::WTERMSIG(s);
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            unsafe {
                libc::setrlimit(libc::RLIMIT_CORE, &no_core);
                libc::signal(signal, libc::SIG_DFL);
            }
            let _ = set_mask(libc::SIG_UNBLOCK, &[signal]);
            unsafe {
                libc::kill(libc::getpid(), signal);
                libc::_exit(128 + signal)
            }
        }
        _ => unsafe { libc::_exit(255) },
    }
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
