//! The mount view a sandboxed command sees (issue 24, items 1 and 4), built
//! in its own mount namespace before exec:
//!
//! - the whole tree re-bound **read-only, `nosuid`, `nodev`** — so `chmod`,
//!   `touch -d`, `setxattr`, `chown` outside the writable roots fail with
//!   `EROFS` whatever Landlock can or cannot express;
//! - the writable roots attached again, writable but still `nosuid,nodev`;
//! - a **private `/tmp`** (a tmpfs that dies with the namespace, so nothing a
//!   command leaves there outlives the call);
//! - a **minimal `/dev`**: `null`, `zero`, `full`, `random`, `urandom`, a
//!   private `shm`, and a private `pts` only when asked for — no `kmsg`, no
//!   host terminals, no disks, no `kvm`;
//! - with the network off, `/run`, `/var/run` and `$XDG_RUNTIME_DIR` covered
//!   by an empty tmpfs, so the unix sockets that live there (Docker, D-Bus,
//!   ssh-agent, systemd) cannot be reached; named sockets can be let through.
//!
//! The host's mounts and the device nodes are cloned (`open_tree`) before the
//! covers go on, then attached where they belong (`move_mount`). Same rules as
//! the parent module: system calls and data prepared by the parent only.

use std::ffi::{CStr, CString, c_int};
use std::io;

use super::check;

