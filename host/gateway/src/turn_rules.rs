//! What holds for one turn only (issue 19): a custom command's `allowed-tools` (allow rules
//! that end with the turn) and the Agent Skills loaded during it, whose `allowed-tools` narrow
//! what may be called when `[skills] honor_allowed_tools` is on.
//!
//! Neither can widen what the rest of the gateway decides. Turn rules sit beside the session's
//! allow rules in [`crate::permission::decide`], so a deny rule (the managed policy's too), an
//! ask rule, `read-only` and `plan` mode, protected paths and risky shell constructs all still
//! come first. A skill's list is only a filter: a call outside it is denied, a call inside it
//! is decided as if no skill were loaded.

use serde_json::Value;
use tern_config::{
    Builtin, RuleList,
    claude_tools::{Converted, split_list, to_rules},
};

pub use crate::turn_state::TurnRule;
use crate::{
    gateway::{Gateway, Pending},
    permission::{Verdict, allowed_by},
    rules::{Rule, RuleSet},
    settings::ToolPolicy,
    turn_state::{ActiveSkill, TurnState},
};

impl Gateway {
    /// Starts a turn whose calls `rules` also allow; they end at [`Self::end_turn`]. Errors
    /// name the rule that does not compile (nothing is installed then).
    pub fn begin_turn(&self, rules: &[TurnRule]) -> Result<(), String> {
        let mut allow = RuleSet::default();
        for r in rules {
            tern_config::check_rule_shape(&r.rule).map_err(|e| format!("{}: {e}", r.origin))?;
            let rule = Rule::compile(
                &r.rule,
                RuleList::Allow,
                r.origin.clone(),
                &self.settings.scope,
            )
            .map_err(|e| format!("{}: {e}", r.origin))?;
            allow.push(rule);
        }
        let mut turn = self
            .turn
            .write()
            .map_err(|_| "the turn's rules are unavailable".to_string())?;
        *turn = TurnState {
            allow,
            skills: Vec::new(),
        };
        Ok(())
    }

    /// Ends the turn: its rules and its loaded skills' narrowing go.
    pub fn end_turn(&self) {
        if let Ok(mut turn) = self.turn.write() {
            *turn = TurnState::default();
        }
    }

    /// The session's allow rules and the turn's, for the decision.
    pub(crate) fn extra_allows(&self) -> RuleSet {
        let mut set = self.session.read().map(|s| s.clone()).unwrap_or_default();
        if let Ok(turn) = self.turn.read() {
            for rule in &turn.allow.allow {
                set.push(rule.clone());
            }
        }
        set
    }

    /// A deny when a skill loaded in this turn does not list the call. The skills servers'
    /// own tools stay callable (loading another skill, reading the skill's files).
    pub(crate) fn skill_verdict(&self, p: &Pending<'_>) -> Option<Verdict> {
        if p.policy.builtin == Some(Builtin::Skills) {
            return None;
        }
        let turn = self.turn.read().ok()?;
        let facts = p.facts(self);
        let readable = p.shell.as_ref().is_none_or(|a| a.risks.is_empty());
        let none = RuleSet::default();
        turn.skills
            .iter()
            .find(|s| !(readable && allowed_by(&facts, &s.allowed, &none).is_some()))
            .map(|s| Verdict::Deny {
                rule: format!("skill:{}", s.name),
                reason: format!(
                    "the skill `{}` is active and its allowed-tools ({}) do not include this \
                     call; it stays narrowed until the turn ends",
                    s.name, s.declared
                ),
            })
    }

    /// After a successful call: a skill the built-in skills server loaded narrows the rest of
    /// the turn, when `[skills] honor_allowed_tools` is on and the skill lists its tools.
    pub(crate) fn observe_skill(&self, policy: &ToolPolicy, result_meta: Option<&Value>) {
        if !self.settings.honor_skill_tools || policy.builtin != Some(Builtin::Skills) {
            return;
        }
        let Some(skill) = result_meta.and_then(|m| m.get(tern_protocol::meta::SKILL)) else {
            return;
        };
        let name = skill
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let entries: Vec<String> = match skill.get("allowed_tools") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .flat_map(split_list)
                .collect(),
            Some(Value::String(s)) => split_list(s),
            _ => Vec::new(),
        };
        if entries.is_empty() {
            return;
        }
        let mut allowed = RuleSet::default();
        for entry in &entries {
            // An entry tern cannot read allows nothing: the skill is only narrower for it.
            let Ok(Converted::Rules(rules)) = to_rules(entry) else {
                continue;
            };
            for text in rules {
                if let Ok(rule) = Rule::compile(
                    &text,
                    RuleList::Allow,
                    format!("skill:{name}"),
                    &self.settings.scope,
                ) {
                    allowed.push(rule);
                }
            }
        }
        if let Ok(mut turn) = self.turn.write() {
            turn.skills.retain(|s| s.name != name);
            turn.skills.push(ActiveSkill {
                name,
                declared: entries.join(" "),
                allowed,
            });
        }
    }
}
