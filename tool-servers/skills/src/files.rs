//! A skill's files: listed and read without ever leaving the skill's folder.
//!
//! Reading goes through tern-fs's resolver with the skill's folder as the only root: the path
//! is walked one component at a time from a directory handle, `..` cannot climb out, a symlink
//! is followed only while it stays inside, and the file opened is checked to be the one
//! resolved (see `tern_fs::resolve`). Listing walks directory handles with `O_NOFOLLOW`, so
//! a symlinked directory is never entered and the walk cannot be led outside either.

use std::ffi::OsStr;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags};
use tern_fs::resolve::{Intent, OpenError, ResolveError, RootError, Roots};

/// Entries `load` lists at most; a larger skill says its list is incomplete.
pub const MAX_LISTED: usize = 500;
/// Directory levels below the skill's folder that are listed.
const MAX_DEPTH: usize = 8;
/// Names never listed: version control, dependency and cache folders, hidden files.
fn skipped(name: &[u8]) -> bool {
    name.starts_with(b".") || name == b"node_modules" || name == b"__pycache__"
}

/// A skill's files, as paths relative to its folder (`scripts/extract.py`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Sorted, `/`-separated, without the top-level `SKILL.md`.
    pub files: Vec<String>,
    /// More files exist than [`MAX_LISTED`] (or below [`MAX_DEPTH`]).
    pub truncated: bool,
}

/// Why a file of a skill cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The skill's folder itself cannot be opened (removed since discovery?).
    #[error(transparent)]
    Folder(#[from] RootError),
    /// The path resolves outside the skill's folder (`..`, an absolute path elsewhere).
    #[error("it resolves to `{resolved}`, outside the skill's folder `{folder}`")]
    Outside { resolved: PathBuf, folder: PathBuf },
    /// A symlink on the way leads outside the skill's folder.
    #[error(
        "it leads outside the skill's folder `{folder}` through the symlink `{link}` -> `{target}`"
    )]
    LinkEscapes {
        link: PathBuf,
        target: PathBuf,
        folder: PathBuf,
    },
    /// Otherwise refused (missing, not a regular file, too long a path, …).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Reading failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Larger than a text a model should read in one piece.
    #[error("`{path}` is {len} bytes; files over {max} bytes are not read here")]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    /// Not UTF-8 text (or holds NUL bytes).
    #[error("`{path}` is not a text file ({len} bytes)")]
    Binary { path: PathBuf, len: u64 },
}

/// Reads the UTF-8 text file at `path` (relative to `folder`, or absolute inside it), at most
/// `max` bytes; returns its real path and its text.
pub fn read_text(folder: &Path, path: &str, max: u64) -> Result<(PathBuf, String), ReadError> {
    let roots = Roots::open(&[folder.to_path_buf()])?;
    let resolved = roots
        .resolve(Path::new(path), Intent::Open)
        .map_err(|e| match e {
            ResolveError::OutsideRoots { resolved, .. } => ReadError::Outside {
                resolved,
                folder: folder.to_path_buf(),
            },
            ResolveError::LinkEscapes { link, target, .. } => ReadError::LinkEscapes {
                link,
                target,
                folder: folder.to_path_buf(),
            },
            other => ReadError::Open(other.into()),
        })?;
    let (file, stat) = resolved.open_file()?;
    let real = resolved.path().to_path_buf();
    let len = u64::try_from(stat.st_size).unwrap_or(0);
    if len > max {
        return Err(ReadError::TooLarge {
            path: real,
            len,
            max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ReadError::Io {
            path: real.clone(),
            source,
        })?;
    if bytes.len() as u64 > max {
        // It grew while being read.
        return Err(ReadError::TooLarge {
            path: real,
            len: bytes.len() as u64,
            max,
        });
    }
    if bytes.contains(&0) {
        return Err(ReadError::Binary { path: real, len });
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok((real, text)),
        Err(_) => Err(ReadError::Binary { path: real, len }),
    }
}

/// Lists the files below `folder` (regular files and symlinks, which are listed but never
/// followed), skipping hidden names and dependency folders.
pub fn list(folder: &Path) -> std::io::Result<Listing> {
    let root = rfs::open(
        folder,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut listing = Listing::default();
    let mut pending: Vec<(OwnedFd, String, usize)> = vec![(root, String::new(), 0)];
    while let Some((fd, prefix, depth)) = pending.pop() {
        let mut names: Vec<(Vec<u8>, FileType)> = Vec::new();
        for entry in Dir::read_from(&fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || skipped(name) {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    rfs::statat(&fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
                        .map(|s| FileType::from_raw_mode(s.st_mode))
                        .unwrap_or(FileType::Unknown)
                }
                known => known,
            };
            names.push((name.to_vec(), kind));
        }
        for (name, kind) in names {
            let shown = String::from_utf8_lossy(&name);
            let rel = if prefix.is_empty() {
                shown.into_owned()
            } else {
                format!("{prefix}/{shown}")
            };
            match kind {
                FileType::Directory if depth + 1 < MAX_DEPTH => {
                    // O_NOFOLLOW: a name swapped for a symlink meanwhile is not entered.
                    if let Ok(sub) = rfs::openat(
                        &fd,
                        OsStr::from_bytes(&name),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    ) {
                        pending.push((sub, rel, depth + 1));
                    }
                }
                FileType::Directory => listing.truncated = true,
                FileType::RegularFile | FileType::Symlink if rel != "SKILL.md" => {
                    listing.files.push(rel);
                }
                _ => {}
            }
        }
    }
    listing.files.sort();
    if listing.files.len() > MAX_LISTED {
        listing.files.truncate(MAX_LISTED);
        listing.truncated = true;
    }
    Ok(listing)
}
