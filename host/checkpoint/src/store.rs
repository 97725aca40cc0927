//! The store of one workspace: opening it, its lock, recording and listing checkpoints.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tern_protocol::files;

use crate::error::{Error, Result};
use crate::git::{self, Git};
use crate::layout;
use crate::meta::{self, Checkpoint, Id, Meta};

/// Bounds on what one checkpoint copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Files larger than this are not recorded (listed as skipped); a restore leaves them
    /// alone.
    pub max_file_bytes: u64,
    /// New or changed content one checkpoint may copy at most; over it, nothing is recorded
    /// and [`Error::TooLarge`] says why (a home directory or a data set, most likely).
    pub max_checkpoint_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            max_checkpoint_bytes: 2 * 1024 * 1024 * 1024,
        }
    }
}

/// The checkpoints of one workspace.
///
/// Every call runs `git` and blocks until it is done (milliseconds for an incremental
/// checkpoint; the first one of a large tree hashes all of it): call it from a blocking
/// thread in async code. Calls from several threads or processes are serialized by a lock
/// file in the store.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) workspace: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) git: Git,
    pub(crate) limits: Limits,
}

/// Held while the store is read or written (released when dropped).
pub(crate) struct Lock {
    _file: File,
}

impl Store {
    /// Opens (creating on first use) the store of `workspace` under `home` (`$TERN_HOME`),
    /// with the default [`Limits`].
    pub fn open(home: &Path, workspace: &Path) -> Result<Self> {
        Self::open_with(home, workspace, Limits::default())
    }

    /// Opens the store of `workspace` under `home` with these limits.
    pub fn open_with(home: &Path, workspace: &Path, limits: Limits) -> Result<Self> {
        let ws = std::fs::canonicalize(workspace)
            .map_err(|e| Error::io("resolve the workspace", workspace, e))?;
        if !ws.is_dir() {
            return Err(Error::NotADirectory { path: ws });
        }
        layout::private_dir(&home.join("checkpoints"))?;
        let dir = layout::store_dir(home, &ws);
        layout::private_dir(&dir)?;
        let git = Git::new(dir.join("repo"), ws.clone(), dir.join("index"));
        git.check_version()?;
        let store = Self {
            workspace: ws,
            dir,
            git,
            limits,
        };
        let _lock = store.lock()?;
        store.prepare(home)?;
        Ok(store)
    }

    /// The workspace (canonical) whose checkpoints these are.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records the workspace as it is now. Only what changed since the last checkpoint is
    /// read and copied (git's stat cache in the store's index); when nothing changed, the
    /// latest checkpoint is returned with `reused: true`.
    pub fn checkpoint(&self, meta: &Meta) -> Result<Checkpoint> {
        let _lock = self.lock()?;
        self.checkpoint_locked(meta)
    }

    /// Every checkpoint, oldest first.
    pub fn list(&self) -> Result<Vec<Checkpoint>> {
        let _lock = self.lock()?;
        self.list_locked()
    }

    /// One checkpoint.
    pub fn get(&self, id: &Id) -> Result<Checkpoint> {
        let _lock = self.lock()?;
        self.read(id)
    }

    /// Bytes the store takes on disk (blocks allocated, as `du` counts them).
    pub fn disk_usage(&self) -> Result<u64> {
        disk_usage(&self.dir)
    }

    pub(crate) fn checkpoint_locked(&self, meta: &Meta) -> Result<Checkpoint> {
        let snap = self.snapshot()?;
        let latest = &snap.latest;
        if let Some(latest) = latest
            && latest.tree == snap.tree
            && latest.modes == snap.modes
        {
            return Ok(Checkpoint {
                reused: true,
                ..latest.clone()
            });
        }
        // Strictly after the latest, so the refs' names order the checkpoints even when two
        // fall in one millisecond or the clock went back.
        let mut created = SystemTime::now();
        if let Some(latest) = latest
            && created <= latest.created
        {
            created = latest.created + Duration::from_millis(1);
        }
        let message = meta::message(meta, created, snap.files, &snap.modes, &snap.skipped);
        let out = self.git.run_with(
            &["commit-tree", &snap.tree, "-F", "-"],
            Some(message.as_bytes()),
        )?;
        let commit = git::oid_line(&out, self.git.git_dir(), "commit-tree")?;
        let name = format!(
            "refs/checkpoints/{:013}-{}",
            meta::millis(created),
            commit.get(..12).unwrap_or(&commit)
        );
        let transaction = format!("create {name} {commit}\nupdate HEAD {commit}\n");
        self.git
            .run_with(&["update-ref", "--stdin"], Some(transaction.as_bytes()))?;
        Ok(Checkpoint {
            id: Id::from_oid(commit),
            created,
            meta: meta.clone(),
            files: snap.files,
            skipped: snap.skipped,
            reused: false,
            tree: snap.tree,
            modes: snap.modes,
        })
    }

    pub(crate) fn list_locked(&self) -> Result<Vec<Checkpoint>> {
        Ok(self
            .refs()?
            .into_iter()
            .map(|(_, checkpoint)| checkpoint)
            .collect())
    }

