//! Harbor's filesystem layout on this machine, without a container.
//!
//! A Harbor verifier is a script written for its container: it runs in the workspace (`/app`),
//! reads its own files from `/tests` and writes `/logs/verifier/reward.txt`
//! (`harbor.models.trial.paths.EnvironmentPaths`). To run such a script unchanged, `tern eval`
//! gives it a root of its own in which those paths exist and are the trial's directories:
//!
//! - `unshare --user --map-root-user --mount --pid --fork --kill-child --mount-proc` (util-linux)
//!   makes a user, mount and pid namespace — no privilege needed, and everything the script
//!   starts dies with it;
//! - inside, `tern __harbor-root` (this module's [`enter`]) mounts a tmpfs as the new root,
//!   binds every top-level directory of the host's `/` into it (so `/usr`, `/bin`, `/tmp` are
//!   the host's), binds the trial's directories at `/app`, `/tests`, `/logs/…`, `chroot`s
//!   there and execs the command.
//!
//! Only mounts inside the new namespace change: the host sees nothing of it. Writes land where
//! the bound directories are (the workspace copy, the trial's logs) or where the host allows.

use std::{
    ffi::OsString,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
};

/// What the command sees, and where it runs.
#[derive(Debug, Clone)]
pub struct Layout {
    /// An empty directory the new root is mounted on (inside the namespace only).
    pub root: PathBuf,
    /// `(absolute path inside, directory outside)`.
    pub binds: Vec<(String, PathBuf)>,
    /// The working directory inside.
    pub cwd: String,
}

/// The hidden subcommand that sets the root up (run by `unshare`, never by a person).
pub const SUBCOMMAND: &str = "__harbor-root";

impl Layout {
    /// A command that runs `bash -c SCRIPT` inside the layout. The caller adds the environment,
    /// stdio and `kill_on_drop`.
    pub fn command(&self, script: &str) -> anyhow::Result<tokio::process::Command> {
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot find the tern binary to set up the root: {e}"))?;
        let mut cmd = tokio::process::Command::new("unshare");
        cmd.args([
            "--user",
            "--map-root-user",
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount-proc",
            "--",
        ]);
        cmd.arg(exe).arg(SUBCOMMAND);
        cmd.arg("--root").arg(&self.root);
        for (inside, outside) in &self.binds {
            let mut spec = OsString::from(inside);
            spec.push("=");
            spec.push(outside);
            cmd.arg("--bind").arg(spec);
        }
        cmd.arg("--cwd").arg(&self.cwd);
        cmd.arg("--").arg("bash").arg("-c").arg(script);
        Ok(cmd)
    }
}

/// Parsed arguments of [`SUBCOMMAND`].
#[derive(Debug, PartialEq)]
struct Args {
    root: PathBuf,
    binds: Vec<(PathBuf, PathBuf)>,
    cwd: PathBuf,
    command: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut root = None;
    let mut binds = Vec::new();
    let mut cwd = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{a:?} needs a value"));
        match a.to_str() {
            Some("--root") => root = Some(PathBuf::from(value()?)),
            Some("--cwd") => cwd = Some(PathBuf::from(value()?)),
            Some("--bind") => {
                let v = value()?;
                let text = v.to_string_lossy();
                let (inside, outside) = text
                    .split_once('=')
                    .ok_or(format!("--bind {text}: expected INSIDE=OUTSIDE"))?;
                if !inside.starts_with('/') || inside == "/" {
                    return Err(format!("--bind {text}: INSIDE must be absolute, not /"));
                }
                binds.push((PathBuf::from(inside), PathBuf::from(outside)));
            }
            Some("--") => break,
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    let command: Vec<OsString> = it.cloned().collect();
    if command.is_empty() {
        return Err("no command after --".into());
    }
    Ok(Args {
        root: root.ok_or("--root is required")?,
        binds,
        cwd: cwd.unwrap_or_else(|| PathBuf::from("/")),
        command,
    })
}

/// `tern __harbor-root --root DIR [--bind INSIDE=OUTSIDE]… [--cwd DIR] -- CMD ARGS…`: builds
/// the root in the current (fresh) mount namespace and execs CMD there. Returns only on
/// failure, with the exit code to use.
pub fn enter(args: &[OsString]) -> i32 {
    match parse(args).and_then(|a| build(&a).map(|()| a)) {
        Ok(a) => {
            let err = std::process::Command::new(&a.command[0])
                .args(&a.command[1..])
                .exec();
            report(&format!("cannot run {:?}: {err}", a.command[0]))
        }
        Err(e) => report(&e),
    }
}

fn report(message: &str) -> i32 {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "tern: harbor layout: {message}");
    127
}

