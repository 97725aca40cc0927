//! A parallel directory walk that cannot leave the roots (F2).
//!
//! A walker that opens `base/a/b` by path lets the kernel follow a symlink that
//! replaced `a` after it was listed as a directory: a `rename(RENAME_EXCHANGE)`
//! between a real directory and a link to `/` wins that race within a few calls.
//! Here no path is ever handed to the kernel. The walk starts from the root's
//! directory handle; every directory is opened with
//! `openat(parent_handle, name, O_DIRECTORY|O_NOFOLLOW)` and every file with
//! `openat(dir_handle, name, O_NOFOLLOW)`, so a name that is (or became) a symlink
//! fails to open instead of being followed. The paths we carry are only labels
//! for results and for matching ignore and deny rules; because no link is ever
//! followed they are also the real paths of what was opened.
//!
//! Directories are shared out to worker threads (one per CPU, like ripgrep's
//! walker); each worker has its own [`Visitor`], and the caller merges them.

mod rules;

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RawDir, Stat};
use rustix::io::Errno;
use tokio_util::sync::CancellationToken;

use rules::{Found, Level};
pub(crate) use rules::{Rules, global_gitignore};

use crate::resolve::{ResolveError, Roots};

/// Worker threads at most, however many CPUs there are: past this the disk,
/// not the CPU, is the limit, and each thread holds a few directory handles.
const MAX_THREADS: usize = 8;

/// Bytes of directory entries fetched per `getdents64`.
const DIRENT_BUFFER: usize = 32 * 1024;

/// What a visitor wants after seeing an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// End the whole walk (a result cap was reached).
    Stop,
}

/// One directory entry, as the walk found it (never followed).
pub(crate) struct Entry<'a> {
    /// Handle of the directory holding the entry.
    pub(crate) dir: BorrowedFd<'a>,
    pub(crate) name: &'a OsStr,
    /// Real path: a label, never opened by name.
    pub(crate) path: &'a Path,
    pub(crate) kind: FileType,
}

impl Entry<'_> {
    /// Opens the entry for reading if and only if it is a regular file, relative
    /// to its directory's handle, without following a link, without blocking on
    /// a FIFO and without acquiring a terminal.
    pub(crate) fn open_file(&self) -> Option<(File, Stat)> {
        let fd = rfs::openat(
            self.dir,
            self.name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let stat = rfs::fstat(&fd).ok()?;
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
            .then(|| (File::from(fd), stat))
    }
}

/// Sees every entry the walk does not skip (files, directories, symlinks, …),
/// never the base directory itself. One visitor per worker thread.
pub(crate) trait Visitor: Send {
    fn visit(&mut self, entry: &Entry<'_>) -> Flow;
}

/// How a walk ended.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Outcome {
    /// Directories that could not be opened or listed (permissions, or one
    /// replaced by something else mid-walk).
    pub(crate) unreadable_dirs: usize,
    pub(crate) cancelled: bool,
}

/// Worker threads for a walk: one per CPU, at most [`MAX_THREADS`].
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_THREADS)
}

/// Walks the directory at `base` (a real path inside a root, as the resolver
/// returns it), feeding each worker's visitor; returns the visitors.
pub(crate) fn walk<V: Visitor>(
    roots: &Roots,
    base: &Path,
    rules: &Rules<'_>,
    cancel: &CancellationToken,
    visitors: Vec<V>,
) -> Result<(Vec<V>, Outcome), ResolveError> {
    let (fd, level) = open_base(roots, base)?;
    let shared = Shared {
        rules,
        cancel,
        queue: Mutex::new(Queue {
            jobs: vec![Job {
                dir: Open::Ready(fd),
                path: base.to_path_buf(),
                level,
            }],
            active: 0,
        }),
        wake: Condvar::new(),
        stop: AtomicBool::new(false),
        unreadable: AtomicUsize::new(0),
    };
    let visitors = std::thread::scope(|scope| {
        let mut visitors = visitors.into_iter();
        let first = visitors.next();
        let helpers: Vec<_> = visitors
            .map(|mut v| {
                let shared = &shared;
                scope.spawn(move || {
                    shared.work(&mut v);
                    v
                })
            })
            .collect();
        let mut done = Vec::with_capacity(helpers.len() + 1);
        if let Some(mut v) = first {
            shared.work(&mut v);
            done.push(v);
        }
        for h in helpers {
            match h.join() {
                Ok(v) => done.push(v),
                // A visitor panicked: re-raise it here rather than lose its results silently.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done
    });
    let outcome = Outcome {
        unreadable_dirs: shared.unreadable.load(Ordering::Relaxed),
        cancelled: cancel.is_cancelled(),
    };
    Ok((visitors, outcome))
}

/// Opens `base` from the handle of the outermost root holding it, one component
/// at a time with `O_NOFOLLOW`, and reads the ignore files of the directories
/// on the way (they apply below, as ripgrep's parent ignore files do).
fn open_base(roots: &Roots, base: &Path) -> Result<(OwnedFd, Arc<Level>), ResolveError> {
    let raced = || ResolveError::Raced(base.to_path_buf());
    let (root_fd, root_path) = roots.outermost_containing(base).ok_or_else(raced)?;
    let rest = base.strip_prefix(root_path).map_err(|_| raced())?;
    let mut level = Level::top();
    let mut here: OwnedFd = rfs::openat(
        root_fd,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io("cannot open", root_path, e))?;
    let mut path = root_path.to_path_buf();
    for name in rest.iter() {
        level = Level::child(&level, here.as_fd(), &path, Found::ALL);
        here = rfs::openat(
            &here,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR | Errno::NOENT => raced(),
            e => io("cannot open", &path.join(name), e),
        })?;
        path.push(name);
    }
    let fd = rfs::openat(
        &here,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io("cannot open", base, e))?;
    Ok((fd, level))
}

fn io(op: &'static str, path: &Path, e: Errno) -> ResolveError {
    ResolveError::Io {
        op,
        path: path.to_path_buf(),
        source: e.into(),
    }
}

/// A directory still to list.
struct Job {
    dir: Open,
    path: PathBuf,
    /// Ignore rules of the directory's parent.
    level: Arc<Level>,
}

/// How to get a job's directory handle. Children are opened only when their
/// turn comes, so the number of open handles follows the depth of the tree,
/// not its width.
enum Open {
    Ready(OwnedFd),
    At(Arc<OwnedFd>, Box<OsStr>),
}

struct Queue {
    jobs: Vec<Job>,
    /// Workers currently listing a directory (each may add jobs).
    active: usize,
}

struct Shared<'a> {
    rules: &'a Rules<'a>,
    cancel: &'a CancellationToken,
    queue: Mutex<Queue>,
    wake: Condvar,
    stop: AtomicBool,
    unreadable: AtomicUsize,
}

