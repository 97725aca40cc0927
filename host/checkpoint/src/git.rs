//! Every `git` the store runs, and the environment it runs in.
//!
//! The store is a repository of its own (`GIT_DIR`) whose work tree is the workspace
//! (`GIT_WORK_TREE`), with a private index (`GIT_INDEX_FILE`). Nothing of the user's git setup
//! may reach it: a project's `.git`, the user's `~/.gitconfig` (aliases, `core.fsmonitor`, an
//! external diff, hooks, `core.autocrlf`, a global excludes file) or a `GIT_*` variable
//! inherited from a hook would each make a checkpoint something other than the bytes on disk,
//! or run code. So every `GIT_*` variable is dropped, system and global config are off, and
//! the settings that could run a program are pinned on the command line as well as in the
//! store's own config.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// Oldest git the store is tested with: `status --porcelain=v2`, `update-ref --stdin`,
/// `init --initial-branch`.
pub(crate) const MIN_VERSION: (u32, u32) = (2, 28);

/// Settings pinned on every command line, over anything a config file could say: the ones
/// that would run a program (`core.fsmonitor`, hooks — `update-ref` runs the
/// reference-transaction hook) or refuse to work (`safe.directory`, for a workspace owned by
/// someone else).
const PINNED: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "safe.directory=*",
];

/// How to run git against one store.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    program: PathBuf,
    git_dir: PathBuf,
    work_tree: PathBuf,
    index: PathBuf,
}

impl Git {
    pub(crate) fn new(git_dir: PathBuf, work_tree: PathBuf, index: PathBuf) -> Self {
        Self {
            program: PathBuf::from("git"),
            git_dir,
            work_tree,
            index,
        }
    }

    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// Checks that git runs and is new enough; returns its version string.
    pub(crate) fn check_version(&self) -> Result<String> {
        let out = self
            .bare_command()
            .arg("--version")
            .output()
            .map_err(|e| Error::GitMissing {
                reason: e.to_string(),
            })?;
        if !out.status.success() {
            return Err(Error::GitMissing {
                reason: format!(
                    "`git --version` exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let version = text.trim_start_matches("git version ").to_string();
        let mut parts = version
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|p| p.parse::<u32>().ok());
        let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if found < MIN_VERSION {
            return Err(Error::GitTooOld {
                found: version,
                required: "2.28",
            });
        }
        Ok(version)
    }

    /// `git init` of the store's repository (no templates: no sample hooks, no description).
    pub(crate) fn init(&self) -> Result<()> {
        let out = self
            .bare_command()
            .env("GIT_DIR", &self.git_dir)
            .args([
                "init",
                "--quiet",
                "--bare",
                "--template=",
                "--shared=0600",
                "--initial-branch=checkpoints",
            ])
            .output()
            .map_err(|e| Error::GitMissing {
                reason: e.to_string(),
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(self.failure("init", &out.stderr))
        }
    }

    /// Runs `git ARGS` against the store and returns its stdout; a non-zero exit is an error
    /// carrying its stderr.
    pub(crate) fn run(&self, args: &[&str]) -> Result<Vec<u8>> {
        self.run_with(args, None)
    }

    /// Like [`Git::run`], with `input` on stdin.
    pub(crate) fn run_with(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        self.run_os(&args, input)
    }

    /// Like [`Git::run_with`], for arguments that may not be UTF-8 (paths).
    pub(crate) fn run_os(&self, args: &[&OsStr], input: Option<&[u8]>) -> Result<Vec<u8>> {
        let (ok, stdout, stderr) = self.output(args, input)?;
        if ok {
            Ok(stdout)
        } else {
            let shown: Vec<_> = args.iter().map(|a| a.to_string_lossy()).collect();
            Err(self.failure(&shown.join(" "), &stderr))
        }
    }

    /// Runs `git ARGS`; returns whether it succeeded, its stdout and its stderr.
    fn output(&self, args: &[&OsStr], input: Option<&[u8]>) -> Result<(bool, Vec<u8>, Vec<u8>)> {
        let mut cmd = self.bare_command();
        cmd.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", &self.index)
            // Paths on stdin and in pathspecs are relative to the workspace.
            .current_dir(&self.work_tree)
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| Error::GitMissing {
            reason: e.to_string(),
        })?;
        // Fed from a thread: a long path list on stdin and a long answer on stdout would
        // otherwise wait on each other.
        let feeder = match (input, child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || stdin.write_all(&bytes)))
            }
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io("wait for", &self.program, e))?;
        if let Some(feeder) = feeder {
            match feeder.join() {
                Ok(Ok(())) => {}
                // git stopped reading: its exit status and stderr say why.
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Ok(Err(e)) => return Err(Error::io("write to", &self.program, e)),
                Err(_) => {
                    return Err(Error::Corrupt {
                        store: self.git_dir.clone(),
                        detail: "the thread feeding git its input panicked".into(),
                    });
                }
            }
        }
        Ok((out.status.success(), out.stdout, out.stderr))
    }

    fn failure(&self, command: &str, stderr: &[u8]) -> Error {
        Error::Git {
            command: command.to_string(),
            store: self.git_dir.clone(),
            stderr: String::from_utf8_lossy(stderr).trim().to_string(),
        }
    }

    /// `git` with a scrubbed environment and the pinned settings, before any repository
    /// variable is set.
    fn bare_command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        for (key, _) in std::env::vars_os() {
            if is_git_variable(&key) {
                cmd.env_remove(key);
            }
        }
        cmd.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            // Messages in errors are read by people; keep them in one language.
            .env("LC_ALL", "C")
            .arg("--no-pager");
        for setting in PINNED {
            cmd.arg("-c").arg(setting);
        }
        cmd
    }
}

fn is_git_variable(key: &OsString) -> bool {
    key.to_str().is_some_and(|k| k.starts_with("GIT_"))
}

/// Splits NUL-terminated git output (`-z`) into its records.
pub(crate) fn split_nul(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| *b == 0).filter(|record| !record.is_empty())
}

/// Joins paths as NUL-terminated records for `--stdin -z`.
pub(crate) fn join_nul<'a>(paths: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(p);
        out.push(0);
    }
    out
}

/// The first line of `bytes` as an object id, checked.
pub(crate) fn oid_line(bytes: &[u8], git_dir: &Path, what: &str) -> Result<String> {
    let text = String::from_utf8_lossy(bytes);
    let oid = text.trim();
    if is_hex_id(oid) {
        Ok(oid.to_string())
    } else {
        Err(Error::Corrupt {
            store: git_dir.to_path_buf(),
            detail: format!("{what} printed `{oid}`, not an object id"),
        })
    }
}

/// A full SHA-1 or SHA-256 object id.
pub(crate) fn is_hex_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}
