//! Confinement: turning a path a model sent into an open handle inside a root.
//!
//! The reference filesystem server had path-escape CVEs because it checked
//! paths as strings (`/w/root-evil` starts with `/w/root`) and then opened them
//! by name (a symlink swapped in between check and open wins). Here the kernel
//! never resolves a path for us:
//!
//! - every root is opened once, at startup, as a directory handle;
//! - a path is walked one component at a time with
//!   `openat(O_PATH|O_DIRECTORY|O_NOFOLLOW)` relative to the directory handle
//!   reached so far (the final name and links are `lstat`-ed, never opened);
//! - `..` pops our own stack of handles, it is never passed to the kernel;
//! - a symlink is read with `readlinkat` and its target is walked the same way,
//!   an absolute target only if it lies (component by component) inside a root;
//! - the final object is opened relative to the handle of its parent, and the
//!   opened file is checked to be the very inode that was resolved.
//!
//! So `/proc/self/root/…` (outside every root, and a magic link) and any chain of
//! symlinks that leaves the roots are refused, while a link from one root into
//! another is fine: the rule is "resolves inside some root" (issue 2, item 3).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single name accepted, in bytes (Linux `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// Symlinks followed while resolving one path (Linux uses 40 too).
pub const MAX_LINKS: usize = 40;
/// Components processed while resolving one path: a backstop that bounds the
/// work a hostile chain of links and `..` can cause.
const MAX_STEPS: usize = 16 * 1024;

/// Why a root given on the command line cannot be served.
#[derive(Debug, thiserror::Error)]
#[error("--root `{path}`: {source}")]
pub struct RootError {
    path: PathBuf,
    source: std::io::Error,
}

/// Why a path was refused. Every message reads well after "cannot read `p`: ".
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The path is the empty string.
    #[error("the path is empty")]
    Empty,
    /// A NUL byte cannot be part of a Unix path; refusing beats truncating.
    #[error("the path contains a NUL byte")]
    Nul,
    /// Longer than `PATH_MAX`.
    #[error("the path is {0} bytes long; the limit is {MAX_PATH_BYTES}")]
    TooLong(usize),
    /// One name longer than `NAME_MAX`.
    #[error("a name in the path is {0} bytes long; the limit is {MAX_NAME_BYTES}")]
    NameTooLong(usize),
    /// Names must be UTF-8 so that what we report is what exists.
    #[error("the name `{0}` is not valid UTF-8")]
    NotUtf8(String),
    /// Resolves (lexically or by `..`) outside every root.
    #[error("it resolves to `{resolved}`, which is outside every root ({roots})")]
    OutsideRoots { resolved: PathBuf, roots: String },
    /// A symlink on the way leads outside every root.
    #[error("it leads outside every root ({roots}) through the symlink `{link}` -> `{target}`")]
    LinkEscapes {
        link: PathBuf,
        target: PathBuf,
        roots: String,
    },
    /// Too many symlinks, most likely a loop.
    #[error("more than {MAX_LINKS} symlinks were followed (a symlink loop?)")]
    TooManyLinks,
    /// The path needs more steps than the resolver allows (16 Ki).
    #[error("the path needs too many steps to resolve")]
    TooComplex,
    /// Nothing exists at the path (or at a directory on the way).
    #[error("`{0}` does not exist")]
    NotFound(PathBuf),
    /// A component that must be a directory is not one.
    #[error("`{0}` is not a directory")]
    NotADirectory(PathBuf),
    /// Writing would go through a symlink (even a dangling one).
    #[error("`{link}` is a symlink (to `{target}`); writing through a symlink is not allowed")]
    FinalSymlink { link: PathBuf, target: PathBuf },
    /// The object changed between being resolved and being opened.
    #[error("`{0}` changed while it was being opened; try again")]
    Raced(PathBuf),
    /// Anything else the kernel said.
    #[error("{op} `{path}`: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What the caller will do with the final component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Read or list: the object must exist; a final symlink is followed (and checked).
    Open,
    /// Create or replace: the final component is never followed, may be missing,
    /// and missing parent directories are created when `parents` says so.
    Write { parents: CreateParents },
}

/// Whether [`Intent::Write`] may create missing directories on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateParents {
    /// Create them (inside the root, like `mkdir -p`).
    Yes,
    /// A missing directory is an error.
    No,
}

