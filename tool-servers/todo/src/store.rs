//! Where the list lives: in memory, or in a state file the host names per session.
//!
//! The file is the list's one home when there is one. It is read at startup (so a restarted
//! server, or one started for a resumed session, has the list back) and read again whenever it
//! changed on disk since the server last saw it, so a host that writes it — seeding the list
//! from an approved plan, or rewinding a conversation — is what the next call sees. Every
//! write goes to a temporary file in the same directory, created `0600`, synced, then renamed
//! over the old one: a crash leaves the old list or the new one, never half of either.
//!
//! A host whose session can change under a running server (tern's `/clear` starts a new one)
//! names the file indirectly: [`Store::follow`] reads the state file's path from a small
//! *pointer* file before every call, so rewriting the pointer moves the list to another file.
//!
//! The format is stable, for the host and for people:
//!
//! ```json
//! {"version": 1, "todos": [{"id": "1", "text": "Read the parser", "status": "done"}]}
//! ```

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::list::{Invalid, Item, TodoList};

/// The `version` this server writes and reads.
pub const STATE_VERSION: u32 = 1;

/// A state file larger than this is refused: a full list (100 items of 500 characters) is
/// well under 1 MiB of JSON.
const MAX_STATE_BYTES: u64 = 4 * 1024 * 1024;

/// The state file's shape.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateFile {
    version: u32,
    todos: Vec<Item>,
}

/// Why the state file could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but cannot be read.
    #[error("cannot read the todo state file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is larger than any list this server writes.
    #[error(
        "the todo state file {path} is {len} bytes; a todo list is never larger than {MAX_STATE_BYTES}"
    )]
    TooLarge { path: PathBuf, len: u64 },
    /// The file is not the JSON this server writes.
    #[error("the todo state file {path} is not valid: line {line}, column {column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Written by a newer tern, most likely.
    #[error(
        "the todo state file {path} has version {found}; this server reads version {STATE_VERSION}"
    )]
    Version { path: PathBuf, found: u32 },
    /// Well-formed JSON, but the list breaks the rules (edited by hand?).
    #[error("the todo state file {path} holds a list that breaks the rules: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
    /// The new list could not be saved; the old one is kept.
    #[error("cannot save the todo list to {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What identifies one version of the file: a rename always makes a new inode, so this
/// changes on every write even within one mtime tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.size(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        }
    }
}

/// The list and where it is kept.
#[derive(Debug)]
pub struct Store {
    list: TodoList,
    file: Option<StateFilePath>,
    /// The pointer file naming the state file ([`Store::follow`]).
    pointer: Option<PathBuf>,
}

#[derive(Debug)]
struct StateFilePath {
    path: PathBuf,
    /// The version of the file `list` came from; `None` while the file does not exist.
    seen: Option<Stamp>,
}

impl Store {
    /// A list kept in memory only (no `--state`): it lives as long as the process.
    pub fn in_memory() -> Self {
        Self {
            list: TodoList::default(),
            file: None,
            pointer: None,
        }
    }

    /// A list kept in `path`, loaded now. A missing file is an empty list (the file is created
    /// by the first write); an unreadable or invalid one is an error, so a typo or a corrupt
    /// file is seen at startup instead of being overwritten by the next write.
    pub fn open(path: PathBuf) -> Result<Self, StoreError> {
        let mut store = Self {
            list: TodoList::default(),
            file: Some(StateFilePath { path, seen: None }),
            pointer: None,
        };
        store.refresh()?;
        Ok(store)
    }

    /// A list kept in the file whose path `pointer` holds (one line of UTF-8), read again before
    /// every call: when the pointer names another file, the list is that file's from then on
    /// (a missing file is an empty list). The pointer must exist now; a relative path in it is
    /// taken from the pointer's directory.
    pub fn follow(pointer: PathBuf) -> Result<Self, StoreError> {
        let path = read_pointer(&pointer)?;
        let mut store = Self::open(path)?;
        store.pointer = Some(pointer);
        Ok(store)
    }

