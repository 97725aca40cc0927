//! The mount view (issue 24, items 1 and 4), as attacks through the library:
//! metadata changes outside the workspace, setuid copies, files meant to
//! outlive the call in `/tmp` and `/dev/shm`, host devices and terminals, and
//! host unix sockets. Each runs in `workspace-write` and `read-only`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tern_sandbox::{Mode, Network, Policy, Sandbox, Session, Support};

struct Run {
    code: Option<i32>,
    out: String,
}

fn run(sandbox: &Sandbox, script: &str, session: Session) -> Run {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sandbox.configure(&mut cmd, session).unwrap();
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code(),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A workspace and an outside directory, neither under `/tmp` (which the
/// view replaces), so "outside" is really the host's.
struct Dirs {
    _base: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let b = base.path().canonicalize().unwrap();
    let root = b.join("root");
    let outside = b.join("outside");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&outside).unwrap();
    Dirs {
        _base: base,
        root,
        outside,
    }
}

fn sandbox(mode: Mode, root: &Path) -> Sandbox {
    let policy = Policy::new(mode, Network::Off, vec![root.to_path_buf()]);
    let sandbox = Sandbox::new(policy, &Support::detect()).unwrap();
    assert!(
        sandbox.degradations().is_empty(),
        "this machine must have every layer: {:?}",
        sandbox.degradations()
    );
    assert!(
        sandbox.summary().contains("read-only view"),
        "{}",
        sandbox.summary()
    );
    sandbox
}

const MODES: [Mode; 2] = [Mode::WorkspaceWrite, Mode::ReadOnly];

#[test]
fn metadata_outside_the_workspace_cannot_change() {
    for mode in MODES {
        let d = dirs();
        let file = d.outside.join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = std::fs::metadata(&file).unwrap();
        let f = file.display();
        let o = d.outside.display();
        let r = run(
            &sandbox(mode, &d.root),
            &format!(
                "chmod 0777 {f}; echo chmod=$?; chmod 4755 {f}; echo suid=$?; \
                 touch -d 2001-01-01 {f}; echo touch=$?; chmod 0777 {o}; echo dir=$?; \
                 python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.tern\", b\"x\")' {f}; \
                 echo xattr=$?"
            ),
            Session::New,
        );
        for probe in ["chmod", "suid", "touch", "dir", "xattr"] {
            assert!(
                !r.out.contains(&format!("{probe}=0")),
                "{mode}: {probe} succeeded:\n{}",
                r.out
            );
        }
        assert!(r.out.contains("Read-only file system"), "{mode}: {}", r.out);
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(after.permissions().mode(), before.permissions().mode());
        assert_eq!(after.modified().unwrap(), before.modified().unwrap());
        assert_eq!(
            std::fs::metadata(&d.outside).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }
}

#[test]
fn no_setuid_file_is_made_and_tmp_and_shm_die_with_the_call() {
    let d = dirs();
    let tag = format!("tern-mountview-{}", std::process::id());
    let r = run(
        &sandbox(Mode::WorkspaceWrite, &d.root),
        &format!(
            "cd {root} || exit 9; echo tmpdir=$TMPDIR; cp /bin/sh $TMPDIR/{tag}; echo cp=$?; \
             chmod 4755 $TMPDIR/{tag}; \
             echo tmpsuid=$?; cp /bin/sh ./sh; chmod u+s ./sh; echo rootsuid=$?; \
             chmod g+s ./sh; echo sgid=$?; install -m 4755 /bin/sh ./sh2; echo install=$?; \
             echo x > /dev/shm/{tag}; echo shm=$?; echo x > /tmp/{tag}.2; echo tmp=$?; \
             chmod 0700 ./sh; echo plain=$?",
            root = d.root.display()
        ),
        Session::New,
    );
    let out = &r.out;
    assert!(out.contains("tmpdir=/tmp\n"), "{out}");
    assert!(
        out.contains("cp=0") && out.contains("shm=0") && out.contains("tmp=0"),
        "{out}"
    );
    assert!(out.contains("plain=0"), "ordinary chmod works: {out}");
    for probe in ["tmpsuid", "rootsuid", "sgid", "install"] {
        assert!(!out.contains(&format!("{probe}=0")), "{probe}: {out}");
    }
    for leftover in [
        PathBuf::from("/tmp").join(&tag),
        PathBuf::from("/tmp").join(format!("{tag}.2")),
        PathBuf::from("/dev/shm").join(&tag),
    ] {
        assert!(
            !leftover.exists(),
            "{} outlived the call",
            leftover.display()
        );
    }
    for f in ["sh", "sh2"] {
        if let Ok(meta) = std::fs::metadata(d.root.join(f)) {
            assert_eq!(meta.permissions().mode() & 0o6000, 0, "{f} is setuid");
        }
    }
}

#[test]
fn dev_is_minimal_and_host_terminals_are_out_of_reach() {
    // A terminal of the host's: its /dev/pts/N must not open inside.
    use rustix::pty::OpenptFlags;
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    rustix::pty::grantpt(&master).unwrap();
    rustix::pty::unlockpt(&master).unwrap();
    let pts = rustix::pty::ptsname(&master, Vec::new())
        .unwrap()
        .into_string()
        .unwrap();
    assert!(Path::new(&pts).exists());
    for mode in MODES {
        let d = dirs();
        let r = run(
            &sandbox(mode, &d.root),
            &format!(
                "ls -A /dev | tr '\\n' ' '; echo; echo hi > {pts}; echo pts=$?; \
                 for f in /dev/kmsg /dev/tty1 /dev/kvm /dev/vda /dev/mem /dev/tty /dev/ptmx; do \
                   [ -e $f ] && echo present=$f; done; exec 3<>/dev/tty; echo tty=$?; \
                 head -c 4 /dev/urandom | wc -c; echo x > /dev/null; echo null=$?"
            ),
            Session::New,
        );
        let out = &r.out;
        let listing = out.lines().next().unwrap();
        let mut names: Vec<&str> = listing.split_whitespace().collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".tern-empty",
                ".tern-empty-dir",
                "fd",
                "full",
                "null",
                "pts",
                "random",
                "shm",
                "stderr",
                "stdin",
                "stdout",
                "urandom",
                "zero"
            ],
            "{mode}: {out}"
        );
        assert!(
            !out.contains("pts=0") && !out.contains("present="),
            "{mode}: {out}"
        );
        assert!(
            !out.contains("tty=0"),
            "{mode}: a controlling terminal: {out}"
        );
        assert!(
            out.contains("\n4\n") && out.contains("null=0"),
            "{mode}: {out}"
        );
    }
    drop(master);
}

