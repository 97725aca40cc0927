//! Opening what the resolver found, without giving a FIFO or a device the
//! chance to block or to act on being opened, and without a swap race.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags, Stat};

use super::{ResolveError, Resolved};

/// What an object is, in words a model understands.
pub fn kind_name(stat: &Stat) -> &'static str {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO (named pipe)",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

/// Why an opened object cannot be used the way a tool wants.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Refusals from resolution.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The object exists but is of the wrong kind.
    #[error("`{path}` is a {kind}, not a {wanted}")]
    WrongKind {
        path: PathBuf,
        kind: &'static str,
        wanted: &'static str,
    },
}

impl Resolved<'_> {
    /// The real path, symlinks resolved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Metadata of the object, when it exists.
    pub fn stat(&self) -> Option<&Stat> {
        self.existing.as_ref()
    }

    /// Handle of the directory holding [`Self::name`].
    pub fn parent(&self) -> BorrowedFd<'_> {
        self.parent.as_fd()
    }

    /// The final name, `None` when the path names a directory without one.
    pub fn name(&self) -> Option<&OsStr> {
        self.name.as_deref()
    }

    /// Opens the object for reading if and only if it is a regular file.
    ///
    /// The type is checked on the `lstat` from resolution first, so a FIFO or a
    /// device is never opened at all (opening a tape or a tty has side effects, and a
    /// FIFO blocks); the real open adds `O_NONBLOCK|O_NOCTTY|O_NOFOLLOW` and is
    /// then checked to be the same inode, which closes the swap race.
    pub fn open_file(&self) -> Result<(std::fs::File, Stat), OpenError> {
        self.open_kind(
            FileType::RegularFile,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
        )
        .map(|(fd, stat)| (std::fs::File::from(fd), stat))
    }

    /// Opens the object for listing if and only if it is a directory.
    pub fn open_dir(&self) -> Result<OwnedFd, OpenError> {
        self.open_kind(FileType::Directory, OFlags::RDONLY | OFlags::DIRECTORY)
            .map(|(fd, _)| fd)
    }

    fn open_kind(&self, want: FileType, flags: OFlags) -> Result<(OwnedFd, Stat), OpenError> {
        let Some(stat) = &self.existing else {
            return Err(ResolveError::NotFound(self.path.clone()).into());
        };
        if FileType::from_raw_mode(stat.st_mode) != want {
            return Err(OpenError::WrongKind {
                path: self.path.clone(),
                kind: kind_name(stat),
                wanted: if want == FileType::Directory {
                    "directory"
                } else {
                    "regular file"
                },
            });
        }
        let name: &OsStr = self.name.as_deref().unwrap_or(OsStr::new("."));
        let fd = rfs::openat(
            &self.parent,
            name,
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ResolveError::Io {
            op: "cannot open",
            path: self.path.clone(),
            source: e.into(),
        })?;
        let now = rfs::fstat(&fd).map_err(|e| ResolveError::Io {
            op: "cannot stat",
            path: self.path.clone(),
            source: e.into(),
        })?;
        if now.st_dev != stat.st_dev || now.st_ino != stat.st_ino {
            return Err(ResolveError::Raced(self.path.clone()).into());
        }
        Ok((fd, now))
    }
}
