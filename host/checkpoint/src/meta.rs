//! What a checkpoint says about itself: its id, why it was taken (the turn, the session, the
//! user's message), what it left out, and the permission bits git does not keep.
//!
//! All of it lives in the checkpoint's commit message — a readable subject line, then one line
//! of JSON — so a checkpoint is one commit whose tree is exactly the workspace's tree, and
//! `git for-each-ref` lists every checkpoint with its metadata in one process.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::modes::Modes;
use crate::paths;

/// A checkpoint's id: the id of its commit in the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Id(String);

impl Id {
    /// The id as hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, for people.
    pub fn short(&self) -> &str {
        self.0.get(..12).unwrap_or(&self.0)
    }

    pub(crate) fn from_oid(oid: String) -> Self {
        Self(oid)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Id {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        if crate::git::is_hex_id(s) {
            Ok(Self(s.to_ascii_lowercase()))
        } else {
            Err(Error::InvalidId(s.to_string()))
        }
    }
}

impl TryFrom<String> for Id {
    type Error = Error;
    fn try_from(s: String) -> Result<Self, Error> {
        s.parse()
    }
}

impl From<Id> for String {
    fn from(id: Id) -> String {
        id.0
    }
}

/// Why a checkpoint was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// Before a turn of the agent that may change files.
    Turn,
    /// Before a shell command in a writable sandbox.
    Shell,
    /// Asked for by the user or a script.
    Manual,
    /// The state a restore found, recorded before it changed anything (what undoing the
    /// restore goes back to).
    BeforeRestore {
        /// The checkpoint being restored.
        target: Id,
    },
    /// The state a restore left.
    Restored {
        /// The checkpoint restored.
        target: Id,
        /// The checkpoint of the state before the restore: restoring it undoes this one.
        before: Id,
    },
}

/// What the caller says about a checkpoint it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    #[serde(flatten)]
    pub kind: Kind,
    /// The session the checkpoint belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The turn it was taken before (1-based, the session's numbering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The user's message of that turn (or the shell command), shown when choosing one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Meta {
    /// A checkpoint of `kind` with nothing else said.
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            session: None,
            turn: None,
            message: None,
        }
    }

    /// The checkpoint before turn `turn` of `session`, whose user message was `message`.
    pub fn turn(session: impl Into<String>, turn: u64, message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Turn,
            session: Some(session.into()),
            turn: Some(turn),
            message: Some(message.into()),
        }
    }

    fn subject(&self) -> String {
        let what = match &self.kind {
            Kind::Turn => match self.turn {
                Some(n) => format!("before turn {n}"),
                None => "before a turn".to_string(),
            },
            Kind::Shell => "before a shell command".to_string(),
            Kind::Manual => "checkpoint".to_string(),
            Kind::BeforeRestore { target } => format!("before restoring {}", target.short()),
            Kind::Restored { target, .. } => format!("restored {}", target.short()),
        };
        match &self.message {
            Some(m) => {
                let line = m.lines().next().unwrap_or_default();
                let cut: String = line.chars().take(72).collect();
                format!("{what}: {cut}")
            }
            None => what,
        }
    }
}

/// Why a file of the workspace is not in a checkpoint (files `.gitignore` leaves out are not
/// listed: there can be millions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Larger than the per-file limit.
    TooLarge { bytes: u64 },
    /// A directory with a `.git` of its own (a nested repository or submodule): its files are
    /// not recorded.
    NestedRepository,
    /// Not a regular file, directory or symlink (a socket, a FIFO, a device).
    Special,
    /// tern may not read it (its permissions, or a directory on its way).
    Unreadable,
}

/// A file left out of a checkpoint, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Relative to the workspace.
    #[serde(with = "paths::serde_path")]
    pub path: PathBuf,
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// A recorded checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub id: Id,
    /// When it was recorded.
    pub created: SystemTime,
    pub meta: Meta,
    /// Files recorded (regular files and symlinks).
    pub files: usize,
    /// Files left out for their size or kind (at most [`MAX_SKIPPED_LISTED`]; `.gitignore`d
    /// files are never listed).
    pub skipped: Vec<Skipped>,
    /// Whether this call recorded nothing new: the workspace was as the latest checkpoint
    /// recorded it, and that checkpoint is returned.
    pub reused: bool,
    pub(crate) tree: String,
    pub(crate) modes: Modes,
}

/// Skipped files named in one checkpoint at most.
pub const MAX_SKIPPED_LISTED: usize = 100;

/// The JSON line of a checkpoint's commit message.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// Format version.
    v: u32,
    created_ms: u64,
    #[serde(flatten)]
    meta: Meta,
    files: usize,
    modes: Modes,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<Skipped>,
}

/// The prefix of the JSON line, so the message of a commit tern did not write is told apart.
const MARKER: &str = "tern-checkpoint: ";

pub(crate) fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The commit message recording a checkpoint.
pub(crate) fn message(
    meta: &Meta,
    created: SystemTime,
    files: usize,
    modes: &Modes,
    skipped: &[Skipped],
) -> String {
    let record = Record {
        v: 1,
        created_ms: millis(created),
        meta: meta.clone(),
        files,
        modes: modes.clone(),
        skipped: skipped.iter().take(MAX_SKIPPED_LISTED).cloned().collect(),
    };
    // Serializing plain data into a String cannot fail; an empty record would be refused
    // when read back, never silently wrong.
    let json = serde_json::to_string(&record).unwrap_or_default();
    format!("{}\n\n{MARKER}{json}\n", meta.subject())
}

/// Reads a checkpoint back from its commit message (`None`: not a commit tern wrote).
pub(crate) fn parse(id: Id, tree: String, message: &str) -> Option<Checkpoint> {
    let json = message.lines().find_map(|line| line.strip_prefix(MARKER))?;
    let record: Record = serde_json::from_str(json).ok()?;
    Some(Checkpoint {
        id,
        created: UNIX_EPOCH + Duration::from_millis(record.created_ms),
        meta: record.meta,
        files: record.files,
        skipped: record.skipped,
        reused: false,
        tree,
        modes: record.modes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_as_the_checkpoint_it_records() {
        let meta = Meta::turn("s-1", 3, "fix the bug\nand more");
        let created = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let skipped = vec![Skipped {
            path: PathBuf::from("big.bin"),
            reason: SkipReason::TooLarge { bytes: 99 },
        }];
        let text = message(&meta, created, 7, &Modes::default(), &skipped);
        assert!(text.starts_with("before turn 3: fix the bug\n\n"), "{text}");
        let id: Id = "a".repeat(40).parse().unwrap();
        let back = parse(id.clone(), "t".into(), &text).unwrap();
        assert_eq!(back.id, id);
        assert_eq!(back.meta, meta);
        assert_eq!(back.created, created);
        assert_eq!(back.files, 7);
        assert_eq!(back.skipped, skipped);
        assert!(parse(id, "t".into(), "a commit of someone else").is_none());
    }

    #[test]
    fn ids_are_hex_of_a_full_object_id() {
        assert!("abc".parse::<Id>().is_err());
        assert!("g".repeat(40).parse::<Id>().is_err());
        assert_eq!(
            "ABCDEF0123456789ABCDEF0123456789ABCDEF01"
                .parse::<Id>()
                .unwrap()
                .as_str(),
            "abcdef0123456789abcdef0123456789abcdef01"
        );
    }
}
