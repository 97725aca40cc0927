//! `[checkpoints]`: the shadow store that records the workspace before each turn, so `/rewind`
//! and `tern rewind` can put every file back (issue 20) — and how much of it is kept.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

/// `[checkpoints]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheckpoints {
    pub(crate) enabled: Option<bool>,
    pub(crate) max_age_days: Option<Spanned<u64>>,
    pub(crate) max_size_mb: Option<Spanned<u64>>,
    pub(crate) max_file_mb: Option<Spanned<u64>>,
}

/// `[checkpoints]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct CheckpointsLayer {
    enabled: Option<bool>,
    max_age_days: Option<u64>,
    max_size_mb: Option<u64>,
    max_file_mb: Option<u64>,
}

impl CheckpointsLayer {
    /// Checks one layer's values (every bound is at least 1).
    pub(crate) fn from_raw(raw: RawCheckpoints, source: &SourceText<'_>) -> Result<Self> {
        let positive = |key: &str, value: Option<Spanned<u64>>| -> Result<Option<u64>> {
            value
                .map(|v| match *v.get_ref() {
                    0 => Err(invalid(
                        source.locate(v.span().start),
                        &format!("checkpoints.{key}"),
                        "must be at least 1 (turn checkpoints off with `enabled = false`)",
                    )),
                    n => Ok(n),
                })
                .transpose()
        };
        Ok(Self {
            enabled: raw.enabled,
            max_age_days: positive("max_age_days", raw.max_age_days)?,
            max_size_mb: positive("max_size_mb", raw.max_size_mb)?,
            max_file_mb: positive("max_file_mb", raw.max_file_mb)?,
        })
    }

    /// Lays the keys `later` sets over these.
    pub(crate) fn merge(&mut self, later: CheckpointsLayer) {
        macro_rules! over {
            ($($field:ident),*) => {$(
                if later.$field.is_some() {
                    self.$field = later.$field;
                }
            )*};
        }
        over!(enabled, max_age_days, max_size_mb, max_file_mb);
    }

    /// The resolved section, with defaults for what no layer set.
    pub(crate) fn resolve(self) -> CheckpointsSection {
        let d = CheckpointsSection::default();
        let days = |n: u64| Duration::from_secs(n.saturating_mul(24 * 3600));
        let mib = |n: u64| n.saturating_mul(1024 * 1024);
        CheckpointsSection {
            enabled: self.enabled.unwrap_or(d.enabled),
            max_age: self.max_age_days.map_or(d.max_age, days),
            max_bytes: self.max_size_mb.map_or(d.max_bytes, mib),
            max_file_bytes: self.max_file_mb.map_or(d.max_file_bytes, mib),
        }
    }
}

/// `[checkpoints]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointsSection {
    /// `enabled` (default true): record the workspace before each turn.
    pub enabled: bool,
    /// `max_age_days` (default 30): older checkpoints are pruned when a run starts.
    pub max_age: Duration,
    /// `max_size_mb` (default 2048): the store of one workspace is pruned, oldest first, to
    /// stay under this.
    pub max_bytes: u64,
    /// `max_file_mb` (default 10): larger files are not recorded (and a rewind leaves them).
    pub max_file_bytes: u64,
}

impl Default for CheckpointsSection {
    fn default() -> Self {
        Self {
            enabled: true,
            max_age: Duration::from_secs(30 * 24 * 3600),
            max_bytes: 2048 * 1024 * 1024,
            max_file_bytes: 10 * 1024 * 1024,
        }
    }
}
