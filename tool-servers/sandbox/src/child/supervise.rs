//! The processes that never exec: the supervisor (one per command, the
//! process the server spawned) and the pid namespace's init. They wait,
//! reap, kill what is left and exit with the command's status. Same rules as
//! the parent module: system calls and stack buffers only, `_exit` to leave.

use std::ffi::c_int;

use super::{ABORT_SIGNAL, close_all_but, empty_set, errno, set_mask};

/// The supervisor of a namespaced command: waits for the namespace's init and
/// reports the command's status (sent by init through `status_read`) as its own.
pub(super) fn supervise_init(init: libc::pid_t, status_read: c_int, server: libc::pid_t) -> ! {
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
pub(super) fn run_init(command: libc::pid_t, status_write: c_int) -> ! {
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
pub(super) fn supervise_tree(command: libc::pid_t, server: libc::pid_t) -> ! {
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