fn build(a: &Args) -> Result<(), String> {
    use rustix::mount::{MountFlags, mount, mount_bind, mount_bind_recursive};
    let io = |what: &str, path: &Path, e: std::io::Error| format!("{what} {}: {e}", path.display());
    let sys =
        |what: &str, path: &Path, e: rustix::io::Errno| format!("{what} {}: {e}", path.display());
    mount("tmpfs", &a.root, "tmpfs", MountFlags::empty(), None)
        .map_err(|e| sys("cannot mount a tmpfs on", &a.root, e))?;
    // Top-level names the binds (and the fresh /proc) take over.
    let mut taken: Vec<OsString> = a
        .binds
        .iter()
        .filter_map(|(inside, _)| inside.components().nth(1))
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    taken.push("proc".into());
    let entries = std::fs::read_dir("/").map_err(|e| io("cannot list", Path::new("/"), e))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        if taken.contains(&name) {
            continue;
        }
        let from = entry.path();
        let to = a.root.join(&name);
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            let target = std::fs::read_link(&from).map_err(|e| io("cannot read", &from, e))?;
            std::os::unix::fs::symlink(target, &to).map_err(|e| io("cannot create", &to, e))?;
        } else if kind.is_dir() {
            std::fs::create_dir(&to).map_err(|e| io("cannot create", &to, e))?;
            // A directory the namespace may not bind (another user's mount) is left empty.
            let _ = mount_bind_recursive(&from, &to);
        }
    }
    let proc_dir = a.root.join("proc");
    std::fs::create_dir_all(&proc_dir).map_err(|e| io("cannot create", &proc_dir, e))?;
    mount_bind_recursive("/proc", &proc_dir).map_err(|e| sys("cannot bind", &proc_dir, e))?;
    for (inside, outside) in &a.binds {
        let Ok(rel) = inside.strip_prefix("/") else {
            continue;
        };
        let to = a.root.join(rel);
        std::fs::create_dir_all(&to).map_err(|e| io("cannot create", &to, e))?;
        mount_bind(outside, &to).map_err(|e| sys("cannot bind", outside, e))?;
    }
    rustix::process::chroot(&a.root).map_err(|e| sys("cannot chroot to", &a.root, e))?;
    std::env::set_current_dir(&a.cwd).map_err(|e| io("cannot enter", &a.cwd, e))?;
    Ok(())
}

/// Whether this machine can build the layout: `unshare` exists and may make a user namespace.
/// Probed by running `true` the way [`Layout::command`] runs a script.
pub async fn probe() -> Result<(), String> {
    let out = tokio::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "--", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run `unshare` (util-linux): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`unshare --user --mount` failed: {} (unprivileged user namespaces may be off: \
             sysctl kernel.unprivileged_userns_clone)",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_parse_and_bad_ones_are_refused() {
        let a = parse(&os(&[
            "--root",
            "/r",
            "--bind",
            "/app=/w",
            "--bind",
            "/logs/verifier=/v",
            "--cwd",
            "/app",
            "--",
            "bash",
            "-c",
            "true",
        ]))
        .unwrap();
        assert_eq!(a.root, PathBuf::from("/r"));
        assert_eq!(a.binds.len(), 2);
        assert_eq!(a.cwd, PathBuf::from("/app"));
        assert_eq!(a.command, os(&["bash", "-c", "true"]));
        assert!(parse(&os(&["--root", "/r", "--"])).is_err());
        assert!(parse(&os(&["--root", "/r", "--bind", "app=/w", "--", "x"])).is_err());
        assert!(parse(&os(&["--bind", "/a=/w", "--", "x"])).is_err());
        assert!(parse(&os(&["--what", "--", "x"])).is_err());
    }
}
