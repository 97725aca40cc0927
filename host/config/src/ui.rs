//! `[ui]`: how the interactive terminal gets a person's attention (issue 26, item 5): a
//! notification (BEL, or OSC 9 / OSC 777 where the terminal shows those) when an approval waits
//! or a long turn ends.

use std::time::Duration;

use serde::Deserialize;

use crate::error::Result;
use crate::locate::SourceText;

/// `[ui]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUi {
    pub(crate) notify: Option<bool>,
    pub(crate) notify_after_sec: Option<u64>,
}

/// `[ui]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct UiLayer {
    notify: Option<bool>,
    notify_after_sec: Option<u64>,
}

impl UiLayer {
    /// One layer's values (every value of the right type is valid: 0 notifies after every turn).
    pub(crate) fn from_raw(raw: RawUi, _source: &SourceText<'_>) -> Result<Self> {
        Ok(Self {
            notify: raw.notify,
            notify_after_sec: raw.notify_after_sec,
        })
    }

    /// Lays the keys `later` sets over these.
    pub(crate) fn merge(&mut self, later: UiLayer) {
        if later.notify.is_some() {
            self.notify = later.notify;
        }
        if later.notify_after_sec.is_some() {
            self.notify_after_sec = later.notify_after_sec;
        }
    }

    /// The resolved section, with defaults for what no layer set.
    pub(crate) fn resolve(self) -> UiSection {
        let d = UiSection::default();
        UiSection {
            notify: self.notify.unwrap_or(d.notify),
            notify_after: self
                .notify_after_sec
                .map_or(d.notify_after, Duration::from_secs),
        }
    }
}

/// `[ui]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiSection {
    /// `notify` (default true): notify when an approval waits or a long turn ends.
    pub notify: bool,
    /// `notify_after_sec` (default 10): a turn notifies when it ends only if it ran this long.
    pub notify_after: Duration,
}

impl Default for UiSection {
    fn default() -> Self {
        Self {
            notify: true,
            notify_after: Duration::from_secs(10),
        }
    }
}
