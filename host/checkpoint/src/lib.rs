//! tern-checkpoint: checkpoints of a workspace that cover every change — made through tern's
//! file tools or through the shell — with or without git in the project (issue 20).
//!
//! A workspace's checkpoints live in a shadow object store under
//! `$TERN_HOME/checkpoints/<workspace-hash>/`: a git repository of tern's own, driven with the
//! system `git`, whose work tree is the workspace and whose index is private. The project's
//! own `.git`, if it has one, is never read or written; the user's git config, hooks,
//! fsmonitor, filters and external diff never apply. What `.gitignore` leaves out is not
//! recorded, nor are files over a size limit (and a restore leaves both alone).
//!
//! - [`Store::checkpoint`] records the workspace. It is incremental: git's stat cache in the
//!   store's index means only files that changed are read and copied, and an unchanged
//!   workspace records nothing new.
//! - [`Store::changed_files`] and [`Store::diff`] compare two checkpoints, or one with the
//!   workspace now.
//! - [`Store::restore`] puts the workspace back — content, deletions of files created since,
//!   symlinks and permission bits — after recording it, so the restore itself can be undone.
//! - [`Store::prune`] bounds the store by age and size.
//!
//! Why the system `git` and not `gix`: a checkpoint is "add every changed file to an index
//! with a stat cache, honouring `.gitignore`" and a restore is "apply the difference of two
//! trees to an existing work tree"; `git` does both in tuned C, while gix offers neither as
//! one operation (its worktree checkout writes a whole index into a fresh directory) and would
//! add well over a hundred crates to the build. The cost is a process per step (a few
//! milliseconds each; see `benches/checkpoint.rs`) and a dependency on `git` being installed,
//! which [`Error::GitMissing`] reports with a hint.
//!
//! Files outside the workspace are out of scope: the shell's sandbox keeps tools from writing
//! them, and a checkpoint could not restore them.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use tern_checkpoint::{Kind, Meta, Store};
//! let (home, ws) = (tempfile::tempdir()?, tempfile::tempdir()?);
//! std::fs::write(ws.path().join("notes.txt"), "v1\n")?;
//! let store = Store::open(home.path(), ws.path())?;
//! let first = store.checkpoint(&Meta::turn("session-1", 1, "write the notes"))?;
//!
//! std::fs::write(ws.path().join("notes.txt"), "v2\n")?;
//! std::fs::write(ws.path().join("new.txt"), "created later\n")?;
//! assert!(store.diff(&first.id, None)?.contains("+v2"));
//!
//! let restored = store.restore(&first.id)?;
//! assert_eq!(std::fs::read_to_string(ws.path().join("notes.txt"))?, "v1\n");
//! assert!(!ws.path().join("new.txt").exists());
//!
//! store.restore(&restored.before)?; // undo the restore
//! assert_eq!(std::fs::read_to_string(ws.path().join("notes.txt"))?, "v2\n");
//! # let _ = Kind::Manual;
//! # Ok(())
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]
#![cfg(unix)]

mod diff;
mod error;
mod git;
mod layout;
mod meta;
mod modes;
mod paths;
mod prune;
mod restore;
mod snapshot;
mod store;

pub use diff::{Change, ChangeKind};
pub use error::{Error, Result};
pub use meta::{Checkpoint, Id, Kind, MAX_SKIPPED_LISTED, Meta, SkipReason, Skipped};
pub use prune::Pruned;
pub use restore::{Kept, Restored};
pub use store::{Limits, Store};
