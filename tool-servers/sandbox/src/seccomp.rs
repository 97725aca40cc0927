//! The seccomp filter: system calls a sandboxed command must not make, because
//! they would undo the other layers or reach past them.
//!
//! Inside its user namespace the command may hold capabilities (when the
//! server runs as root, uid 0 maps to itself), and even without them new
//! namespaces are one `unshare` away. So: no mount-family calls (which could
//! remove the read-only binds), no new namespaces, no kernel keyrings (they
//! can hold credentials), no BPF, module or kexec calls, no `io_uring` (its
//! operations bypass seccomp). `clone3` answers `ENOSYS` because its flags sit
//! behind a pointer a filter cannot read; libc then falls back to `clone`,
//! whose flags are checked. When the network is off but no network namespace
//! could be made, Internet sockets are refused here instead.
//!
//! No call may set the setuid or setgid bit (`chmod`, `fchmod`, `fchmodat`,
//! `fchmodat2`, and the mode of `open`/`openat`/`creat`/`mknod`/`mknodat`):
//! the mount view makes every mount `nosuid` *inside* the sandbox, but the
//! workspace is an ordinary directory on the host, where a setuid copy of a
//! shell made by a server running as root would be a root shell for every
//! local user. `openat2` carries its mode behind a pointer and answers
//! `ENOSYS`, so libc and Go fall back to `openat`.
//!
//! The program is built once, in the parent, as plain data; the child only
//! hands it to the kernel.

/// `AUDIT_ARCH_*` of the architecture we were built for; a system call made
/// through another ABI (e.g. 32-bit `int 0x80` on x86-64) kills the process,
/// because its numbers would not match this filter.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// True on architectures this filter knows the system call numbers of.
pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Namespace flags that `clone` may not carry.
const NEW_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWCGROUP) as u32;

/// Offsets into `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// Low 32 bits of `args[0]` (little-endian targets only).
const OFFSET_ARG0_LOW: u32 = 16;

/// Low 32 bits of `args[n]`.
const fn arg_low(n: u32) -> u32 {
    OFFSET_ARG0_LOW + 8 * n
}

/// The bits no sandboxed call may set.
const SET_ID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

/// System calls with a file mode, and the index of that argument.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn mode_calls() -> Vec<(i64, u32)> {
    let mut calls = vec![
        (libc::SYS_fchmod, 1),
        (libc::SYS_fchmodat, 2),
        (libc::SYS_fchmodat2, 2),
        (libc::SYS_openat, 3),
        (libc::SYS_mknodat, 2),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, 1),
        (libc::SYS_open, 2),
        (libc::SYS_creat, 1),
        (libc::SYS_mknod, 1),
    ]);
    calls
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn denied() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    calls
}

/// Builds the filter. `deny_inet_sockets` refuses `socket(AF_INET|AF_INET6|AF_PACKET, …)`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn program(deny_inet_sockets: bool) -> Vec<libc::sock_filter> {
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let eafnosupport = libc::SECCOMP_RET_ERRNO | libc::EAFNOSUPPORT as u32;
    let mut p = vec![
        load(OFFSET_ARCH),
        jump_eq(AUDIT_ARCH, 1, 0),
        ret(libc::SECCOMP_RET_KILL_PROCESS),
        load(OFFSET_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        // x32 system calls carry bit 30 and share the x86-64 arch value.
        p.push(jump(libc::BPF_JGE, 0x4000_0000, 0, 1));
        p.push(ret(libc::SECCOMP_RET_KILL_PROCESS));
    }
    for nr in denied() {
        p.push(jump_eq(syscall_number(nr), 0, 1));
        p.push(ret(eperm));
    }
    p.push(jump_eq(syscall_number(libc::SYS_clone3), 0, 1));
    p.push(ret(enosys));
    p.push(jump_eq(syscall_number(libc::SYS_openat2), 0, 1));
    p.push(ret(enosys));
    for (nr, arg) in mode_calls() {
        p.push(jump_eq(syscall_number(nr), 0, 4));
        p.push(load(arg_low(arg)));
        p.push(jump(libc::BPF_JSET, SET_ID_BITS, 0, 1));
        p.push(ret(eperm));
        p.push(ret(libc::SECCOMP_RET_ALLOW));
    }
    // clone: refuse only when it asks for a new namespace.
    p.push(jump_eq(syscall_number(libc::SYS_clone), 0, 4));
    p.push(load(OFFSET_ARG0_LOW));
    p.push(jump(libc::BPF_JSET, NEW_NAMESPACE_FLAGS, 0, 1));
    p.push(ret(eperm));
    p.push(ret(libc::SECCOMP_RET_ALLOW));
    if deny_inet_sockets {
        p.push(jump_eq(syscall_number(libc::SYS_socket), 0, 6));
        p.push(load(OFFSET_ARG0_LOW));
        p.push(jump_eq(libc::AF_INET as u32, 3, 0));
        p.push(jump_eq(libc::AF_INET6 as u32, 2, 0));
        p.push(jump_eq(libc::AF_PACKET as u32, 1, 0));
        p.push(ret(libc::SECCOMP_RET_ALLOW));
        p.push(ret(eafnosupport));
    }
    p.push(ret(libc::SECCOMP_RET_ALLOW));
    p
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn program(_deny_inet_sockets: bool) -> Vec<libc::sock_filter> {
    Vec::new()
}

/// System call numbers are small and non-negative on every supported target.
fn syscall_number(nr: i64) -> u32 {
    u32::try_from(nr).unwrap_or(u32::MAX)
}

fn load(offset: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k: offset,
    }
}

