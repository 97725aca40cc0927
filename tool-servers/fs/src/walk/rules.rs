//! Which entries a walk skips: `.gitignore`, `.ignore`, `.git/info/exclude`,
//! the user's global gitignore, and a caller's override globs.
//!
//! The semantics are those of the `ignore` crate (ripgrep's walker) as tern-fs
//! configures it: hidden files are shown, a `.git` repository is not required
//! for `.gitignore` to count, and precedence is override globs, then `.ignore`,
//! then `.gitignore`, then `.git/info/exclude`, then the global gitignore, the
//! nearest directory's file winning within each kind. What differs is how the
//! files are read: through the directory handle the walk already holds, with
//! `O_NOFOLLOW`, never by path, so an ignore file cannot be swapped for a link
//! to something outside the roots either.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::Override;
use rustix::fs::{self as rfs, FileType, Mode, OFlags};

use crate::deny::Deny;

/// Bytes of one ignore file read at most; a larger file is cut there.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// The rules of one walk.
pub(crate) struct Rules<'a> {
    /// The user's global gitignore (`core.excludesFile`), read once at startup;
    /// `None` when the walk reads no ignore file at all and enters `.git`.
    global: Option<Arc<Gitignore>>,
    /// The caller's `--glob`-style overrides; empty when there are none.
    overrides: Override,
    /// The host's deny rules for this call.
    deny: Option<&'a Deny>,
}

impl<'a> Rules<'a> {
    /// The rules tools walk by: ignore files, `overrides`, and `deny`.
    pub(crate) fn new(global: Arc<Gitignore>, overrides: Override, deny: &'a Deny) -> Self {
        Self {
            global: Some(global),
            overrides,
            deny: (!deny.is_empty()).then_some(deny),
        }
    }

    /// Nothing skipped, `.git` included: for finding denied files, which are
    /// usually git-ignored themselves.
    pub(crate) fn everything() -> Self {
        Self {
            global: None,
            overrides: Override::empty(),
            deny: None,
        }
    }

    /// Whether directories' ignore files count (and `.git` is skipped).
    pub(crate) fn reads_ignore_files(&self) -> bool {
        self.global.is_some()
    }

    /// Whether the entry at `path` (in the directory whose rules are `level`) is
    /// left out of the walk: denied by the host, or ignored.
    pub(crate) fn skips(&self, level: &Level, path: &Path, is_dir: bool) -> bool {
        if self.deny.is_some_and(|d| d.entry_rule(path).is_some()) {
            return true;
        }
        match &self.global {
            Some(global) => self.ignored(global, level, path, is_dir),
            None => false,
        }
    }

    fn ignored(&self, global: &Gitignore, level: &Level, path: &Path, is_dir: bool) -> bool {
        if !self.overrides.is_empty() {
            let m = self.overrides.matched(path, is_dir);
            if !m.is_none() {
                return m.is_ignore();
            }
        }
        let (mut dot_ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None);
        let mut next = Some(level);
        while let Some(l) = next {
            if dot_ignore.is_none() {
                dot_ignore = l.dot_ignore.matched(path, is_dir);
            }
            if git.is_none() {
                git = l.git.matched(path, is_dir);
            }
            if exclude.is_none() {
                exclude = l.exclude.matched(path, is_dir);
            }
            next = l.parent.as_deref();
        }
        dot_ignore
            .or(git)
            .or(exclude)
            .or(global.matched(path, is_dir))
            .is_ignore()
    }
}

/// The global gitignore, or an empty matcher when there is none (or it is unreadable:
/// a broken user config must not make every search fail).
pub(crate) fn global_gitignore() -> Gitignore {
    let (gitignore, error) = Gitignore::global();
    if let Some(e) = error {
        tracing::debug!("global gitignore: {e}");
    }
    gitignore
}

/// The ignore files of one directory, chained to its parent's.
pub(crate) struct Level {
    dot_ignore: Gitignore,
    git: Gitignore,
    exclude: Gitignore,
    parent: Option<Arc<Level>>,
}

/// Which ignore-relevant names a directory listing contained, so that a
/// directory without them costs no extra system call.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Found {
    pub(crate) dot_ignore: bool,
    pub(crate) gitignore: bool,
    pub(crate) git_dir: bool,
}

impl Found {
    /// Notes `name` (of type `kind`) if it is one of the names that matter.
    pub(crate) fn note(&mut self, name: &[u8], kind: FileType) {
        match name {
            b".ignore" => self.dot_ignore = true,
            b".gitignore" => self.gitignore = true,
            b".git" => self.git_dir = kind == FileType::Directory,
            _ => {}
        }
    }

    /// Everything present, for directories whose listing we do not have.
    pub(crate) const ALL: Self = Self {
        dot_ignore: true,
        gitignore: true,
        git_dir: true,
    };
}

impl Level {
    /// No rules: above the outermost directory a walk reads.
    pub(crate) fn top() -> Arc<Level> {
        Arc::new(Level {
            dot_ignore: Gitignore::empty(),
            git: Gitignore::empty(),
            exclude: Gitignore::empty(),
            parent: None,
        })
    }

    /// The rules for entries of `dir` (at `path`), given its parent's.
    /// Shares the parent's level when `dir` has no ignore file of its own.
    pub(crate) fn child(
        parent: &Arc<Level>,
        dir: BorrowedFd<'_>,
        path: &Path,
        found: Found,
    ) -> Arc<Level> {
        let dot_ignore = found
            .dot_ignore
            .then(|| matcher(dir, OsStr::new(".ignore"), path))
            .flatten();
        let git = found
            .gitignore
            .then(|| matcher(dir, OsStr::new(".gitignore"), path))
            .flatten();
        let exclude = found.git_dir.then(|| git_exclude(dir, path)).flatten();
        if dot_ignore.is_none() && git.is_none() && exclude.is_none() {
            return Arc::clone(parent);
        }
        Arc::new(Level {
            dot_ignore: dot_ignore.unwrap_or_else(Gitignore::empty),
            git: git.unwrap_or_else(Gitignore::empty),
            exclude: exclude.unwrap_or_else(Gitignore::empty),
            parent: Some(Arc::clone(parent)),
        })
    }
}

/// `.git/info/exclude` below `dir`, each step without following a link.
fn git_exclude(dir: BorrowedFd<'_>, path: &Path) -> Option<Gitignore> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let git = rfs::openat(dir, ".git", flags, Mode::empty()).ok()?;
    let info = rfs::openat(&git, "info", flags, Mode::empty()).ok()?;
    matcher(info.as_fd(), OsStr::new("exclude"), path)
}

/// A matcher for the gitignore-syntax file `name` in `dir`, rooted at `root`;
/// `None` when it does not exist, is not a regular file, or has no rules.
fn matcher(dir: BorrowedFd<'_>, name: &OsStr, root: &Path) -> Option<Gitignore> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let stat = rfs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_IGNORE_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(root);
    for (i, line) in text.lines().enumerate() {
        // Git ignores a byte-order mark at the start of the file.
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        // A bad glob skips its line, as in git and ripgrep.
        let _ = builder.add_line(None, line);
    }
    let built = builder.build().ok()?;
    (!built.is_empty()).then_some(built)
}
