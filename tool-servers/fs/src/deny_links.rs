//! The hard-link check of the deny rules: a regular file with more than one link is compared by
//! (device, inode) with the denied files under the roots, found by one walk per call on first
//! need (see `deny.rs`). Apart from `deny.rs` because it walks the roots, and the walker
//! itself consults the deny rules to skip denied entries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Stat};
use tokio_util::sync::CancellationToken;

use crate::deny::Deny;
use crate::resolve::{Intent, Roots};
use crate::walk::{self, Entry, Flow, Rules, Visitor};

impl Deny {
    /// When `stat` (an open file's) has more than one link and its inode is also
    /// a denied file under the roots: that file's path.
    pub(crate) fn hard_link_of(&self, roots: &Roots, stat: &Stat) -> Option<&Path> {
        if self.is_empty()
            || stat.st_nlink <= 1
            || FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile
        {
            return None;
        }
        self.inodes
            .get_or_init(|| self.denied_inodes(roots))
            .get(&(stat.st_dev, stat.st_ino))
            .map(PathBuf::as_path)
    }

    /// Every denied regular file under the roots, by (device, inode). Walks
    /// each glob's literal prefix once (nested prefixes once), with no ignore
    /// rule: a `.env` is usually git-ignored, and its hard link need not be.
    fn denied_inodes(&self, roots: &Roots) -> HashMap<(u64, u64), PathBuf> {
        let mut prefixes: Vec<&PathBuf> = self.rules.scan_from.iter().collect();
        prefixes.sort();
        prefixes.dedup_by(|later, earlier| later.starts_with(&**earlier));
        let mut found = HashMap::new();
        let never = CancellationToken::new();
        for prefix in prefixes {
            // A prefix above a root is scanned from that root; one outside every
            // root is skipped (only files under the roots can be opened here).
            let starts: Vec<&Path> = roots
                .paths()
                .filter(|r| r.starts_with(prefix))
                .chain(
                    roots
                        .paths()
                        .any(|r| prefix.starts_with(r))
                        .then_some(prefix.as_path()),
                )
                .collect();
            for start in starts {
                self.scan(roots, start, &never, &mut found);
            }
        }
        found
    }

    fn scan(
        &self,
        roots: &Roots,
        start: &Path,
        never: &CancellationToken,
        found: &mut HashMap<(u64, u64), PathBuf>,
    ) {
        // A prefix that does not exist holds no denied file.
        let Ok(resolved) = roots.resolve(start, Intent::Open) else {
            return;
        };
        let Some(stat) = resolved.stat() else { return };
        // The prefix itself may be a denied file (a glob without wildcards).
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            if self.rule_for(resolved.path()).is_some() {
                found.insert((stat.st_dev, stat.st_ino), resolved.path().to_path_buf());
            }
            return;
        }
        let rules = Rules::everything();
        let workers = (0..walk::default_threads())
            .map(|_| Scan {
                deny: self,
                parent: None,
                found: Vec::new(),
            })
            .collect();
        match walk::walk(roots, resolved.path(), &rules, never, workers) {
            Ok((workers, _)) => {
                for w in workers {
                    found.extend(w.found);
                }
            }
            Err(e) => tracing::debug!("deny scan of {}: {e}", start.display()),
        }
    }
}

/// A worker of the hard-link scan.
struct Scan<'a> {
    deny: &'a Deny,
    /// The last directory checked and whether it (or one above it) is denied:
    /// entries of one directory arrive together, so this is checked once per directory.
    parent: Option<(PathBuf, bool)>,
    found: Vec<((u64, u64), PathBuf)>,
}

impl Visitor for Scan<'_> {
    fn visit(&mut self, entry: &Entry<'_>) -> Flow {
        if entry.kind != FileType::RegularFile {
            return Flow::Continue;
        }
        let parent = entry.path.parent().unwrap_or(Path::new("/"));
        let parent_denied = match &self.parent {
            Some((p, denied)) if p == parent => *denied,
            _ => {
                let denied = self.deny.rule_for(parent).is_some();
                self.parent = Some((parent.to_path_buf(), denied));
                denied
            }
        };
        if (parent_denied || self.deny.entry_rule(entry.path).is_some())
            && let Ok(st) = rfs::statat(entry.dir, entry.name, AtFlags::SYMLINK_NOFOLLOW)
        {
            self.found
                .push(((st.st_dev, st.st_ino), entry.path.to_path_buf()));
        }
        Flow::Continue
    }
}