    /// The state file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    /// The current list, read again from the state file if it changed on disk.
    pub fn current(&mut self) -> Result<&TodoList, StoreError> {
        self.refresh()?;
        Ok(&self.list)
    }

    /// Replaces the list: saved first, so on a failed save the old list stays, in memory and
    /// on disk, and the caller reports the error.
    pub fn replace(&mut self, list: TodoList) -> Result<(), StoreError> {
        if let Some(file) = &mut self.file {
            let state = StateFile {
                version: STATE_VERSION,
                todos: list.items().to_vec(),
            };
            let mut bytes = serde_json::to_vec_pretty(&state).map_err(|e| StoreError::Write {
                path: file.path.clone(),
                source: std::io::Error::other(e),
            })?;
            bytes.push(b'\n');
            let stamp = write_atomic(&file.path, &bytes).map_err(|source| StoreError::Write {
                path: file.path.clone(),
                source,
            })?;
            file.seen = Some(stamp);
        }
        self.list = list;
        Ok(())
    }

    fn refresh(&mut self) -> Result<(), StoreError> {
        if let Some(pointer) = &self.pointer {
            let path = read_pointer(pointer)?;
            if self.file.as_ref().is_some_and(|f| f.path != path) {
                self.file = Some(StateFilePath { path, seen: None });
                self.list = TodoList::default();
            }
        }
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let read_err = |source| StoreError::Read {
            path: file.path.clone(),
            source,
        };
        let meta = match std::fs::metadata(&file.path) {
            Ok(meta) => meta,
            // Deleted, never written, or a parent that is not a directory (so the file cannot
            // exist): the list is empty from now on; the next write says why it cannot save.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                if file.seen.is_some() {
                    file.seen = None;
                    self.list = TodoList::default();
                }
                return Ok(());
            }
            Err(e) => return Err(read_err(e)),
        };
        let stamp = Stamp::of(&meta);
        if file.seen == Some(stamp) {
            return Ok(());
        }
        if stamp.len > MAX_STATE_BYTES {
            return Err(StoreError::TooLarge {
                path: file.path.clone(),
                len: stamp.len,
            });
        }
        let mut text = String::new();
        File::open(&file.path)
            .and_then(|f| f.take(MAX_STATE_BYTES + 1).read_to_string(&mut text))
            .map_err(read_err)?;
        let state: StateFile = serde_json::from_str(&text).map_err(|e| StoreError::Parse {
            path: file.path.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        if state.version != STATE_VERSION {
            return Err(StoreError::Version {
                path: file.path.clone(),
                found: state.version,
            });
        }
        self.list = TodoList::new(state.todos).map_err(|invalid| StoreError::Invalid {
            path: file.path.clone(),
            invalid,
        })?;
        file.seen = Some(stamp);
        Ok(())
    }
}

/// The state file's path a pointer file names.
fn read_pointer(pointer: &Path) -> Result<PathBuf, StoreError> {
    let read_err = |source| StoreError::Read {
        path: pointer.to_path_buf(),
        source,
    };
    let mut text = String::new();
    File::open(pointer)
        .and_then(|f| f.take(64 * 1024).read_to_string(&mut text))
        .map_err(read_err)?;
    let line = text.lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return Err(read_err(std::io::Error::other(
            "the pointer file is empty (it must hold the state file's path)",
        )));
    }
    let named = PathBuf::from(line);
    Ok(match pointer.parent() {
        Some(dir) if named.is_relative() => dir.join(named),
        _ => named,
    })
}