/// One mount cloned from the host's view and attached again after the covers.
pub(crate) struct Attach {
    /// Where it is and where it goes again.
    pub path: CString,
    /// Its ancestors, outermost first: created when a cover hid them.
    pub ancestors: Vec<CString>,
    /// A writable root (a directory) or an allowed socket (a file).
    pub kind: AttachKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachKind {
    /// Writable in the view (`nosuid,nodev` still).
    WritableDir,
    /// A workspace root in read-only mode: visible (it may be under the
    /// host's `/tmp`, which the view replaces) but read-only.
    ReadOnlyDir,
    /// A unix socket let through a hidden directory.
    Socket,
}

/// The view, prepared by the parent.
pub(crate) struct View {
    /// Writable roots (shortest path first, so nested roots land on top) and
    /// allowed sockets.
    pub attach: Vec<Attach>,
    /// Directories covered by an empty read-only tmpfs.
    pub hidden: Vec<CString>,
    /// Bound onto themselves, still writable, so they are mount points that
    /// cannot be renamed or replaced (`.git` under `git_writes`).
    pub pinned: Vec<CString>,
    /// Files and directories covered by an empty one (deny rules, item 3).
    pub masked: Vec<(CString, bool)>,
    /// Mount a private `devpts` (and `/dev/ptmx`) for commands that need a pty.
    pub pty: bool,
    /// Keep `/dev/tty`: an interactive `tern sandbox -- CMD` in the user's terminal.
    pub tty: bool,
    /// The private `/tmp` and `/dev/shm` are writable (workspace-write).
    pub writable_tmp: bool,
    /// The command's working directory, entered again once the view is
    /// built: `Command` changes directory before our hook runs, so the
    /// directory it holds is the host's, outside the view.
    pub cwd: CString,
    /// Entered when `cwd` is not in the view and was only inherited (the host's /tmp is
    /// replaced by a private one, so a process started from a directory under it would
    /// otherwise fail to start with ENOENT).
    pub cwd_fallback: Option<CString>,
}

/// Most mounts one view re-attaches (writable roots plus allowed sockets):
/// the cloned descriptors live in a stack array between fork and exec.
pub(crate) const MAX_ATTACH: usize = 48;

/// Device nodes every command gets.
const DEVICES: [&CStr; 5] = [
    c"/dev/null",
    c"/dev/zero",
    c"/dev/full",
    c"/dev/random",
    c"/dev/urandom",
];

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Builds the view. Called in the command's process, in its new mount
/// namespace, after `/` was made private and `/proc` mounted.
pub(crate) fn set_up(view: &View) -> io::Result<()> {
    if view.attach.len() > MAX_ATTACH {
        return Err(io::Error::from_raw_os_error(libc::E2BIG));
    }
    // 1. Clones of what comes back after the covers, with the host's flags.
    let mut clones = [-1 as c_int; MAX_ATTACH];
    for (slot, item) in clones.iter_mut().zip(&view.attach) {
        let recursive = match item.kind {
            AttachKind::WritableDir | AttachKind::ReadOnlyDir => AT_RECURSIVE,
            AttachKind::Socket => 0,
        };
        *slot = open_tree(&item.path, OPEN_TREE_CLONE | recursive)?;
    }
    let mut devices = [-1 as c_int; DEVICES.len() + 1];
    for (slot, dev) in devices.iter_mut().zip(DEVICES) {
        *slot = open_tree(dev, OPEN_TREE_CLONE)?;
    }
    if view.tty {
        devices[DEVICES.len()] = open_tree(c"/dev/tty", OPEN_TREE_CLONE)?;
    }
    // 2. Everything read-only, nosuid, nodev.
    set_attr(
        c"/",
        AT_RECURSIVE,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        0,
    )?;
    // 3. A minimal /dev.
    minimal_dev(view, &devices)?;
    // 4. Covers: hidden directories, then the private /tmp.
    for dir in &view.hidden {
        tmpfs(
            dir,
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"mode=0755",
        )?;
    }
    tmpfs(c"/tmp", libc::MS_NOSUID | libc::MS_NODEV, c"mode=1777")?;
    // 5. The writable roots and allowed sockets, where they were.
    for (fd, item) in clones.iter().zip(&view.attach) {
        for dir in &item.ancestors {
            // EEXIST where the cover did not hide it, EROFS outside a cover.
            unsafe { libc::mkdir(dir.as_ptr(), 0o755) };
        }
        match item.kind {
            AttachKind::WritableDir | AttachKind::ReadOnlyDir => unsafe {
                libc::mkdir(item.path.as_ptr(), 0o755);
            },
            AttachKind::Socket => make_file(&item.path),
        }
        move_mount(*fd, &item.path)?;
        unsafe { libc::close(*fd) };
        let read_only = match item.kind {
            AttachKind::WritableDir => 0,
            AttachKind::ReadOnlyDir => MOUNT_ATTR_RDONLY,
            AttachKind::Socket => continue,
        };
        set_attr(
            &item.path,
            AT_RECURSIVE,
            read_only | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            0,
        )?;
    }
    for dir in &view.hidden {
        set_attr(dir, 0, MOUNT_ATTR_RDONLY, 0)?;
    }
    for path in &view.pinned {
        let none: *const libc::c_char = std::ptr::null();
        check(unsafe {
            libc::mount(
                path.as_ptr(),
                path.as_ptr(),
                none,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        })?;
    }
    Ok(())
}

/// Enters the working directory inside the finished view.
pub(crate) fn enter_cwd(view: &View) -> io::Result<()> {
    match check(unsafe { libc::chdir(view.cwd.as_ptr()) }) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
            match &view.cwd_fallback {
                Some(fallback) => check(unsafe { libc::chdir(fallback.as_ptr()) }).map(drop),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Covers the denied paths with the empty file or directory of `/dev`'s
/// tmpfs, read-only. Runs after the protected binds, last of all mounts.
pub(crate) fn mask(view: &View) -> io::Result<()> {
    for (path, is_dir) in &view.masked {
        let empty = if *is_dir {
            c"/dev/.tern-empty-dir"
        } else {
            c"/dev/.tern-empty"
        };
        let none: *const libc::c_char = std::ptr::null();
        match check(unsafe {
            libc::mount(
                empty.as_ptr(),
                path.as_ptr(),
                none,
                libc::MS_BIND,
                std::ptr::null(),
            )
        }) {
            Ok(_) => {}
            // Gone since the parent listed it: nothing to hide.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            // Anything else (a file replaced by a directory since the
            // parent looked): refuse to run rather than leave it readable.
            Err(e) => return Err(e),
        }
        set_attr(
            path,
            0,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            0,
        )?;
    }
    Ok(())
}

fn minimal_dev(view: &View, devices: &[c_int]) -> io::Result<()> {
    tmpfs(c"/dev", libc::MS_NOSUID | libc::MS_NOEXEC, c"mode=0755")?;
    let names: [&CStr; DEVICES.len() + 1] = [
        DEVICES[0],
        DEVICES[1],
        DEVICES[2],
        DEVICES[3],
        DEVICES[4],
        c"/dev/tty",
    ];
    for (fd, name) in devices.iter().zip(names) {
        if *fd < 0 {
            continue;
        }
        make_file(name);
        move_mount(*fd, name)?;
        unsafe { libc::close(*fd) };
    }
    for (target, link) in [
        (c"/proc/self/fd", c"/dev/fd"),
        (c"/proc/self/fd/0", c"/dev/stdin"),
        (c"/proc/self/fd/1", c"/dev/stdout"),
        (c"/proc/self/fd/2", c"/dev/stderr"),
    ] {
        check(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) })?;
    }
    // Sources for the masks over denied paths.
    make_file(c"/dev/.tern-empty");
    check(unsafe { libc::mkdir(c"/dev/.tern-empty-dir".as_ptr(), 0o555) })?;
    check(unsafe { libc::mkdir(c"/dev/shm".as_ptr(), 0o1777) })?;
    tmpfs(c"/dev/shm", libc::MS_NOSUID | libc::MS_NODEV, c"mode=1777")?;
    check(unsafe { libc::mkdir(c"/dev/pts".as_ptr(), 0o755) })?;
    if view.pty {
        check(unsafe {
            libc::mount(
                c"devpts".as_ptr(),
                c"/dev/pts".as_ptr(),
                c"devpts".as_ptr(),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
            )
        })?;
        check(unsafe { libc::symlink(c"pts/ptmx".as_ptr(), c"/dev/ptmx".as_ptr()) })?;
    }
    // Nothing new in /dev itself; shm and pts are mounts of their own.
    set_attr(c"/dev", 0, MOUNT_ATTR_RDONLY, 0)
}

fn tmpfs(target: &CStr, flags: libc::c_ulong, data: &CStr) -> io::Result<()> {
    check(unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            target.as_ptr(),
            c"tmpfs".as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    })
    .map(drop)
}

/// An empty file to mount onto; failure (it exists, or the place is
/// read-only and it exists there already) shows up in the mount after.
fn make_file(path: &CStr) {
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            0o444,
        )
    };
    if fd >= 0 {
        unsafe { libc::close(fd) };
    }
}

fn open_tree(path: &CStr, flags: libc::c_uint) -> io::Result<c_int> {
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    c_int::try_from(super::check_long(fd)?).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))
}

fn move_mount(fd: c_int, target: &CStr) -> io::Result<()> {
    super::check_long(unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    })
    .map(drop)
}

fn set_attr(path: &CStr, flags: libc::c_uint, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    super::check_long(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(drop)
}

/// `CString`s of every ancestor of `path`, outermost first (`/a`, `/a/b` for `/a/b/c`).
pub(crate) fn ancestors(path: &std::path::Path) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let mut list: Vec<CString> = path
        .ancestors()
        .skip(1)
        .filter(|a| a.as_os_str().len() > 1)
        .filter_map(|a| CString::new(a.as_os_str().as_bytes()).ok())
        .collect();
    list.reverse();
    list
}
