//! Bounding the store: checkpoints older than an age go, then the oldest until the store fits
//! a size. The latest checkpoint always stays (it is what the next one is compared with).

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::error::Result;
use crate::store::Store;

/// What a prune did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// Checkpoints removed.
    pub removed: usize,
    /// Checkpoints left.
    pub kept: usize,
    /// Bytes the store takes on disk afterwards.
    pub bytes: u64,
}

impl Store {
    /// Removes checkpoints older than `max_age`, then the oldest ones while the store takes
    /// more than `max_bytes` on disk, and reclaims their space (`git gc`). Cheap when there is
    /// nothing to remove; a `gc` of a large store takes seconds, so run it off the path of a
    /// turn (at the start of a session, in the background).
    pub fn prune(&self, max_age: Duration, max_bytes: u64) -> Result<Pruned> {
        let _lock = self.lock()?;
        let mut refs = self.refs()?;
        let cutoff = SystemTime::now().checked_sub(max_age);
        let old = refs
            .iter()
            .take(refs.len().saturating_sub(1))
            .take_while(|(_, c)| cutoff.is_some_and(|cut| c.created < cut))
            .count();
        let mut removed = self.remove_oldest(&mut refs, old)?;
        let mut bytes = self.disk_usage()?;
        if removed > 0 {
            self.gc()?;
            bytes = self.disk_usage()?;
        }
        while bytes > max_bytes && refs.len() > 1 {
            // A quarter at a time: one `gc` per step, and a few steps to reach any size.
            let n = (refs.len() / 4).clamp(1, refs.len() - 1);
            removed += self.remove_oldest(&mut refs, n)?;
            self.gc()?;
            bytes = self.disk_usage()?;
        }
        Ok(Pruned {
            removed,
            kept: refs.len(),
            bytes,
        })
    }

    fn remove_oldest(
        &self,
        refs: &mut Vec<(String, crate::meta::Checkpoint)>,
        n: usize,
    ) -> Result<usize> {
        if n == 0 {
            return Ok(0);
        }
        let transaction: String = refs
            .drain(..n)
            .map(|(name, _)| format!("delete {name}\n"))
            .collect();
        self.git
            .run_with(&["update-ref", "--stdin"], Some(transaction.as_bytes()))?;
        Ok(n)
    }

    /// Packs what is still referenced (the checkpoints, the index) and drops the rest now.
    fn gc(&self) -> Result<()> {
        self.git.run(&["gc", "--quiet", "--prune=now"])?;
        Ok(())
    }
}
