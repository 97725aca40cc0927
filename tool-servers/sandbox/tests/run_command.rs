//! The library API `tern sandbox -- CMD` will use: one command, inherited
//! stdio, under a policy — including the fallbacks a kernel without some
//! layer gets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::Command;

use tern_sandbox::{Mode, Network, Policy, Sandbox, Session, Support};

fn bash(script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script);
    cmd
}

#[test]
fn run_command_confines_writes_and_reports_the_exit_code() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    std::fs::create_dir(&root).unwrap();
    let policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![root.clone()]);
    let sandbox = Sandbox::new(policy, &Support::detect()).unwrap();
    assert!(
        sandbox.degradations().is_empty(),
        "{:?}",
        sandbox.degradations()
    );
    let script = format!(
        "touch {r}/inside && ! touch {b}/outside 2>/dev/null && exit 7",
        r = root.display(),
        b = base.display()
    );
    let status = sandbox
        .run_command(&mut bash(&script), Session::Inherit)
        .unwrap();
    assert_eq!(status.code(), Some(7));
    assert!(root.join("inside").exists());
    assert!(!base.join("outside").exists());
}

#[test]
fn without_a_network_namespace_network_off_still_holds() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut support = Support::detect();
    support.network_namespace = Err("refused by the test".into());
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let policy = Policy::new(Mode::WorkspaceWrite, Network::Off, Vec::new());
    let sandbox = Sandbox::new(policy, &support).unwrap();
    assert_eq!(sandbox.degradations().len(), 1);
    let status = sandbox
        .run_command(&mut bash(&connect), Session::New)
        .unwrap();
    assert!(!status.success(), "connected without a network namespace");
    // The same command with the network on connects.
    let policy = Policy::new(Mode::WorkspaceWrite, Network::On, Vec::new());
    let sandbox = Sandbox::new(policy, &support).unwrap();
    let status = sandbox
        .run_command(&mut bash(&connect), Session::New)
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_signal_ending_the_command_is_reported_as_that_signal() {
    use std::os::unix::process::ExitStatusExt;
    for mode in [Mode::WorkspaceWrite, Mode::FullAccess] {
        let sandbox = Sandbox::new(
            Policy::new(mode, Network::Off, Vec::new()),
            &Support::detect(),
        )
        .unwrap();
        let status = sandbox
            .run_command(&mut bash("kill -TERM $$"), Session::New)
            .unwrap();
        assert_eq!(status.signal(), Some(15), "{mode}: {status:?}");
    }
}

#[test]
fn commands_of_one_sandbox_share_one_private_network_namespace() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let policy = Policy::new(Mode::WorkspaceWrite, Network::Off, vec![root.clone()]);
    let sandbox = Sandbox::new(policy, &Support::detect()).unwrap();
    for name in ["a", "b"] {
        let script = format!("readlink /proc/self/ns/net > {}/{name}", root.display());
        let status = sandbox
            .run_command(&mut bash(&script), Session::New)
            .unwrap();
        assert!(status.success());
    }
    let a = std::fs::read_to_string(root.join("a")).unwrap();
    let b = std::fs::read_to_string(root.join("b")).unwrap();
    let host = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert!(a.starts_with("net:["), "{a}");
    assert_eq!(a, b, "made once, joined by every command");
    assert_ne!(a.trim(), host.to_str().unwrap(), "not the host's");
}
