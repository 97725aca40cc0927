//! Inside the new namespaces, in the process that becomes the command: mounts,
//! loopback, then Landlock, capabilities and seccomp. Same rules as the parent
//! module: system calls and prepared data only.

use std::ffi::c_int;
use std::io;
use std::os::fd::AsRawFd;

use super::{Fixed, Namespaces, check, check_long, view};

pub(super) fn set_up_mounts(ns: &Namespaces) -> io::Result<()> {
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
    if let Some(view) = &ns.view {
        view::set_up(view)?;
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
    if let Some(view) = &ns.view {
        view::mask(view)?;
        view::enter_cwd(view)?;
    }
    Ok(())
}

/// A new network namespace has only `lo`, and it is down: bring it up so
/// servers and clients inside one command can still talk over loopback.
pub(super) fn loopback_up() -> io::Result<()> {
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
pub(super) fn restrict(fixed: &Fixed, view: Option<&view::View>) -> io::Result<()> {
    let child_ruleset = fixed.landlock_in_child.as_ref().zip(view);
    if fixed.landlock.is_some() || fixed.seccomp.is_some() || child_ruleset.is_some() {
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
    }
    if let Some((masks, view)) = child_ruleset {
        landlock_in_child(masks, view)?;
    } else if let Some(ruleset) = &fixed.landlock {
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

/// Builds and enforces the ruleset of a command in the mount view: read
/// everywhere, device files in `/dev`, everything in the writable roots and,
/// when writes are allowed at all, the private `/tmp` and `/dev/shm`.
fn landlock_in_child(
    masks: &crate::landlock_rules::ChildRuleset,
    view: &view::View,
) -> io::Result<()> {
    const RULE_PATH_BENEATH: c_int = 1;
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    let ruleset = check_long(unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            masks.attr.as_ptr(),
            std::mem::size_of_val(&masks.attr),
            0,
        )
    })? as c_int;
    let add = |path: &std::ffi::CStr, allowed: u64| -> io::Result<()> {
        let fd = check(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY,
            )
        })?;
        let rule = PathBeneath {
            allowed_access: allowed,
            parent_fd: fd,
        };
        let added = check_long(unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                RULE_PATH_BENEATH,
                &rule as *const PathBeneath,
                0,
            )
        });
        unsafe { libc::close(fd) };
        added.map(drop)
    };
    let result = (|| {
        add(c"/", masks.read)?;
        add(c"/dev", masks.file)?;
        if view.writable_tmp {
            add(c"/tmp", masks.all)?;
            add(c"/dev/shm", masks.all)?;
        }
        for item in &view.attach {
            if item.kind == view::AttachKind::WritableDir {
                add(&item.path, masks.all)?;
            }
        }
        check_long(unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) })
    })();
    unsafe { libc::close(ruleset) };
    result.map(drop)
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
