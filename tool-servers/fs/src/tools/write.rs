//! `write_file`, and the atomic replace that `edit_file` shares.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::CallToolResult;
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};
use schemars::JsonSchema;
use serde::Deserialize;

use super::diff::unified;
use super::output::WriteOutput;
use super::{Context, diff_block, failure, resolve, shown, success};
use crate::deny::Deny;
use crate::resolve::{CreateParents, Intent, Resolved, kind_name};

/// Parameters of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct WriteFileParams {
    /// The file to create or overwrite: relative to the first root, or an absolute
    /// path inside a root. Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

pub(crate) fn write_file(ctx: &Context, deny: &Deny, p: WriteFileParams) -> CallToolResult {
    const ACTION: &str = "write";
    let intent = Intent::Write {
        parents: CreateParents::Yes,
    };
    if let Some(why) = deny.refusal_named(&ctx.roots, &p.path) {
        return failure(ACTION, &p.path, why);
    }
    let resolved = match resolve(&ctx.roots, ACTION, &p.path, intent) {
        Ok(r) => r,
        Err(result) => return result,
    };
    let Some(name) = resolved.name() else {
        return failure(ACTION, &p.path, "it is a directory");
    };
    if let Some(why) = deny.refusal(&ctx.roots, &p.path, resolved.path(), resolved.stat()) {
        return failure(ACTION, &p.path, why);
    }
    if let Some(stat) = resolved.stat()
        && FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile
    {
        return failure(
            ACTION,
            &p.path,
            format!(
                "it is a {}; only regular files are written",
                kind_name(stat)
            ),
        );
    }
    let existed = resolved.stat().is_some();
    let keep = resolved.stat().map(Unchanged::from);
    // Read before replacing: afterwards the old content is gone.
    let before = if existed && p.content.len() <= MAX_DIFF_BYTES {
        match &ctx.editor {
            Some(editor) => editor.read(resolved.path()).ok(),
            None => old_text(&resolved),
        }
    } else {
        None
    };
    let written = match &ctx.editor {
        // Through the editor: the user sees the change in their buffer.
        Some(editor) => editor
            .write(resolved.path(), &p.content)
            .map_err(|e| e.to_string()),
        None => replace(resolved.parent(), name, p.content.as_bytes(), keep.as_ref())
            .map_err(|e| e.to_string()),
    };
    if let Err(e) = written {
        return failure(ACTION, &p.path, e);
    }
    let bytes = p.content.len();
    let path = shown(resolved.path());
    let diff = before.map(|before| unified(&path, &before, &p.content));
    let verb = match &diff {
        None if existed => "replaced".to_string(),
        None => "created".to_string(),
        Some(d) => format!("replaced, {}", d.stat()),
    };
    let diff = diff.map(|d| d.text).filter(|d| !d.is_empty());
    let text = format!("wrote {bytes} bytes to `{path}` ({verb})");
    let structured = WriteOutput {
        path,
        bytes_written: bytes,
        created: !existed,
        diff: diff.clone(),
    };
    let mut result = success(text, &structured);
    if let Some(diff) = diff {
        result.content.push(diff_block(resolved.path(), diff));
    }
    result
}

/// Files up to this size (old and new) get a diff when replaced; beyond it
/// the diff would cost more than the write and swamp the model's context.
const MAX_DIFF_BYTES: usize = 1024 * 1024;

/// The current content of an existing file, when it is small UTF-8 text.
fn old_text(resolved: &Resolved) -> Option<String> {
    let (file, stat) = resolved.open_file().ok()?;
    if usize::try_from(stat.st_size).ok()? > MAX_DIFF_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_DIFF_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// What the file looked like when the caller read it: the replace is refused
/// if it changed since, so a concurrent writer's work is not silently lost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unchanged {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    mode: u32,
}

impl From<&Stat> for Unchanged {
    fn from(s: &Stat) -> Self {
        Self {
            dev: s.st_dev,
            ino: s.st_ino,
            size: s.st_size,
            mtime: (s.st_mtime, s.st_mtime_nsec as i64),
            mode: s.st_mode,
        }
    }
}

impl Unchanged {
    /// Same inode, size and modification time (the mode may legitimately differ).
    fn matches(&self, s: &Stat) -> bool {
        let o = Self::from(s);
        (self.dev, self.ino, self.size, self.mtime) == (o.dev, o.ino, o.size, o.mtime)
    }
}

/// Why a replace failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplaceError {
    /// A system call failed.
    #[error("{0}: {1}")]
    Io(&'static str, std::io::Error),
    /// Someone else changed the file between our read and our write.
    #[error("it was changed by someone else while being edited; read it again")]
    Changed,
}

/// Replaces `name` in `dir` with `content` atomically: the bytes go to a fresh
/// temporary file (`O_CREAT|O_EXCL|O_NOFOLLOW`) in the same directory, which is
/// then `renameat`-ed over the name. `rename` replaces a symlink rather than
/// following it, so even a link swapped in after resolution is never written
/// through, and readers never see a half-written file.
///
/// The existing file's permission bits are kept. Trade-offs: hard links to the
/// old file keep the old content, and no `fsync` is done (ext4 and XFS flush a
/// rename-over-existing on their own; an agent's edit is not a database commit).
pub(crate) fn replace(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    content: &[u8],
    existing: Option<&Unchanged>,
) -> Result<(), ReplaceError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = format!(
        ".tern-write-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mode = existing.map_or(0o666, |e| e.mode & 0o7777);
    let fd = rfs::openat(
        dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| ReplaceError::Io("cannot create a temporary file", e.into()))?;
    let result = (|| {
        if existing.is_some() {
            // The umask applied at creation; an existing file's bits are restored exactly.
            rfs::fchmod(&fd, Mode::from_raw_mode(mode))
                .map_err(|e| ReplaceError::Io("cannot set permissions", e.into()))?;
        }
        std::fs::File::from(fd)
            .write_all(content)
            .map_err(|e| ReplaceError::Io("cannot write", e))?;
        if let Some(before) = existing {
            match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(now) if before.matches(&now) => {}
                Ok(_) | Err(_) => return Err(ReplaceError::Changed),
            }
        }
        rfs::renameat(dir, tmp.as_str(), dir, name)
            .map_err(|e| ReplaceError::Io("cannot rename into place", e.into()))
    })();
    if result.is_err() {
        let _ = rfs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
    }
    result
}
