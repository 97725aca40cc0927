//! `[agent]`: the loop's step budget and how long a headless run waits for servers.
//!
//! ```toml
//! [agent]
//! max_steps = 50           # model turns per run
//! startup_grace_sec = 2    # headless: wait this long for servers that are not required
//! ```

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::check::invalid;
use crate::error::Result;
use crate::locate::SourceText;

/// The agent loop's step budget when `agent.max_steps` is unset.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// How long a headless run waits for servers that are not required.
pub const DEFAULT_STARTUP_GRACE: Duration = Duration::from_secs(2);

/// `[agent]`, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSection {
    /// `max_steps` (default 50): model turns per run before the loop stops.
    pub max_steps: u32,
    /// Accept a server's form elicitation with the defaults its schema declares instead of
    /// declining it (no file key: only `tern run --accept-elicitation-defaults` sets it).
    pub accept_elicitation_defaults: bool,
    /// `startup_grace_sec` (default 2): how long a headless run waits for servers that are not
    /// `required` before its first model request; later ones join the table as they come up.
    pub startup_grace: Duration,
}

impl Default for AgentSection {
    fn default() -> Self {
        Self {
            max_steps: DEFAULT_MAX_STEPS,
            accept_elicitation_defaults: false,
            startup_grace: DEFAULT_STARTUP_GRACE,
        }
    }
}

/// `[agent]` exactly as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAgent {
    max_steps: Option<Spanned<u32>>,
    startup_grace_sec: Option<Spanned<f64>>,
}

/// `[agent]` of one or more layers: later layers win key by key.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentLayer {
    max_steps: Option<u32>,
    startup_grace: Option<Duration>,
}

impl AgentLayer {
    /// Checks one layer's `[agent]`: a step budget of at least 1, a grace of 0 to 600 s.
    pub(crate) fn from_raw(raw: RawAgent, source: &SourceText<'_>) -> Result<Self> {
        let mut layer = Self::default();
        if let Some(grace) = raw.startup_grace_sec {
            let secs = *grace.get_ref();
            if !(0.0..=600.0).contains(&secs) {
                return Err(invalid(
                    source.locate(grace.span().start),
                    "agent.startup_grace_sec",
                    "must be a number of seconds from 0 to 600",
                ));
            }
            layer.startup_grace = Some(Duration::from_secs_f64(secs));
        }
        if let Some(max_steps) = raw.max_steps {
            if *max_steps.get_ref() == 0 {
                return Err(invalid(
                    source.locate(max_steps.span().start),
                    "agent.max_steps",
                    "must be at least 1",
                ));
            }
            layer.max_steps = Some(max_steps.into_inner());
        }
        Ok(layer)
    }

    /// Lays the keys `later` sets over `self`.
    pub(crate) fn merge(&mut self, later: Self) {
        if later.max_steps.is_some() {
            self.max_steps = later.max_steps;
        }
        if later.startup_grace.is_some() {
            self.startup_grace = later.startup_grace;
        }
    }

    /// The section, defaults filled in.
    pub(crate) fn resolve(self) -> AgentSection {
        AgentSection {
            max_steps: self.max_steps.unwrap_or(DEFAULT_MAX_STEPS),
            accept_elicitation_defaults: false,
            startup_grace: self.startup_grace.unwrap_or(DEFAULT_STARTUP_GRACE),
        }
    }
}
