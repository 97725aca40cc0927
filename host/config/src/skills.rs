//! `[skills]`: how tern treats the Agent Skills the model loads (issue 19, item 2).
//!
//! ```toml
//! [skills]
//! honor_allowed_tools = true   # a loaded skill's `allowed-tools` narrows the rest of the turn
//! ```

use serde::Deserialize;

use crate::error::Result;
use crate::locate::SourceText;

/// `[skills]` as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSkills {
    pub(crate) honor_allowed_tools: Option<bool>,
}

/// `[skills]` keys set so far, layer over layer.
#[derive(Debug, Default, Clone)]
pub(crate) struct SkillsLayer {
    honor_allowed_tools: Option<bool>,
}

impl SkillsLayer {
    /// One layer's values (a boolean is all there is to check, and serde did).
    pub(crate) fn from_raw(raw: RawSkills, _source: &SourceText<'_>) -> Result<Self> {
        Ok(Self {
            honor_allowed_tools: raw.honor_allowed_tools,
        })
    }

    /// Lays the keys `later` sets over these.
    pub(crate) fn merge(&mut self, later: SkillsLayer) {
        if later.honor_allowed_tools.is_some() {
            self.honor_allowed_tools = later.honor_allowed_tools;
        }
    }

    /// The resolved section, with defaults for what no layer set.
    pub(crate) fn resolve(self) -> SkillsSection {
        SkillsSection {
            honor_allowed_tools: self.honor_allowed_tools.unwrap_or(false),
        }
    }
}

/// `[skills]`, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillsSection {
    /// `honor_allowed_tools` (default false): while a skill the model loaded with
    /// `skills__load` is active — from that call to the end of the turn — a call to a tool its
    /// `allowed-tools` does not list is denied, naming the skill. It never allows anything the
    /// rules would not. Off by default: the Agent Skills specification calls the field
    /// experimental, and Claude Code reads it as a grant rather than a limit.
    pub honor_allowed_tools: bool,
}
