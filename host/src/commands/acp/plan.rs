//! Approving a plan over ACP. When a plan-mode turn ends with a plan (`plan__exit`), tern asks
//! the editor with `session/request_permission` on that call, as Claude Code's ACP adapter
//! (zed-industries/claude-code-acp, `ExitPlanMode`) does — so Zed and other clients show their
//! own permission card, no new UI. The options are its three, with tern's mode ids:
//! "Yes, and auto-accept edits" (`accept-edits`, kind `allow_always`), "Yes, and manually
//! approve edits" (`default`, `allow_once`) and "No, keep planning" (`plan`, `reject_once`).
//!
//! A yes switches the mode (a `current_mode_update` follows), saves the plan beside the
//! session's transcript (`$TERN_HOME/sessions/<id>.plan.md`, like the REPL) and runs the next
//! turn at once in the same prompt, with the approved plan and the REPL's instruction to record
//! its steps with `todo__write` first. Anything else (no, cancelled, no answer) keeps plan mode
//! and ends the prompt: the editor's next prompt is the feedback.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tern_config::PermissionMode;
use tern_protocol::{Envelope, Event};

use super::rpc::Outbox;
use crate::agent::Subscriber;

/// The plan the last turn proposed and the `plan__exit` call that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    pub call_id: String,
    pub plan: String,
}

/// Keeps the plan a turn proposed, for the session to put to the editor after the turn.
pub struct PlanCatcher(pub Arc<Mutex<Option<Proposed>>>);

impl Subscriber for PlanCatcher {
    fn on_event(&mut self, e: &Envelope) {
        if let Event::PlanProposed { call_id, plan } = &e.event
            && let Ok(mut slot) = self.0.lock()
        {
            *slot = Some(Proposed {
                call_id: call_id.clone(),
                plan: plan.clone(),
            });
        }
    }
}

/// The modes a yes may switch to, loosest first, with the option's name and kind.
const APPROVALS: &[(PermissionMode, &str, &str)] = &[
    (
        PermissionMode::AcceptEdits,
        "Yes, and auto-accept edits",
        "allow_always",
    ),
    (
        PermissionMode::Default,
        "Yes, and manually approve edits",
        "allow_once",
    ),
];

/// The option that keeps planning.
const KEEP_PLANNING: &str = "plan";

/// `session/request_permission` params asking to approve `proposed`, offering the modes
/// `allowed` lets through.
pub fn question(
    session_id: &str,
    proposed: &Proposed,
    allowed: &(dyn Fn(PermissionMode) -> bool + Sync),
) -> Value {
    let mut options: Vec<Value> = APPROVALS
        .iter()
        .filter(|(mode, ..)| allowed(*mode))
        .map(|(mode, name, kind)| json!({"optionId": mode.to_string(), "name": name, "kind": kind}))
        .collect();
    options.push(
        json!({"optionId": KEEP_PLANNING, "name": "No, keep planning",
        "kind": "reject_once"}),
    );
    json!({
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": proposed.call_id,
            "title": "Approve the plan?",
            "content": [{"type": "content", "content": {"type": "text", "text": proposed.plan}}],
        },
        "options": options,
    })
}

/// The mode the editor's answer approves the plan with; `None` to keep planning (a no, a
/// cancelled request, no answer, an option tern did not offer).
pub fn approved(answer: Option<Result<Value, Value>>, offered: &Value) -> Option<PermissionMode> {
    let Some(Ok(result)) = answer else {
        return None;
    };
    let outcome = &result["outcome"];
    if outcome["outcome"] != "selected" {
        return None;
    }
    let id = outcome["optionId"].as_str()?;
    let was_offered = offered["options"]
        .as_array()
        .is_some_and(|o| o.iter().any(|o| o["optionId"] == id));
    APPROVALS
        .iter()
        .map(|(mode, ..)| *mode)
        .find(|mode| was_offered && mode.to_string() == id)
}

/// Asks the editor to approve `proposed` (see the module doc); the approved mode, if any.
pub async fn ask(
    out: &Outbox,
    session_id: &str,
    proposed: &Proposed,
    allowed: &(dyn Fn(PermissionMode) -> bool + Sync),
) -> Option<PermissionMode> {
    // Under a ceiling that allows neither (a parent run's `read-only`), there is nothing to ask.
    if !APPROVALS.iter().any(|(mode, ..)| allowed(*mode)) {
        return None;
    }
    let params = question(session_id, proposed, allowed);
    let answer = out
        .request("session/request_permission", params.clone())
        .await;
    approved(answer, &params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposed() -> Proposed {
        Proposed {
            call_id: "p1".into(),
            plan: "1. do it".into(),
        }
    }

    fn selected(id: &str) -> Option<Result<Value, Value>> {
        Some(Ok(
            json!({"outcome": {"outcome": "selected", "optionId": id}}),
        ))
    }

    #[test]
    fn a_yes_names_the_mode_and_anything_else_keeps_planning() {
        let q = question("s", &proposed(), &|_| true);
        let ids: Vec<&str> = q["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["accept-edits", "default", "plan"]);
        assert_eq!(q["toolCall"]["toolCallId"], "p1");
        assert_eq!(
            approved(selected("accept-edits"), &q),
            Some(PermissionMode::AcceptEdits)
        );
        assert_eq!(
            approved(selected("default"), &q),
            Some(PermissionMode::Default)
        );
        for no in [
            selected("plan"),
            selected("yolo"),
            None,
            Some(Err(json!({"code": -32603}))),
            Some(Ok(json!({"outcome": {"outcome": "cancelled"}}))),
        ] {
            assert_eq!(approved(no, &q), None);
        }
    }

    #[test]
    fn a_mode_past_the_ceiling_is_neither_offered_nor_taken() {
        let q = question("s", &proposed(), &|m| m != PermissionMode::AcceptEdits);
        assert_eq!(q["options"].as_array().unwrap().len(), 2);
        assert_eq!(approved(selected("accept-edits"), &q), None);
        assert_eq!(
            approved(selected("default"), &q),
            Some(PermissionMode::Default)
        );
    }
}
