//! A process whose working directory is under the host's `/tmp` (a checkout cloned there, a
//! shell started in `/tmp/x`) runs sandboxed commands: the view replaces `/tmp` with a private
//! one, so the inherited directory is not inside it. The command starts in the workspace
//! instead of failing to start (ENOENT); a directory the caller *named* that the view hides is
//! still an error. Its own test binary: it changes the process's working directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use tern_sandbox::{Mode, Network, Policy, Sandbox, Session, Support};

#[test]
fn an_inherited_directory_the_view_hides_starts_the_command_in_the_workspace() {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&root).unwrap();
    let under_tmp = tempfile::tempdir_in("/tmp").unwrap();
    let hidden = under_tmp.path().canonicalize().unwrap();
    std::env::set_current_dir(&hidden).unwrap();

    for mode in [Mode::WorkspaceWrite, Mode::ReadOnly] {
        let policy = Policy::new(mode, Network::Off, vec![root.clone()]);
        let sandbox = Sandbox::new(policy, &Support::detect()).unwrap();
        assert!(
            sandbox.summary().contains("read-only view"),
            "{}",
            sandbox.summary()
        );
        let mut cmd = Command::new("pwd");
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        sandbox.configure(&mut cmd, Session::New).unwrap();
        let out = cmd.output().expect("the command starts");
        assert!(out.status.success(), "{mode:?}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            root.to_string_lossy(),
            "{mode:?}"
        );

        // Named by the caller: the command does not start somewhere else.
        let mut named = Command::new("pwd");
        named.current_dir(&hidden).stdin(Stdio::null());
        sandbox.configure(&mut named, Session::New).unwrap();
        assert!(
            named
                .output()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound),
            "{mode:?}: a named directory the view hides must fail"
        );
    }
}