/// One directory the server may touch, opened once at startup.
#[derive(Debug)]
struct Root {
    /// `realpath` of the root: what we report and what absolute paths match.
    canonical: PathBuf,
    /// The root as given (made absolute), so `/link-to-root/x` works too.
    given: PathBuf,
    /// `O_PATH|O_DIRECTORY` handle every resolution starts from.
    fd: OwnedFd,
}

/// A directory handle: a root's (borrowed) or one opened on the way (owned).
#[derive(Debug)]
enum DirFd<'r> {
    Root(BorrowedFd<'r>),
    Owned(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Root(fd) => *fd,
            Self::Owned(fd) => fd.as_fd(),
        }
    }
}

/// The set of roots and the resolver over them.
#[derive(Debug)]
pub struct Roots {
    roots: Vec<Root>,
}

/// A path resolved inside a root; borrows the root's handle when the object
/// lies directly in a root (no system call to duplicate it).
#[derive(Debug)]
pub struct Resolved<'r> {
    /// Directory handle (`O_PATH`) holding `name`; the object itself when `name` is `None`.
    parent: DirFd<'r>,
    /// Final name in `parent`; `None` when the path ends at a directory reached
    /// without a name (a root, or a path ending in `..`).
    name: Option<OsString>,
    /// Metadata of the object (`lstat` of the final name), when it exists.
    existing: Option<Stat>,
    /// The real path (symlinks resolved), for messages and for walkers.
    path: PathBuf,
}

impl Roots {
    /// Opens every root. Roots may be given through symlinks; they are
    /// canonicalized once here and never re-resolved by name afterwards.
    pub fn open(dirs: &[PathBuf]) -> Result<Self, RootError> {
        let mut roots = Vec::with_capacity(dirs.len());
        for dir in dirs {
            let err = |source| RootError {
                path: dir.clone(),
                source,
            };
            let given = std::path::absolute(dir).map_err(err)?;
            let canonical = std::fs::canonicalize(dir).map_err(err)?;
            let fd = rfs::open(
                &canonical,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| err(e.into()))?;
            roots.push(Root {
                canonical,
                given,
                fd,
            });
        }
        Ok(Self { roots })
    }

    /// Canonical paths of the roots, in the order given.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.canonical.as_path())
    }

    /// Resolves `path` (relative to the first root, or absolute) for `intent`.
    pub fn resolve(&self, path: &Path, intent: Intent) -> Result<Resolved<'_>, ResolveError> {
        validate(path.as_os_str())?;
        let mut walk = Walk {
            roots: self,
            root: 0,
            stack: Vec::new(),
            pending: VecDeque::new(),
            links: 0,
            via: None,
        };
        if path.is_absolute() {
            walk.enter_absolute(path.to_path_buf())?;
        } else {
            walk.pending = normal_components(path);
        }
        walk.run(intent)
    }

    /// Every path a root is known by (its real path, and the path it was given
    /// as when that differs, e.g. through a symlink): what a caller's absolute
    /// paths and relative deny globs are anchored at.
    pub(crate) fn bases(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().flat_map(|r| {
            std::iter::once(r.canonical.as_path())
                .chain((r.given != r.canonical).then_some(r.given.as_path()))
        })
    }

    /// Handle and real path of the outermost root containing the real path `path`
    /// (compared component by component), where a walk of `path` starts.
    pub(crate) fn outermost_containing(&self, path: &Path) -> Option<(BorrowedFd<'_>, &Path)> {
        self.roots
            .iter()
            .filter(|r| path.starts_with(&r.canonical))
            .min_by_key(|r| r.canonical.components().count())
            .map(|r| (r.fd.as_fd(), r.canonical.as_path()))
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self
            .roots
            .iter()
            .map(|r| format!("`{}`", r.canonical.display()))
            .collect();
        format!("roots: {}", names.join(", "))
    }
}

/// One component still to walk.
#[derive(Debug)]
enum Step {
    Parent,
    Name(OsString),
}

/// The state of one resolution.
struct Walk<'a> {
    roots: &'a Roots,
    root: usize,
    /// Directories entered below the root, with their names.
    stack: Vec<(OwnedFd, OsString)>,
    pending: VecDeque<Step>,
    links: usize,
    /// The last symlink followed (its real path and target), for messages.
    via: Option<(PathBuf, PathBuf)>,
}

