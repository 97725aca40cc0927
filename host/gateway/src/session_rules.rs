//! Rules added for the rest of a session (the REPL's `/allow RULE`).

use tern_config::RuleList;

use crate::{gateway::Gateway, rules::Rule};

/// Where session rules say they came from, in the audit.
pub const USER_SESSION: &str = "user:session";

impl Gateway {
    /// Allows calls matching `rule` for the rest of this gateway's life (not saved
    /// to any config). Errors name what is wrong with the rule.
    pub fn allow_for_session(&self, rule: &str) -> Result<(), String> {
        tern_config::check_rule_shape(rule)?;
        let compiled = Rule::compile(
            rule,
            RuleList::Allow,
            USER_SESSION.into(),
            &self.settings.scope,
        )
        .map_err(|e| e.to_string())?;
        match self.session.write() {
            Ok(mut session) => {
                session.push(compiled);
                Ok(())
            }
            Err(_) => Err("the session rules are unavailable".to_string()),
        }
    }
}