/// Writes `bytes` to `path` through a `0600` temporary file in the same directory and a
/// rename, creating missing parent directories (`0700`: the list is the user's). Returns the
/// stamp of the file written.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<Stamp> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| std::io::Error::other("the path names no file"))?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    // A file left by a crashed write of this same pid (after a reboot) is ours to replace.
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable once the directory is synced; a filesystem that cannot sync a
    // directory still has the file, so this is best effort.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    std::fs::metadata(path).map(|m| Stamp::of(&m))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::list::Status;

    fn one(text: &str) -> TodoList {
        TodoList::new(vec![Item {
            id: "1".into(),
            text: text.into(),
            status: Status::Pending,
        }])
        .unwrap()
    }

    #[test]
    fn a_saved_list_is_0600_and_read_back_by_a_new_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions/abc.todo.json");
        let mut store = Store::open(path.clone()).unwrap();
        assert!(store.current().unwrap().is_empty());
        assert!(!path.exists(), "nothing is written before the first write");
        store.replace(one("first")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut again = Store::open(path.clone()).unwrap();
        assert_eq!(again.current().unwrap(), &one("first"));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("abc.todo.json")]);
    }

    #[test]
    fn a_change_on_disk_is_seen_by_the_next_call_and_a_corrupt_file_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let mut store = Store::open(path.clone()).unwrap();
        store.replace(one("mine")).unwrap();
        std::fs::write(
            &path,
            r#"{"version": 1, "todos": [{"id": "1", "text": "the host's", "status": "done"}]}"#,
        )
        .unwrap();
        assert_eq!(store.current().unwrap().items()[0].text, "the host's");
        std::fs::write(&path, "{not json").unwrap();
        let err = store.current().unwrap_err().to_string();
        assert!(err.contains("t.json") && err.contains("line 1"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
        let err = Store::open(path.clone()).unwrap_err().to_string();
        assert!(err.contains("is not valid"), "{err}");
        std::fs::write(&path, r#"{"version": 7, "todos": []}"#).unwrap();
        let err = Store::open(path.clone()).unwrap_err().to_string();
        assert!(err.contains("version 7"), "{err}");
        std::fs::remove_file(&path).unwrap();
        assert!(store.current().unwrap().is_empty());
    }

    #[test]
    fn a_followed_pointer_moves_the_list_to_the_file_it_names_now() {
        let dir = tempfile::tempdir().unwrap();
        let pointer = dir.path().join("todo.path");
        std::fs::write(&pointer, "first.todo.json\n").unwrap();
        let mut store = Store::follow(pointer.clone()).unwrap();
        store.replace(one("from the first session")).unwrap();
        assert!(dir.path().join("first.todo.json").is_file());
        // The host starts another session: the list is that file's (none yet: empty).
        std::fs::write(
            &pointer,
            dir.path().join("second.todo.json").to_str().unwrap(),
        )
        .unwrap();
        assert!(store.current().unwrap().items().is_empty());
        store.replace(one("from the second")).unwrap();
        let second = std::fs::read_to_string(dir.path().join("second.todo.json")).unwrap();
        assert!(second.contains("from the second"), "{second}");
        let first = std::fs::read_to_string(dir.path().join("first.todo.json")).unwrap();
        assert!(first.contains("from the first session"), "kept: {first}");
        // Back to the first: its list again.
        std::fs::write(&pointer, "first.todo.json").unwrap();
        assert_eq!(
            store.current().unwrap().items()[0].text,
            "from the first session"
        );
        // A pointer that is gone is an error the call reports, not an empty list.
        std::fs::remove_file(&pointer).unwrap();
        assert!(matches!(store.current(), Err(StoreError::Read { .. })));
        assert!(Store::follow(pointer).is_err());
    }

    #[test]
    fn a_failed_save_keeps_the_old_list() {
        let dir = tempfile::tempdir().unwrap();
        // The parent "directory" is a file: the save cannot succeed.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, "").unwrap();
        let mut store = Store::open(blocker.join("t.json")).unwrap();
        let err = store.replace(one("lost?")).unwrap_err();
        assert!(matches!(err, StoreError::Write { .. }), "{err}");
        assert!(store.current().unwrap().is_empty());
    }
}