    /// Every checkpoint with its ref, oldest first.
    pub(crate) fn refs(&self) -> Result<Vec<(String, Checkpoint)>> {
        let out = self.git.run(&[
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents)%00",
            "refs/checkpoints/",
        ])?;
        let mut fields = out.split(|b| *b == 0);
        let mut found = Vec::new();
        while let Some(name) = fields.next() {
            // Each record ends with a newline after its last NUL.
            let name = String::from_utf8_lossy(name).trim().to_string();
            if name.is_empty() {
                break;
            }
            let (Some(oid), Some(tree), Some(contents)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(self.corrupt(format!("for-each-ref cut short at {name}")));
            };
            let oid = String::from_utf8_lossy(oid).into_owned();
            let tree = String::from_utf8_lossy(tree).into_owned();
            let contents = String::from_utf8_lossy(contents);
            match meta::parse(Id::from_oid(oid), tree, &contents) {
                Some(checkpoint) => found.push((name, checkpoint)),
                None => tracing::warn!("{name} in {} is not a checkpoint", self.dir.display()),
            }
        }
        Ok(found)
    }

    /// The checkpoint `id`, which must be a checkpoint of this store.
    pub(crate) fn read(&self, id: &Id) -> Result<Checkpoint> {
        self.read_commit(id.as_str())?
            .ok_or_else(|| Error::UnknownCheckpoint {
                id: id.to_string(),
                workspace: self.workspace.clone(),
            })
    }

    /// The latest checkpoint (what the store's index holds), if any.
    pub(crate) fn latest(&self) -> Result<Option<Checkpoint>> {
        self.read_commit("HEAD")
    }

    fn read_commit(&self, rev: &str) -> Result<Option<Checkpoint>> {
        let input = format!("{rev}\n");
        let out = self
            .git
            .run_with(&["cat-file", "--batch"], Some(input.as_bytes()))?;
        let text = String::from_utf8_lossy(&out);
        let Some((header, body)) = text.split_once('\n') else {
            return Ok(None);
        };
        let mut parts = header.split(' ');
        let (Some(oid), Some("commit")) = (parts.next(), parts.next()) else {
            // `<rev> missing`, or not a commit: not a checkpoint either way.
            return Ok(None);
        };
        let (headers, message) = body.split_once("\n\n").unwrap_or((body, ""));
        let Some(tree) = headers.lines().find_map(|l| l.strip_prefix("tree ")) else {
            return Err(self.corrupt(format!("commit {oid} has no tree")));
        };
        Ok(meta::parse(
            Id::from_oid(oid.to_string()),
            tree.to_string(),
            message,
        ))
    }

    pub(crate) fn corrupt(&self, detail: String) -> Error {
        Error::Corrupt {
            store: self.dir.clone(),
            detail,
        }
    }

    /// Takes the store's lock, waiting for another process or thread that holds it.
    pub(crate) fn lock(&self) -> Result<Lock> {
        let path = self.dir.join("lock");
        let file = files::open_append(&path).map_err(|e| Error::io("open", &path, e))?;
        loop {
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Error::io("lock", &path, e.into())),
            }
        }
        // With the lock held no git of ours runs: a lock file git left is from one that was
        // killed, and would make every later command fail.
        for stale in [
            self.dir.join("index.lock"),
            self.git.git_dir().join("HEAD.lock"),
            self.git.git_dir().join("packed-refs.lock"),
            self.git.git_dir().join("refs/heads/checkpoints.lock"),
        ] {
            if std::fs::remove_file(&stale).is_ok() {
                tracing::warn!("removed {} left by an interrupted git", stale.display());
            }
        }
        Ok(Lock { _file: file })
    }

    /// First use: the repository; every use: the files tern owns, as this version writes them.
    fn prepare(&self, home: &Path) -> Result<()> {
        let recorded = self.dir.join("workspace");
        let ws_bytes = self.workspace.as_os_str().as_encoded_bytes();
        match std::fs::read(&recorded) {
            Ok(bytes) if bytes == ws_bytes => {}
            Ok(bytes) => {
                return Err(Error::ForeignStore {
                    store: self.dir.clone(),
                    recorded: crate::paths::from_bytes(&bytes),
                    workspace: self.workspace.clone(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                files::write(&recorded, ws_bytes).map_err(|e| Error::io("write", &recorded, e))?;
            }
            Err(e) => return Err(Error::io("read", &recorded, e)),
        }
        let repo = self.git.git_dir();
        layout::private_dir(repo)?;
        if !repo.join("HEAD").exists() {
            self.git.init()?;
        }
        layout::write_if_changed(&repo.join("config"), layout::CONFIG.as_bytes())?;
        layout::private_dir(&repo.join("info"))?;
        layout::write_if_changed(&repo.join("info/attributes"), layout::ATTRIBUTES.as_bytes())?;
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
        layout::write_if_changed(
            &repo.join("info/exclude"),
            layout::exclude(&self.workspace, &home).as_bytes(),
        )?;
        Ok(())
    }
}

fn disk_usage(dir: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| Error::io("read", &d, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("read", &d, e))?;
            let Ok(md) = entry.path().symlink_metadata() else {
                continue;
            };
            total += md.blocks() * 512;
            if md.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}
