//! How tern writes its own files under `$TERN_HOME` (issue 15): the audit log, events, session
//! transcripts, spill files, server logs, the tool cache and OAuth credentials. They carry
//! source code, command output, tokens and, despite redaction, possibly secrets — so they are
//! `0600` in `0700` directories, and never opened through a symlink: one planted at
//! `audit.jsonl` (by a tool command, say) must not redirect the log somewhere else, or truncate
//! a file of the user's. One home, so no layer writes such a file any other way.

use std::{
    fs::{File, OpenOptions},
    io::{self, Write},
    path::Path,
};

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

/// Creates `dir` (and missing parents) `0700`, and makes `dir` itself `0700` if it existed.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder.create(dir)?;
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(())
}

/// The directories of `$TERN_HOME` tern writes whole trees into. Each must be a real directory:
/// a symlink planted at one (by a command with write access to `$TERN_HOME`) would send every
/// later file of that kind — events, transcripts, server logs — somewhere else.
pub const HOME_DIRS: &[&str] = &[
    "runs",
    "sessions",
    "logs",
    "oauth",
    "checkpoints",
    "plugins",
];

/// Makes `home` and its [`HOME_DIRS`] private directories (creating them `0700`), refusing any
/// that is a symlink. Called before a command writes anything.
pub fn prepare_home(home: &Path) -> io::Result<()> {
    private_dir(home)?;
    for name in HOME_DIRS {
        let dir = home.join(name);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is a symlink; tern does not write through one (remove it, or set \
                         TERN_HOME elsewhere)",
                        dir.display()
                    ),
                ));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a directory", dir.display()),
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        private_dir(&dir)?;
    }
    Ok(())
}

/// Opens `path` for appending, creating it `0600` (and its directory `0700`). A symlink at
/// `path` is an error (`O_NOFOLLOW`), not followed; an existing file is made `0600`.
pub fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    open_private(path, &mut options)
}

/// Writes `bytes` to `path`, replacing what was there, as [`open_append`] would open it.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let mut file = open_private(path, &mut options)?;
    file.write_all(bytes)?;
    file.flush()
}

/// Replaces `path` with `bytes` atomically: written (and synced) to a private temporary file
/// beside it, then renamed over it, so a reader — another tern process — sees the old content
/// or the new, never half of it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    let written = open_private(&tmp, &mut options).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

fn open_private(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    #[cfg(unix)]
    options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    let file = options.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            io::Error::new(
                e.kind(),
                format!(
                    "{} is a symlink; tern does not write through one",
                    path.display()
                ),
            )
        } else {
            e
        }
    })?;
    #[cfg(unix)]
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_private_and_symlinks_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a/b/log.jsonl");
        open_append(&file).unwrap().write_all(b"x\n").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir.path().join("a")), 0o700);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);

        // A file that was readable by others is made private when opened.
        let loose = dir.path().join("loose.txt");
        std::fs::write(&loose, "").unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&loose, b"y").unwrap();
        assert_eq!(mode(&loose), 0o600);

        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("a/b/link.jsonl");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = open_append(&link).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(write(&link, b"gone").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn atomic_writes_replace_whole_files_privately_and_leave_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/cache.json");
        write_atomic(&file, b"one").unwrap();
        write_atomic(&file, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "two");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("state"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["cache.json"]);
    }
}