impl Shared<'_> {
    /// Checked for every entry, so it is one relaxed load; cancellation (a lock
    /// inside the token) is checked once per directory in [`Self::next`].
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Takes the next job; `None` when the walk is over (no job left and no
    /// worker that could add one, or stopped).
    fn next(&self) -> Option<Job> {
        if self.cancel.is_cancelled() {
            self.stop.store(true, Ordering::Relaxed);
        }
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.stopped() {
                self.wake.notify_all();
                return None;
            }
            if let Some(job) = q.jobs.pop() {
                q.active += 1;
                return Some(job);
            }
            if q.active == 0 {
                self.wake.notify_all();
                return None;
            }
            q = self.wake.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Hands in the subdirectories one job found and marks it done.
    fn done(&self, children: &mut Vec<Job>) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.active -= 1;
        let added = children.len();
        q.jobs.append(children);
        if added > 1 || q.active == 0 {
            self.wake.notify_all();
        } else if added == 1 {
            self.wake.notify_one();
        }
    }

    fn work<V: Visitor>(&self, visitor: &mut V) {
        let mut scratch = Scratch {
            dirents: Vec::with_capacity(DIRENT_BUFFER),
            names: Vec::new(),
            entries: Vec::new(),
            children: Vec::new(),
        };
        while let Some(job) = self.next() {
            self.list(job, visitor, &mut scratch);
            self.done(&mut scratch.children);
        }
    }

    /// Lists one directory: visits its entries and queues its subdirectories.
    fn list<V: Visitor>(&self, job: Job, visitor: &mut V, s: &mut Scratch) {
        let fd = match job.dir {
            Open::Ready(fd) => fd,
            Open::At(parent, name) => match rfs::openat(
                &*parent,
                &*name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                // Replaced by a symlink (ELOOP) or a file (ENOTDIR) since it was
                // listed, removed, or unreadable: never followed, only counted.
                Err(_) => {
                    self.unreadable.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            },
        };
        let fd = Arc::new(fd);
        s.names.clear();
        s.entries.clear();
        let mut found = Found::default();
        let mut dir = RawDir::new(&*fd, s.dirents.spare_capacity_mut());
        while let Some(next) = dir.next() {
            let Ok(e) = next else {
                self.unreadable.fetch_add(1, Ordering::Relaxed);
                break;
            };
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match e.file_type() {
                // Some filesystems do not fill in d_type: ask, without following.
                FileType::Unknown => rfs::statat(&*fd, e.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode)),
                known => known,
            };
            found.note(name, kind);
            let start = s.names.len();
            s.names.extend_from_slice(name);
            s.entries.push((start, s.names.len(), kind));
        }
        let level = if self.rules.reads_ignore_files() {
            Level::child(&job.level, fd.as_fd(), &job.path, found)
        } else {
            Arc::clone(&job.level)
        };
        let mut path = job.path;
        for &(start, end, kind) in &s.entries {
            if self.stopped() {
                return;
            }
            let name = OsStr::from_bytes(&s.names[start..end]);
            // Never enter or report a repository's internals.
            if name == ".git" && self.rules.reads_ignore_files() {
                continue;
            }
            path.push(name);
            let is_dir = kind == FileType::Directory;
            if !self.rules.skips(&level, &path, is_dir) {
                let entry = Entry {
                    dir: fd.as_fd(),
                    name,
                    path: &path,
                    kind,
                };
                if visitor.visit(&entry) == Flow::Stop {
                    self.stop.store(true, Ordering::Relaxed);
                }
                if is_dir {
                    s.children.push(Job {
                        dir: Open::At(Arc::clone(&fd), name.into()),
                        path: path.clone(),
                        level: Arc::clone(&level),
                    });
                }
            }
            path.pop();
        }
    }
}

/// Per-worker buffers reused for every directory.
struct Scratch {
    dirents: Vec<u8>,
    names: Vec<u8>,
    entries: Vec<(usize, usize, FileType)>,
    children: Vec<Job>,
}