#[test]
fn a_private_pty_is_there_only_when_asked_for() {
    let d = dirs();
    let mut policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![d.root.clone()]);
    policy.pty = true;
    let sandbox = Sandbox::new(policy, &Support::detect()).unwrap();
    let r = run(
        &sandbox,
        "python3 -c 'import os; m, s = os.openpty(); print(\"pty\", os.ttyname(s))'; ls /dev/pts",
        Session::New,
    );
    assert!(r.out.contains("pty /dev/pts/0"), "{}", r.out);
}

/// A listener where host services put theirs; the sandbox (network off)
/// must not connect, unless the socket is allowed by name.
#[test]
fn host_unix_sockets_are_hidden_with_the_network_off() {
    let run_dir = PathBuf::from(format!("/run/tern-mountview-{}", std::process::id()));
    if std::fs::create_dir_all(&run_dir).is_err() {
        eprintln!("skipping the /run case: /run is not writable here");
        return;
    }
    let socket = run_dir.join("agent.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let d = dirs();
    let connect = format!(
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
         print(\"connected\")' {}; echo rc=$?",
        socket.display()
    );
    for mode in MODES {
        let r = run(&sandbox(mode, &d.root), &connect, Session::New);
        assert!(!r.out.contains("connected"), "{mode}: {}", r.out);
        assert!(
            listener.accept().is_err(),
            "{mode}: the listener got a connection"
        );
    }
    // Allowed by name: reachable.
    let mut policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![d.root.clone()]);
    policy.allow_sockets.push(socket.clone());
    let allowed = Sandbox::new(policy, &Support::detect()).unwrap();
    let r = run(&allowed, &connect, Session::New);
    assert!(r.out.contains("connected"), "{}", r.out);
    // With the network on, /run is the host's.
    let on = Sandbox::new(
        Policy::new(Mode::WorkspaceWrite, Network::On, vec![d.root.clone()]),
        &Support::detect(),
    )
    .unwrap();
    assert!(run(&on, &connect, Session::New).out.contains("connected"));
    drop(listener);
    let _ = std::fs::remove_dir_all(&run_dir);
}

#[test]
fn workspace_writes_work_and_a_root_under_tmp_is_still_there() {
    // A workspace under the host's /tmp, which the view replaces.
    let base = tempfile::tempdir_in("/tmp").unwrap();
    let root = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("seen"), "host").unwrap();
    let sandbox = sandbox(Mode::WorkspaceWrite, &root);
    let r = run(
        &sandbox,
        &format!(
            "cd {r} && cat seen && echo new > made && echo made=$? && echo y > ../beside; \
             echo beside=$?",
            r = root.display()
        ),
        Session::New,
    );
    assert!(
        r.out.contains("host") && r.out.contains("made=0"),
        "{}",
        r.out
    );
    assert_eq!(std::fs::read_to_string(root.join("made")).unwrap(), "new\n");
    assert!(
        !base.path().join("beside").exists(),
        "a write beside the root reached the host"
    );
    assert_eq!(r.code, Some(0), "{}", r.out);
}
