//! The editor answers tern's "ask": the gateway's question becomes `session/request_permission`
//! with ACP's four options, and the option chosen becomes the gateway's [`Approval`]. The
//! gateway audits it with rule `acp:once`, `acp:always` or `acp:deny` (the approver's name).
//!
//! - allow once → [`Approval::Once`];
//! - allow always (project) → [`Approval::AlwaysInProject`]: the gateway adds the rule it named
//!   to this run and saves it to the project's `.tern/config.toml` (renewing its trust when it
//!   was trusted), exactly as the REPL's "in this project" does; allow always (all projects,
//!   option `allow_always_user`) → [`Approval::Always`], saved to `$TERN_HOME/config.toml`. Both
//!   are offered only when a rule can allow the call;
//! - reject once → a deny, with the reason sent to the model;
//! - reject always → a deny, and every later request of this session that the same rule would
//!   have allowed is denied without asking.
//!
//! No answer (the editor cancelled the request, or the connection closed) is a deny.

use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use serde_json::{Value, json};
use tern_gateway::{Approval, ApprovalRequest, Approver};
use tern_protocol::meta;

use super::rpc::Outbox;

/// Option ids tern offers (ACP `PermissionOptionId`s).
pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const ALLOW_ALWAYS_USER: &str = "allow_always_user";
pub const REJECT_ONCE: &str = "reject_once";
pub const REJECT_ALWAYS: &str = "reject_always";

/// Asks the editor over ACP.
pub struct AcpApprover {
    out: Outbox,
    /// Set once the engine is up (nothing is asked before).
    session_id: Arc<OnceLock<String>>,
    /// What "reject always" answered, by the key of the request ([`key`]).
    rejected: Mutex<Vec<String>>,
}

impl AcpApprover {
    pub fn new(out: Outbox, session_id: Arc<OnceLock<String>>) -> Self {
        Self {
            out,
            session_id,
            rejected: Mutex::default(),
        }
    }

    fn params(&self, session_id: &str, request: &ApprovalRequest) -> Value {
        let mut options =
            vec![json!({"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"})];
        if let Some(rule) = request.always_rules.first() {
            // Both scopes, as the REPL offers them; project first (ACP's "allow always" is
            // the project's rule in the terms). A trusted project config stays trusted:
            // the gateway renews its `tern trust` hash after its own write.
            options.push(json!({
                "optionId": ALLOW_ALWAYS,
                "name": format!("Always allow `{rule}` in this project (.tern/config.toml)"),
                "kind": "allow_always",
                "_meta": {(meta::ACP_SCOPE): "project"},
            }));
            options.push(json!({
                "optionId": ALLOW_ALWAYS_USER,
                "name": format!("Always allow `{rule}` in all projects ($TERN_HOME/config.toml)"),
                "kind": "allow_always",
                "_meta": {(meta::ACP_SCOPE): "user"},
            }));
        }
        options.push(json!({"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"}));
        options.push(json!({
            "optionId": REJECT_ALWAYS,
            "name": "Always reject (this session)",
            "kind": "reject_always",
        }));
        json!({
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": request.call_id,
                "status": "pending",
                "_meta": {(meta::ACP_PERMISSION): {
                    "reasons": request.reasons,
                    "alwaysRules": request.always_rules,
                    "commands": request.command.as_ref().map(|c| c.commands.clone()),
                    "risks": request.command.as_ref().map(|c| c.risks.clone()),
                }},
            },
            "options": options,
        })
    }
}

/// What "reject always" remembers a request by: the rules "always allow" would add, else the
/// tool's name.
fn key(request: &ApprovalRequest) -> String {
    if request.always_rules.is_empty() {
        request.name.clone()
    } else {
        request.always_rules.join("\n")
    }
}

/// The decision for an answer to `session/request_permission` (`None`: no answer came).
pub fn decide(answer: Option<Result<Value, Value>>) -> (Option<&'static str>, Approval) {
    let deny = |reason: &str| Approval::Deny {
        reason: Some(reason.to_string()),
    };
    let Some(Ok(result)) = answer else {
        return (
            None,
            deny("the editor did not answer the permission request"),
        );
    };
    let outcome = &result["outcome"];
    match (outcome["outcome"].as_str(), outcome["optionId"].as_str()) {
        (Some("selected"), Some(ALLOW_ONCE)) => (Some(ALLOW_ONCE), Approval::Once),
        (Some("selected"), Some(ALLOW_ALWAYS)) => (Some(ALLOW_ALWAYS), Approval::AlwaysInProject),
        (Some("selected"), Some(ALLOW_ALWAYS_USER)) => (Some(ALLOW_ALWAYS_USER), Approval::Always),
        (Some("selected"), Some(REJECT_ALWAYS)) => (
            Some(REJECT_ALWAYS),
            deny("the user rejected this call in the editor (always, for this session)"),
        ),
        (Some("selected"), Some(REJECT_ONCE)) => (
            Some(REJECT_ONCE),
            deny("the user rejected this call in the editor"),
        ),
        (Some("cancelled"), _) => (None, deny("the permission request was cancelled")),
        _ => (
            None,
            deny("the editor's answer chose no option tern offered"),
        ),
    }
}

#[async_trait]
impl Approver for AcpApprover {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        let k = key(&request);
        if self.rejected.lock().is_ok_and(|r| r.contains(&k)) {
            return Approval::Deny {
                reason: Some("the user rejected calls like this one for this session".into()),
            };
        }
        let Some(session_id) = self.session_id.get() else {
            return Approval::Deny {
                reason: Some("the session is not ready yet".into()),
            };
        };
        let answer = self
            .out
            .request(
                "session/request_permission",
                self.params(session_id, &request),
            )
            .await;
        let (chosen, approval) = decide(answer);
        if chosen == Some(REJECT_ALWAYS)
            && let Ok(mut r) = self.rejected.lock()
        {
            r.push(k);
        }
        approval
    }

    fn name(&self) -> &'static str {
        "acp"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selected(id: &str) -> Option<Result<Value, Value>> {
        Some(Ok(
            json!({"outcome": {"outcome": "selected", "optionId": id}}),
        ))
    }

    #[test]
    fn each_option_is_a_decision() {
        assert_eq!(decide(selected(ALLOW_ONCE)).1, Approval::Once);
        assert_eq!(decide(selected(ALLOW_ALWAYS)).1, Approval::AlwaysInProject);
        assert_eq!(decide(selected(ALLOW_ALWAYS_USER)).1, Approval::Always);
        assert!(matches!(
            decide(selected(REJECT_ONCE)).1,
            Approval::Deny { .. }
        ));
        assert_eq!(decide(selected(REJECT_ALWAYS)).0, Some(REJECT_ALWAYS));
        for unanswered in [
            None,
            Some(Err(json!({"code": -32603, "message": "x"}))),
            Some(Ok(json!({"outcome": {"outcome": "cancelled"}}))),
            selected("something_else"),
        ] {
            assert!(matches!(decide(unanswered).1, Approval::Deny { .. }));
        }
    }
}
