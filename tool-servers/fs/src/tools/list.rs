//! `list_dir`: one directory's entries, sorted, typed, capped.

use std::ffi::{CStr, OsStr};
use std::os::unix::ffi::OsStrExt;

use rmcp::model::{CallToolResult, RequestMetaObject};
use rustix::fs::{self as rfs, AtFlags, Dir, FileType};
use schemars::JsonSchema;
use serde::Deserialize;

use super::output::{ListEntry, ListOutput};
use super::{Context, failure, resolve, shown, success};
use crate::deny::Deny;
use crate::resolve::Intent;

/// Parameters of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct ListDirParams {
    /// The directory to list: relative to the first root, or an absolute path inside
    /// a root (default: the first root).
    #[serde(default)]
    pub path: Option<String>,
}

/// One `list_dir` call, from its arguments and request `_meta` (the host's deny rules); the
/// route through rmcp and the stdio fast path (`crate::fast`) both run exactly this.
pub(crate) fn call(ctx: &Context, meta: &RequestMetaObject, p: ListDirParams) -> CallToolResult {
    match ctx.deny(meta, "list", p.path.as_deref().unwrap_or(".")) {
        Ok(deny) => list_dir(ctx, &deny, p),
        Err(result) => result,
    }
}

fn list_dir(ctx: &Context, deny: &Deny, p: ListDirParams) -> CallToolResult {
    const ACTION: &str = "list";
    let asked = p.path.as_deref().unwrap_or(".");
    let resolved = match resolve(&ctx.roots, ACTION, asked, Intent::Open) {
        Ok(r) => r,
        Err(result) => return result,
    };
    if let Some(why) = deny.refusal(&ctx.roots, asked, resolved.path(), None) {
        return failure(ACTION, asked, why);
    }
    let fd = match resolved.open_dir() {
        Ok(fd) => fd,
        Err(e) => return failure(ACTION, asked, e),
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    let dir = match Dir::read_from(&fd) {
        Ok(d) => d,
        Err(e) => return failure(ACTION, asked, std::io::Error::from(e)),
    };
    for entry in dir {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => return failure(ACTION, asked, std::io::Error::from(e)),
        };
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    if !deny.is_empty() {
        // Denied entries are left out without a word: not even their names show.
        names.retain(|name| {
            let name = OsStr::from_bytes(name);
            let path = resolved.path().join(name);
            if deny.entry_rule(&path).is_some() {
                return false;
            }
            rfs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_or(true, |st| !deny.hides_entry(&ctx.roots, &path, &st))
        });
    }
    names.sort();
    let total = names.len();
    let truncated = total > ctx.limits.max_entries;
    names.truncate(ctx.limits.max_entries);

    let path = shown(resolved.path());
    let mut text = format!("{path}: {total} entries\n");
    let mut entries = Vec::with_capacity(names.len());
    for name in &names {
        let shown_name = String::from_utf8_lossy(name).into_owned();
        // lstat relative to the open directory: the entry is described, never followed.
        let stat = rfs::statat(&fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW);
        let (kind, size) = match &stat {
            Ok(s) => (
                kind_word(FileType::from_raw_mode(s.st_mode)),
                Some(s.st_size),
            ),
            Err(_) => ("unknown", None),
        };
        let target = (kind == "symlink")
            .then(|| rfs::readlinkat(&fd, OsStr::from_bytes(name), Vec::new()).ok())
            .flatten()
            .map(|t: std::ffi::CString| lossy(&t));
        let line = match (kind, &target, size) {
            ("dir", _, _) => format!("dir      {shown_name}/"),
            ("symlink", Some(t), _) => format!("symlink  {shown_name} -> {t}"),
            ("file", _, Some(n)) => format!("file     {shown_name}  ({n} bytes)"),
            (k, _, _) => format!("{k:<8} {shown_name}"),
        };
        text.push_str(&line);
        text.push('\n');
        entries.push(ListEntry {
            name: shown_name,
            kind,
            size,
            target,
        });
    }
    let mut notes = Vec::new();
    if truncated {
        notes.push(format!(
            "[capped: showed {} of {total} entries; use glob to narrow]",
            names.len()
        ));
    }
    for note in &notes {
        text.push_str(note);
        text.push('\n');
    }
    let structured = ListOutput {
        path,
        total,
        entries,
        truncated,
        notes,
    };
    success(text, &structured)
}

fn lossy(s: &CStr) -> String {
    String::from_utf8_lossy(s.to_bytes()).into_owned()
}

/// The entry types a model needs to tell apart.
pub(crate) fn kind_word(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        FileType::Unknown => "unknown",
    }
}
