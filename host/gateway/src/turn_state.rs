//! The state one turn adds to the gateway's decisions (a leaf: the gateway holds it, the turn
//! rules in `turn_rules.rs` fill and read it).

use crate::rules::RuleSet;

/// One turn-scoped allow rule and where it was written (`FILE:LINE`, shown in the audit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRule {
    /// In tern's rule language (see [`tern_config::claude_tools`] for Claude Code's).
    pub rule: String,
    pub origin: String,
}

/// A skill loaded in this turn and the calls its `allowed-tools` let through.
#[derive(Debug, Clone)]
pub(crate) struct ActiveSkill {
    pub(crate) name: String,
    /// `allowed-tools` as the skill wrote it, for the reason a call is denied.
    pub(crate) declared: String,
    pub(crate) allowed: RuleSet,
}

/// The turn's extra state.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnState {
    pub(crate) allow: RuleSet,
    pub(crate) skills: Vec<ActiveSkill>,
}