impl<'a> Walk<'a> {
    fn current(&self) -> BorrowedFd<'_> {
        match self.stack.last() {
            Some((fd, _)) => fd.as_fd(),
            None => self.roots.roots[self.root].fd.as_fd(),
        }
    }

    /// Real path of the current directory.
    fn here(&self) -> PathBuf {
        let mut p = self.roots.roots[self.root].canonical.clone();
        p.extend(self.stack.iter().map(|(_, n)| n));
        p
    }

    /// Absolute path of what is left to walk, for messages.
    fn lexical(&self, base: PathBuf) -> PathBuf {
        let mut p = base;
        for step in &self.pending {
            match step {
                // Folded, never shown as `/a/../b`: the message names where it really points.
                Step::Parent => {
                    p.pop();
                }
                Step::Name(n) => p.push(n),
            }
        }
        p
    }

    fn outside(&self, resolved: PathBuf) -> ResolveError {
        match &self.via {
            Some((link, target)) => ResolveError::LinkEscapes {
                link: link.clone(),
                target: target.clone(),
                roots: self.roots.describe(),
            },
            None => ResolveError::OutsideRoots {
                resolved,
                roots: self.roots.describe(),
            },
        }
    }

    /// Continues at the absolute path `abs` followed by what is still pending.
    /// The root is chosen by comparing whole components, never string prefixes;
    /// the outermost matching root wins so `..` inside nested roots keeps working.
    fn enter_absolute(&mut self, abs: PathBuf) -> Result<(), ResolveError> {
        let full = self.lexical(abs);
        let mut best: Option<(usize, usize, PathBuf)> = None;
        for (i, root) in self.roots.roots.iter().enumerate() {
            for base in [&root.canonical, &root.given] {
                if let Ok(rest) = full.strip_prefix(base) {
                    let depth = base.components().count();
                    if best.as_ref().is_none_or(|(_, d, _)| depth < *d) {
                        best = Some((i, depth, rest.to_path_buf()));
                    }
                }
            }
        }
        let Some((root, _, rest)) = best else {
            return Err(self.outside(full));
        };
        self.root = root;
        self.stack.clear();
        self.pending = normal_components(&rest);
        Ok(())
    }

    fn run(mut self, intent: Intent) -> Result<Resolved<'a>, ResolveError> {
        let mut steps = 0;
        while let Some(step) = self.pending.pop_front() {
            steps += 1;
            if steps > MAX_STEPS {
                return Err(ResolveError::TooComplex);
            }
            let name = match step {
                Step::Parent => {
                    if self.stack.pop().is_none() {
                        // Climbing above this root: continue lexically from its real
                        // parent, which is only allowed if that lands in a root.
                        let root = &self.roots.roots[self.root].canonical;
                        let Some(parent) = root.parent().map(Path::to_path_buf) else {
                            return Err(self.outside(self.lexical(PathBuf::from("/"))));
                        };
                        self.enter_absolute(parent)?;
                    }
                    continue;
                }
                Step::Name(name) => name,
            };
            let is_last = self.pending.is_empty();
            if !is_last {
                // A directory on the way is opened in one call: O_DIRECTORY proves
                // its type and O_NOFOLLOW that it is not a link.
                match rfs::openat(
                    self.current(),
                    name.as_os_str(),
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => {
                        self.stack.push((fd, name));
                        continue;
                    }
                    // A symlink or not a directory: looked at below.
                    Err(Errno::NOTDIR | Errno::LOOP) => {}
                    Err(Errno::NOENT)
                        if intent
                            == (Intent::Write {
                                parents: CreateParents::Yes,
                            }) =>
                    {
                        self.mkdir(&name)?;
                        continue;
                    }
                    Err(Errno::NOENT) => {
                        return Err(ResolveError::NotFound(self.here().join(&name)));
                    }
                    Err(e) => return Err(self.io("cannot open", &name, e)),
                }
            }
            // The final name (or a link on the way) is looked at without being
            // opened: the tool opens it later relative to its parent's handle and
            // checks it is this very inode.
            let stat =
                match rfs::statat(self.current(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => stat,
                    Err(Errno::NOENT) if is_last && matches!(intent, Intent::Write { .. }) => {
                        return self.finish(Some(name), None);
                    }
                    Err(Errno::NOENT) => {
                        return Err(ResolveError::NotFound(self.here().join(&name)));
                    }
                    Err(e) => return Err(self.io("cannot stat", &name, e)),
                };
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Symlink => {
                    let target = self.read_link(&name)?;
                    if is_last && matches!(intent, Intent::Write { .. }) {
                        return Err(ResolveError::FinalSymlink {
                            link: self.here().join(&name),
                            target,
                        });
                    }
                    self.follow(&name, target)?;
                }
                _ if is_last => return self.finish(Some(name), Some(stat)),
                // It was not a directory a moment ago (or the O_DIRECTORY open raced).
                FileType::Directory => return Err(ResolveError::Raced(self.here().join(&name))),
                _ => return Err(ResolveError::NotADirectory(self.here().join(&name))),
            }
        }
        // The path ended at a directory without a final name (a root, `x/..`).
        let stat =
            rfs::fstat(self.current()).map_err(|e| self.io("cannot stat", OsStr::new("."), e))?;
        let path = self.here();
        let parent = match self.stack.pop() {
            Some((fd, _)) => DirFd::Owned(fd),
            None => DirFd::Root(self.roots.roots[self.root].fd.as_fd()),
        };
        Ok(Resolved {
            path,
            existing: Some(stat),
            parent,
            name: None,
        })
    }

    fn finish(
        mut self,
        name: Option<OsString>,
        existing: Option<Stat>,
    ) -> Result<Resolved<'a>, ResolveError> {
        let mut path = self.here();
        if let Some(n) = &name {
            path.push(n);
        }
        let parent = match self.stack.pop() {
            Some((fd, _)) => DirFd::Owned(fd),
            None => DirFd::Root(self.roots.roots[self.root].fd.as_fd()),
        };
        Ok(Resolved {
            parent,
            name,
            existing,
            path,
        })
    }

    fn mkdir(&mut self, name: &OsStr) -> Result<(), ResolveError> {
        match rfs::mkdirat(self.current(), name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(self.io("cannot create directory", name, e)),
        }
        let fd = rfs::openat(
            self.current(),
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.io("cannot open", name, e))?;
        self.stack.push((fd, name.to_os_string()));
        Ok(())
    }

    fn read_link(&self, name: &OsStr) -> Result<PathBuf, ResolveError> {
        // By name: if the link was swapped meanwhile, what we read is still only
        // a target to walk under the same rules (or EINVAL: not a link any more).
        let target = rfs::readlinkat(self.current(), name, Vec::new())
            .map_err(|e| self.io("cannot read symlink", name, e))?;
        Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
    }

    fn follow(&mut self, name: &OsStr, target: PathBuf) -> Result<(), ResolveError> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(ResolveError::TooManyLinks);
        }
        validate(target.as_os_str())?;
        self.via = Some((self.here().join(name), target.clone()));
        if target.is_absolute() {
            self.enter_absolute(target)
        } else {
            let mut steps = normal_components(&target);
            steps.extend(self.pending.drain(..));
            self.pending = steps;
            Ok(())
        }
    }

    fn io(&self, op: &'static str, name: &OsStr, e: Errno) -> ResolveError {
        ResolveError::Io {
            op,
            path: self.here().join(name),
            source: e.into(),
        }
    }
}

/// Cheap checks before any system call.
fn validate(path: &OsStr) -> Result<(), ResolveError> {
    let bytes = path.as_bytes();
    if bytes.is_empty() {
        return Err(ResolveError::Empty);
    }
    if bytes.contains(&0) {
        return Err(ResolveError::Nul);
    }
    if bytes.len() > MAX_PATH_BYTES {
        return Err(ResolveError::TooLong(bytes.len()));
    }
    for name in bytes.split(|b| *b == b'/') {
        if name.len() > MAX_NAME_BYTES {
            return Err(ResolveError::NameTooLong(name.len()));
        }
        if std::str::from_utf8(name).is_err() {
            return Err(ResolveError::NotUtf8(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
    }
    Ok(())
}

/// The steps of a relative path (`.` dropped, `..` kept for the walker).
fn normal_components(path: &Path) -> VecDeque<Step> {
    let mut steps = VecDeque::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => steps.push_back(Step::Name(n.to_os_string())),
            Component::ParentDir => steps.push_back(Step::Parent),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    steps
}

mod open;

pub use open::{OpenError, kind_name};

#[cfg(test)]
mod tests;
