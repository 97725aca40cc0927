//! The OS sandbox, seen from a command: where it may write, what it may reach,
//! which processes it can see (issue 15, item 1; F3).

use std::io::Read;
use std::net::TcpListener;

use serde_json::json;

use super::support::{is_error, start, text};

fn outside_and_tmp(s: &super::support::Server) -> (std::path::PathBuf, std::path::PathBuf) {
    let base = s.dir.path().canonicalize().unwrap();
    (base.join("outside"), base.join("tmp"))
}

/// Writes land in the root and the private TMPDIR, which is not the host's
/// and is gone after the call (issue 24: nothing left in /tmp outlives it).
/// The test's directories are under the host's /tmp, which the command does
/// not see: a write there lands in its private /tmp and never on the host.
#[tokio::test]
async fn writes_land_only_in_the_root_and_the_private_tmpdir() {
    let s = start(&[], &[]).await;
    let (outside, tmp) = outside_and_tmp(&s);
    let probe = format!("/var/tern-outside-probe-{}", std::process::id());
    let r = s
        .run(json!({"command": format!(
            "touch {o}; touch {probe}; echo outside=$?; touch inside; echo inside=$?; touch \"$TMPDIR/t\"; echo tmp=$?; echo tmpdir=$TMPDIR; echo ok > /dev/null; echo devnull=$?; echo hi > /dev/stdout",
            o = outside.display()
        )}))
        .await;
    let t = text(&r);
    assert!(t.contains("outside=1"), "{t}");
    assert!(t.contains("inside=0") && t.contains("tmp=0"), "{t}");
    assert!(t.contains("tmpdir=/tmp\n"), "{t}");
    assert!(t.contains("devnull=0") && t.contains("hi\n"), "{t}");
    assert!(!outside.exists() && !std::path::Path::new(&probe).exists());
    assert!(s.root.join("inside").exists());
    assert!(
        !tmp.join("t").exists(),
        "the host's TMPDIR is not the command's"
    );
}

#[tokio::test]
async fn read_only_mode_writes_nowhere_and_full_access_everywhere() {
    let s = start(&["--sandbox", "read-only"], &[]).await;
    let r = s
        .run(json!({"command": "touch inside; echo inside=$?; touch \"$TMPDIR/t\"; echo tmp=$?"}))
        .await;
    let t = text(&r);
    assert!(t.contains("inside=1") && t.contains("tmp=1"), "{t}");
    assert!(!s.root.join("inside").exists());

    let s = start(&["--sandbox", "full-access"], &[]).await;
    let (outside, _) = outside_and_tmp(&s);
    let r = s
        .run(json!({"command": format!("touch {}; echo outside=$?", outside.display())}))
        .await;
    assert!(text(&r).contains("outside=0"), "{}", text(&r));
    assert!(outside.exists());
}

#[tokio::test]
async fn git_internals_tern_config_and_protected_paths_stay_read_only() {
    // $TERN_HOME inside an extra writable directory: the directory is
    // writable, the protected path in it is not.
    let dir = tempfile::tempdir().unwrap();
    let writable = dir.path().canonicalize().unwrap();
    let home = writable.join("tern-home");
    std::fs::create_dir(&home).unwrap();
    let s = start(
        &[
            "--writable",
            writable.to_str().unwrap(),
            "--protect",
            home.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    std::fs::create_dir_all(s.root.join(".git/hooks")).unwrap();
    std::fs::write(s.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir(s.root.join(".tern")).unwrap();
    let r = s
        .run(json!({"command": format!(
            "echo evil > .git/hooks/pre-commit; echo hooks=$?; echo evil >> .git/config; echo config=$?; \
             echo x > .tern/config.toml; echo tern=$?; echo x > {h}/config.toml; echo home=$?; echo x > {w}/other; echo writable=$?; \
             echo fine > .git/HEAD; echo head=$?; mount -t tmpfs none .git/hooks; echo mount=$?; \
             umount .git/config; echo umount=$?",
            h = home.display(),
            w = writable.display()
        )}))
        .await;
    let t = text(&r);
    for (what, code) in [
        ("hooks", 1),
        ("config", 1),
        ("tern", 1),
        ("home", 1),
        ("writable", 0),
        ("head", 1),
        ("mount", 32),
        ("umount", 32),
    ] {
        assert!(t.contains(&format!("{what}={code}")), "{what}: {t}");
    }
    assert!(!s.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(s.root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!home.join("config.toml").exists());
}

/// A listener the test owns on the host's loopback; the command tries it
/// with bash's /dev/tcp.
async fn connect_through(extra: &[&str]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let s = start(extra, &[]).await;
    let r = s
        .run(json!({"command": format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected >&3 && echo connected; echo rc=$?"
        )}))
        .await;
    let t = text(&r);
    if t.contains("connected\n") {
        let (mut peer, _) = listener.accept().expect("the command connected");
        peer.set_nonblocking(false).unwrap();
        let mut got = String::new();
        peer.read_to_string(&mut got).unwrap();
        assert_eq!(got, "connected\n");
    }
    t
}

#[tokio::test]
async fn network_is_off_by_default_and_on_when_asked() {
    let off = connect_through(&[]).await;
    assert!(
        !off.contains("connected\n") && off.contains("rc=1"),
        "{off}"
    );
    let on = connect_through(&["--network", "on"]).await;
    assert!(on.contains("connected\n"), "{on}");
    let full = connect_through(&["--sandbox", "full-access"]).await;
    assert!(full.contains("connected\n"), "{full}");
}

#[tokio::test]
async fn a_private_loopback_works_inside_one_command() {
    let s = start(&[], &[]).await;
    let r = s
        .run(json!({"command": "ip -br link show lo 2>/dev/null || cat /sys/class/net/lo/operstate"}))
        .await;
    let t = text(&r);
    assert!(
        t.contains("UP") || t.contains("UNKNOWN") || t.starts_with("unknown"),
        "{t}"
    );
}

/// F3: the model's shell must not read the API key of the process that
/// started the server from `/proc/<pid>/environ`, nor see other processes.
#[tokio::test]
async fn the_command_sees_no_host_process() {
    let s = start(&[], &[("ANTHROPIC_API_KEY", "sk-ant-canary-f3")]).await;
    let client = std::process::id();
    let r = s
        .run(json!({"command": format!(
            "test -e /proc/{client} && echo client-visible || echo client-hidden; \
             test -e /proc/{server} && echo server-visible || echo server-hidden; \
             cat /proc/{client}/environ /proc/{server}/environ /proc/1/environ /proc/$PPID/environ 2>&1 | tr '\\0' '\\n'; \
             grep -a -l canary-f3 /proc/[0-9]*/environ 2>/dev/null; \
             ls /proc | grep -c '^[0-9]'",
            server = s.pid
        )}))
        .await;
    let t = text(&r);
    assert!(!is_error(&r), "{t}");
    assert!(
        t.contains("client-hidden") && t.contains("server-hidden"),
        "{t}"
    );
    assert!(!t.contains("canary-f3"), "API key leaked: {t}");
    assert!(!t.contains("PATH="), "an environ was readable: {t}");
    // bash, the pipeline's processes and init: a handful, not the host's hundreds.
    let count: usize = t.lines().rev().nth(1).unwrap().trim().parse().unwrap();
    assert!(count < 10, "{count} processes visible: {t}");
}
