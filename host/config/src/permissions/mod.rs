//! `[permissions]`: the mode and the allow / ask / deny rules, from every layer and from the
//! command line (`--mode`, `--allow`, `--ask`, `--deny`).
//!
//! ```toml
//! [permissions]
//! mode = "default"        # default | accept-edits | read-only | yolo | plan
//! allow = ["fs__read_file", "shell__run(cargo test *)"]
//! ask   = ["web__fetch(url: domain:*.example.com)"]
//! deny  = ["shell__run(rm -rf *)", "fs__*(path: **/.env)"]
//! ```
//!
//! Rule lists accumulate over every layer, each rule keeping its own file and line, because a
//! deny at any layer must win; the mode is the last layer's.

mod edit;
mod rules;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use edit::append_rule;
pub use rules::{RuleList, RuleSource, check_rule_shape};

use crate::check::invalid;
use crate::error::{Location, Result};
use crate::locate::SourceText;

/// `permissions.mode`: the default decision when no rule matches (issue 4, item 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Ask unless a rule or a trusted read-only annotation allows.
    #[default]
    Default,
    /// Also allow file edits inside the roots.
    AcceptEdits,
    /// Deny every tool not marked read-only.
    ReadOnly,
    /// Allow everything not denied.
    Yolo,
    /// Plan before acting: deny every tool except those a trusted server marks read-only and
    /// the built-in todo and plan servers' tools; the model ends with `plan__exit`.
    Plan,
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Default => "default",
            Self::AcceptEdits => "accept-edits",
            Self::ReadOnly => "read-only",
            Self::Yolo => "yolo",
            Self::Plan => "plan",
        })
    }
}

impl PermissionMode {
    /// How much a mode lets through without asking, loosest last: read-only = plan < default <
    /// accept-edits < yolo.
    fn looseness(self) -> u8 {
        match self {
            Self::ReadOnly | Self::Plan => 0,
            Self::Default => 1,
            Self::AcceptEdits => 2,
            Self::Yolo => 3,
        }
    }

    /// This mode, or `ceiling` when that is tighter.
    pub fn at_most(self, ceiling: Self) -> Self {
        if self.looseness() <= ceiling.looseness() {
            self
        } else {
            ceiling
        }
    }
}

/// `[permissions]`, resolved. Rule lists accumulate over every layer, in layer order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    /// `mode` (default `default`).
    pub mode: PermissionMode,
    /// `allow` rules.
    pub allow: Vec<RuleSource>,
    /// `ask` rules.
    pub ask: Vec<RuleSource>,
    /// `deny` rules.
    pub deny: Vec<RuleSource>,
}

/// `[permissions]` exactly as written in one layer.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPermissions {
    mode: Option<PermissionMode>,
    allow: Option<Vec<Spanned<String>>>,
    ask: Option<Vec<Spanned<String>>>,
    deny: Option<Vec<Spanned<String>>>,
}

/// `[permissions]` of one or more layers (and the command line).
#[derive(Debug, Clone, Default)]
pub(crate) struct PermissionsLayer {
    mode: Option<PermissionMode>,
    rules: Vec<(RuleList, RuleSource)>,
}

impl PermissionsLayer {
    /// Checks one layer's rules' shapes, each located at its `file:line`.
    pub(crate) fn from_raw(raw: RawPermissions, source: &SourceText<'_>) -> Result<Self> {
        let mut layer = Self {
            mode: raw.mode,
            rules: Vec::new(),
        };
        for (list, rules) in [
            (RuleList::Allow, raw.allow),
            (RuleList::Ask, raw.ask),
            (RuleList::Deny, raw.deny),
        ] {
            for rule in rules.unwrap_or_default() {
                let at = source.locate(rule.span().start);
                layer
                    .rules
                    .push((list, rule_source(list, rule.into_inner(), at)?));
            }
        }
        Ok(layer)
    }

    /// Lays `later` over `self`: its mode wins, its rules add to the lists.
    pub(crate) fn merge(&mut self, later: Self) {
        if later.mode.is_some() {
            self.mode = later.mode;
        }
        self.rules.extend(later.rules);
    }

    /// Adds the command line's `--allow/--ask/--deny` rules (located at their flag and position
    /// among that flag's arguments) and its `--mode`, over every file.
    pub(crate) fn apply_flags(
        &mut self,
        rules: &[(RuleList, String)],
        mode: Option<PermissionMode>,
    ) -> Result<()> {
        let mut positions: std::collections::BTreeMap<RuleList, usize> = Default::default();
        for (list, rule) in rules {
            let position = positions.entry(*list).or_insert(0);
            *position += 1;
            let at = Location {
                file: PathBuf::from(list.flag()),
                line: *position,
                column: 0,
            };
            self.rules
                .push((*list, rule_source(*list, rule.clone(), at)?));
        }
        if mode.is_some() {
            self.mode = mode;
        }
        Ok(())
    }

    /// Adds rules that are already checked (the managed policy's), after everything else.
    pub(crate) fn add_rules(&mut self, rules: impl IntoIterator<Item = (RuleList, RuleSource)>) {
        self.rules.extend(rules);
    }

    /// The section: the mode, and the rules sorted into their lists in layer order.
    pub(crate) fn resolve(self) -> Permissions {
        let mut permissions = Permissions {
            mode: self.mode.unwrap_or_default(),
            ..Permissions::default()
        };
        for (list, rule) in self.rules {
            match list {
                RuleList::Allow => permissions.allow.push(rule),
                RuleList::Ask => permissions.ask.push(rule),
                RuleList::Deny => permissions.deny.push(rule),
            }
        }
        permissions
    }
}

/// Makes a rule from a config file or a flag, checking its shape.
fn rule_source(list: RuleList, rule: String, at: Location) -> Result<RuleSource> {
    if let Err(message) = check_rule_shape(&rule) {
        return Err(invalid(at, &format!("permissions.{list}"), &message));
    }
    Ok(RuleSource {
        rule,
        file: at.file,
        line: at.line,
    })
}
