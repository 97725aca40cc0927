//! Security round 3 (issue 24), the structural layers, as attacks through `tern run --mode
//! yolo` (no rule in the way) against the real built-in shell: the mount view (metadata
//! outside, setuid copies, files outliving the call in /tmp and /dev/shm), the minimal /dev
//! (a host terminal), host unix sockets with the network off, `.git` (a planted `commondir`
//! followed by the user's own `git status`) and denied files read through the shell. Each of
//! the first group runs under `workspace-write` and `--sandbox read-only`.

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tern_e2e::run_env::RunEnv;

use super::{finished, run_ok, turn};

fn output(events: &[Value], id: &str) -> String {
    finished(events, id)["output"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// One model turn with one `shell__run` per command, then "done".
fn shell_calls(env: &RunEnv, commands: &[String]) {
    let calls: Vec<(String, Value)> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("toolu_{i}"), json!({ "command": c })))
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "shell__run", args.clone()))
        .collect();
    turn(env, &calls);
    env.answer("done");
}

/// A terminal of the host's, held open by a helper: its `/dev/pts/N` path.
struct HostPty {
    child: std::process::Child,
    path: String,
}

fn host_pty() -> HostPty {
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import os,time; m,s=os.openpty(); print(os.ttyname(s), flush=True); time.sleep(120)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is a test dependency (.ci/install-test-deps)");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    HostPty {
        child,
        path: line.trim().to_string(),
    }
}

impl Drop for HostPty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn metadata_setuid_leftovers_terminals_and_host_sockets_are_out_of_reach() {
    let pty = host_pty();
    assert!(Path::new(&pty.path).exists(), "{}", pty.path);
    // Outside the workspace and not under the host's /tmp (which the view replaces).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = outside.path().join("f");
    std::fs::write(&file, "x").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    // A host service's socket under /run.
    let run_dir = PathBuf::from(format!("/run/tern-e2e-mountview-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir).expect("CI runs as root: /run is writable");
    let socket = run_dir.join("agent.sock");
    let _ = std::fs::remove_file(&socket);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();

    for sandbox in [None, Some("read-only")] {
        let env = RunEnv::new().await;
        let tag = format!(
            "tern-e2e-{}-{}",
            std::process::id(),
            sandbox.unwrap_or("ww")
        );
        let f = file.display();
        let commands = [
            format!("chmod 0777 {f}; echo chmod=$?; chmod 4755 {f}; echo suid=$?"),
            format!("touch -d 2001-01-01 {f}; echo touch=$?"),
            format!(
                "python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.x\", b\"1\")' {f}; \
                 echo xattr=$?"
            ),
            format!(
                "cp /bin/sh $TMPDIR/{tag}; chmod 4755 $TMPDIR/{tag}; echo tmpsuid=$?; \
                 echo x > /tmp/{tag}.plain; echo x > /dev/shm/{tag}; echo made"
            ),
            format!(
                "printf '\\033]52;c;aGk=\\a' > {p}; echo pts=$?; ls /dev | tr '\\n' ' '",
                p = pty.path
            ),
            format!(
                "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); \
                 s.connect(sys.argv[1]); print(\"CONNECTED\")' {}; echo unix=$?",
                socket.display()
            ),
        ];
        shell_calls(&env, &commands);
        let mut args = vec!["--mode", "yolo"];
        if let Some(mode) = sandbox {
            args.extend(["--sandbox", mode]);
        }
        let events = run_ok(&env, "try", &args).await;
        let label = sandbox.unwrap_or("workspace-write");
        let out: Vec<String> = (0..commands.len())
            .map(|i| output(&events, &format!("toolu_{i}")))
            .collect();
        for (i, probe) in [
            (0, "chmod=0"),
            (0, "suid=0"),
            (1, "touch=0"),
            (2, "xattr=0"),
            (3, "tmpsuid=0"),
            (4, "pts=0"),
            (5, "CONNECTED"),
        ] {
            assert!(!out[i].contains(probe), "{label}: {probe}:\n{}", out[i]);
        }
        assert!(
            out[4].contains("null") && !out[4].contains("kmsg"),
            "{label}: {}",
            out[4]
        );
        assert!(
            !out[4].contains("tty") && !out[4].contains("kvm"),
            "{label}: {}",
            out[4]
        );
        // Nothing reached the host.
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o644, "{label}");
        assert_eq!(meta.modified().unwrap(), mtime, "{label}");
        for leftover in [
            format!("/tmp/{tag}"),
            format!("/tmp/{tag}.plain"),
            format!("/dev/shm/{tag}"),
        ] {
            assert!(
                !Path::new(&leftover).exists(),
                "{label}: {leftover} outlived the call"
            );
        }
        assert!(
            listener.accept().is_err(),
            "{label}: the host listener was reached"
        );
    }
    drop(listener);
    let _ = std::fs::remove_dir_all(&run_dir);
}

/// A hostile repository planted where a `commondir` can name it: its `core.fsmonitor` runs
/// at the user's next `git status` on the host unless the planting fails or is undone.
const PLANT: &str = "mkdir -p evil && git init -q evil && \
     git -C evil config core.fsmonitor \"touch $MARKER\" && \
     echo \"$PWD/evil/.git\" > .git/commondir; echo plant=$?";

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn init_repo(dir: &Path) {
    assert!(git(dir, &["init", "-q"]).status.success());
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    assert!(git(dir, &["add", "a.txt"]).status.success());
    let commit = git(
        dir,
        &[
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "one",
        ],
    );
    assert!(commit.status.success(), "{commit:?}");
}

#[tokio::test]
async fn a_planted_commondir_never_reaches_the_users_git() {
    let markers = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Sanity: the attack is real when nothing stops it (planted on the host by hand).
    let bare = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    init_repo(bare.path());
    let marker = markers.path().join("sanity");
    let planted = std::process::Command::new("sh")
        .args(["-c", PLANT])
        .env("MARKER", &marker)
        .current_dir(bare.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&planted.stdout).contains("plant=0"));
    git(bare.path(), &["status", "--short"]);
    assert!(
        marker.exists(),
        "the planted commondir did not run its fsmonitor"
    );