fn jump_eq(value: u32, jt: u8, jf: u8) -> libc::sock_filter {
    jump(libc::BPF_JEQ, value, jt, jf)
}

fn jump(op: u32, value: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
        jt,
        jf,
        k: value,
    }
}

fn ret(action: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: action,
    }
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// A tiny interpreter for the instructions we emit, to check the jumps.
    fn run(program: &[libc::sock_filter], arch: u32, nr: i64, arg0: u64) -> u32 {
        run_args(program, arch, nr, [arg0, 0, 0, 0])
    }

    fn run_args(program: &[libc::sock_filter], arch: u32, nr: i64, args: [u64; 4]) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = program[pc];
            let code = u32::from(i.code);
            match code & 0x07 {
                c if c == libc::BPF_LD => {
                    acc = match i.k {
                        OFFSET_NR => nr as u32,
                        OFFSET_ARCH => arch,
                        k if (OFFSET_ARG0_LOW..OFFSET_ARG0_LOW + 32).contains(&k) => {
                            args[((k - OFFSET_ARG0_LOW) / 8) as usize] as u32
                        }
                        k => panic!("load {k}"),
                    };
                    pc += 1;
                }
                c if c == libc::BPF_JMP => {
                    let taken = match code & 0xf0 {
                        op if op == libc::BPF_JEQ => acc == i.k,
                        op if op == libc::BPF_JGE => acc >= i.k,
                        op if op == libc::BPF_JSET => acc & i.k != 0,
                        op => panic!("jump op {op}"),
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                c if c == libc::BPF_RET => return i.k,
                c => panic!("class {c}"),
            }
        }
    }

    #[test]
    fn the_filter_allows_ordinary_calls_and_refuses_the_escapes() {
        let p = program(true);
        let allow = libc::SECCOMP_RET_ALLOW;
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_read, 0), allow);
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_mount, 0), eperm);
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_unshare, 0), eperm);
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_keyctl, 0), eperm);
        assert_eq!(
            run(&p, AUDIT_ARCH, libc::SYS_clone3, 0),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        let fork_flags = libc::SIGCHLD as u64;
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_clone, fork_flags), allow);
        let new_user = (libc::CLONE_NEWUSER as u64) | fork_flags;
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_clone, new_user), eperm);
        let inet = libc::AF_INET as u64;
        assert_ne!(run(&p, AUDIT_ARCH, libc::SYS_socket, inet), allow);
        let unix = libc::AF_UNIX as u64;
        assert_eq!(run(&p, AUDIT_ARCH, libc::SYS_socket, unix), allow);
        assert_eq!(
            run(&p, 0x4000_0003, libc::SYS_read, 0),
            libc::SECCOMP_RET_KILL_PROCESS
        );
        // The setuid and setgid bits, in every call that takes a mode.
        let suid = u64::from(libc::S_ISUID | 0o755);
        let sgid = u64::from(libc::S_ISGID | 0o755);
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_fchmod, [3, suid, 0, 0]),
            eperm
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_fchmod, [3, 0o755, 0, 0]),
            allow
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_fchmodat, [0, 0, sgid, 0]),
            eperm
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_fchmodat2, [0, 0, suid, 0]),
            eperm
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_fchmodat, [0, 0, 0o1777, 0]),
            allow
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_openat, [0, 0, 0o100, suid]),
            eperm
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_openat, [0, 0, 0o100, 0o644]),
            allow
        );
        assert_eq!(
            run_args(&p, AUDIT_ARCH, libc::SYS_mknodat, [0, 0, suid, 0]),
            eperm
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, libc::SYS_openat2, 0),
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        // Without the socket rule, Internet sockets are allowed.
        assert_eq!(
            run(&program(false), AUDIT_ARCH, libc::SYS_socket, inet),
            allow
        );
    }
}
