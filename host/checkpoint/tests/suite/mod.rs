//! Real workspaces in temp directories, the real `git`, real `sed`/`rm`/`chmod` processes.

mod concurrency;
mod git_project;
mod limits;
mod restore;
mod store;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use tern_checkpoint::{Limits, Store};

/// A workspace and a `$TERN_HOME`, both fresh.
pub struct Env {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
        }
    }

    pub fn store(&self) -> Store {
        Store::open(self.home.path(), self.ws.path()).unwrap()
    }

    pub fn store_with(&self, limits: Limits) -> Store {
        Store::open_with(self.home.path(), self.ws.path(), limits).unwrap()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.path().join(rel)
    }

    pub fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Runs a real command in the workspace (what `shell__run` would do).
    pub fn sh(&self, script: &str) {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(self.ws.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Every file and symlink of the workspace except the project's `.git`, as a restore
    /// must reproduce them (directories, like git's, are implied by what they hold: an empty
    /// one is not recorded).
    pub fn tree(&self) -> BTreeMap<PathBuf, Entry> {
        tree(self.ws.path(), &[".git"])
            .into_iter()
            .filter(|(_, e)| !matches!(e, Entry::Dir { .. }))
            .collect()
    }

    /// The paths a checkpoint's tree holds, from the store's repository (read with `git`
    /// directly, as a check independent of the store's own code).
    pub fn recorded(&self, store: &Store, id: &tern_checkpoint::Id) -> Vec<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(store.dir().join("repo"))
            .args(["ls-tree", "-r", "--name-only", "-z", id.as_str()])
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }
}

/// One entry of a directory tree, as a restore must reproduce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File { mode: u32, sha256: String, len: u64 },
    Symlink(PathBuf),
    Dir { mode: u32 },
}

/// Walks `root` without following symlinks, leaving out top-level names in `skip`.
pub fn tree(root: &Path, skip: &[&str]) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(root.join(&rel)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name();
            if rel.as_os_str().is_empty() && skip.iter().any(|s| name == *s) {
                continue;
            }
            let path = rel.join(&name);
            let md = std::fs::symlink_metadata(root.join(&path)).unwrap();
            let mode = md.permissions().mode() & 0o7777;
            let e = if md.file_type().is_symlink() {
                Entry::Symlink(std::fs::read_link(root.join(&path)).unwrap())
            } else if md.is_dir() {
                stack.push(path.clone());
                Entry::Dir { mode }
            } else {
                let bytes = std::fs::read(root.join(&path)).unwrap();
                Entry::File {
                    mode,
                    sha256: hex(&Sha256::digest(&bytes)),
                    len: md.len(),
                }
            };
            out.insert(path, e);
        }
    }
    out
}

/// A hash of everything under `dir`: names, kinds, bytes, permission bits and modification
/// times — any write, even of the same bytes, changes it.
pub fn fingerprint(dir: &Path) -> String {
    let mut h = Sha256::new();
    for (path, entry) in tree(dir, &[]) {
        let md = std::fs::symlink_metadata(dir.join(&path)).unwrap();
        h.update(format!(
            "{path:?} {entry:?} {} {}\n",
            md.mtime(),
            md.mtime_nsec()
        ));
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs git in a project (the project's own git, its own config off).
pub fn project_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