    for git_writes in [false, true] {
        let env = RunEnv::new().await;
        init_repo(env.dir.path());
        if git_writes {
            env.add_servers("[sandbox]\ngit_writes = true\n");
        }
        let marker = markers.path().join(format!("fired-{git_writes}"));
        let commands = [
            format!("export MARKER={}; {PLANT}", marker.display()),
            "mv .git .git.moved; echo mv=$?; ls -d .git*".to_string(),
            "echo two > a.txt; git -c user.email=t@t -c user.name=t commit -qam two; \
             echo commit=$?"
                .to_string(),
        ];
        // One call per model turn: calls of one turn may run at once.
        for (i, command) in commands.iter().enumerate() {
            let id = format!("toolu_{i}");
            turn(
                &env,
                &[(id.as_str(), "shell__run", json!({ "command": command }))],
            );
        }
        env.answer("done");
        let events = run_ok(&env, "try", &["--mode", "yolo"]).await;
        let plant = output(&events, "toolu_0");
        let mv = output(&events, "toolu_1");
        let commit = output(&events, "toolu_2");
        if git_writes {
            // Written during the call, removed after it, and said.
            assert!(
                plant.contains("commondir was created by the command and has been removed"),
                "{plant}"
            );
            assert!(
                commit.contains("commit=0"),
                "git_writes lets commands commit: {commit}\n{plant}\n{mv}"
            );
        } else {
            assert!(
                plant.contains("Read-only file system") && !plant.contains("plant=0"),
                "{plant}"
            );
            assert!(!commit.contains("commit=0"), ".git is read-only: {commit}");
        }
        assert!(
            mv.contains("mv=1") && !mv.contains("\n.git.moved\n"),
            "{mv}"
        );
        let dir = env.dir.path();
        assert!(!dir.join(".git/commondir").exists());
        assert!(dir.join(".git").is_dir() && !dir.join(".git.moved").exists());
        // The user's own git, on the host, outside any sandbox.
        let status = git(dir, &["status", "--short"]);
        assert!(status.status.success(), "{status:?}");
        assert!(
            !marker.exists(),
            "git_writes={git_writes}: the hostile fsmonitor ran"
        );
    }
}

#[tokio::test]
async fn a_denied_file_reads_as_empty_through_every_shell_spelling() {
    for sandbox in [None, Some("read-only")] {
        let env = RunEnv::new().await;
        let dir = env.dir.path();
        let secret = "DENIED-CONTENT-7373";
        std::fs::write(dir.join(".env"), format!("KEY={secret}\n")).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/.env"), format!("KEY={secret}\n")).unwrap();
        std::fs::write(dir.join("notes.txt"), "visible notes\n").unwrap();
        let commands = [
            "cat \"$PWD/.env\"; echo rc=$?".to_string(),
            "dd if=./.e''nv status=none; echo rc=$?".to_string(),
            "grep -r KEY . ; echo rc=$?".to_string(),
            "python3 -c \"print(open('sub/'+'.env').read())\"".to_string(),
            "cat notes.txt".to_string(),
        ];
        shell_calls(&env, &commands);
        let mut args = vec!["--mode", "yolo", "--deny", "fs__*(path: **/.env)"];
        if let Some(mode) = sandbox {
            args.extend(["--sandbox", mode]);
        }
        let events = run_ok(&env, "try", &args).await;
        for (i, command) in commands.iter().enumerate().take(4) {
            let out = output(&events, &format!("toolu_{i}"));
            assert!(!out.contains(secret), "{sandbox:?} {command}: {out}");
        }
        assert!(output(&events, "toolu_4").contains("visible notes"));
        assert!(
            std::fs::read_to_string(dir.join(".env"))
                .unwrap()
                .contains(secret)
        );
    }
}
