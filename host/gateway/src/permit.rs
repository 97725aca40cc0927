//! Stage 3 of the gateway, the permission: a call's facts (its shell command analysed), the
//! verdict of the profile, a loaded skill's narrowing, the rules, the annotations and the mode,
//! then asking when the verdict is *ask*, and the `permission_decided` event.

use serde_json::{Map, Value};
use tern_mcp::ToolEntry;
use tern_protocol::{Decision, ErrorKind, Event, ToolCall, ToolResult};

use crate::{
    call::CallContext,
    gateway::{Gateway, Pending, Trace},
    permission::{ToolFacts, Verdict, decide},
    settings::ToolPolicy,
    shell::analyze,
};

impl Gateway {
    /// A call whose permission is to be decided, with its shell command analysed.
    pub(crate) fn pending<'a>(
        &self,
        call: &'a ToolCall,
        entry: &'a ToolEntry,
        args: &'a Map<String, Value>,
        policy: &'a ToolPolicy,
    ) -> Pending<'a> {
        let shell = policy
            .command_arg
            .as_deref()
            .and_then(|arg| args.get(arg))
            .and_then(Value::as_str)
            .map(|line| analyze(line, &self.shell_scope(args)));
        Pending {
            call,
            entry,
            args,
            policy,
            shell,
        }
    }

    /// What the profile, the rules, the annotations and the mode say about a call.
    pub(crate) fn verdict(&self, p: &Pending<'_>) -> Verdict {
        if !self.may_call(&p.entry.name) {
            Verdict::Deny {
                rule: "profile".into(),
                reason: format!(
                    "`{}` is not among the tools this agent's profile may use",
                    p.entry.name
                ),
            }
        } else if let Some(narrowed) = self.skill_verdict(p) {
            narrowed
        } else {
            let session = self.extra_allows();
            let tool = ToolFacts {
                annotations: &p.entry.def.annotations,
                trusted: p.policy.trusted,
                is_edit: p.policy.edits_files,
                plannable: p.policy.plannable(p.entry),
                plan_server: p.policy.builtin == Some(tern_config::Builtin::Plan),
                mode: self.mode(),
            };
            let facts = p.facts(self);
            match decide(&facts, &tool, &self.rules, &session) {
                // Refused before asking when the server's confinement would refuse it anyway.
                Verdict::Ask { rule, reasons } => match self
                    .settings
                    .servers
                    .get(&p.entry.server)
                    .and_then(|s| crate::confine::fs_roots(s, &self.settings.scope))
                    .and_then(|roots| crate::confine::refusal(&facts, &roots))
                {
                    Some(reason) => Verdict::Deny {
                        rule: "confinement:fs-roots".into(),
                        reason,
                    },
                    None => Verdict::Ask { rule, reasons },
                },
                verdict => verdict,
            }
        }
    }

    /// Stage 3: decides, asks when it must, and records the outcome.
    pub(crate) async fn permit(
        &self,
        p: &Pending<'_>,
        ctx: &CallContext,
        trace: &mut Trace,
        verdict: Verdict,
    ) -> Result<(), Box<ToolResult>> {
        let (decision, rule, asked, reason) = match verdict {
            Verdict::Allow { rule } => (Decision::Allow, rule, false, None),
            Verdict::Deny { rule, reason } => (Decision::Deny, rule, false, Some(reason)),
            Verdict::Ask { rule, reasons } => {
                if self.approver.asks_someone() {
                    self.notify_ask(&p.entry.name, ctx);
                }
                let answer = self.ask(p, ctx, &rule, reasons).await;
                match answer {
                    Ok(rule) => (Decision::Allow, rule, true, None),
                    Err((rule, reason)) if rule == "cancelled" => {
                        trace.decision = Some(Decision::Deny);
                        trace.rule = Some(rule);
                        return Err(Box::new(ToolResult::failed(
                            &p.call.id,
                            ErrorKind::Cancelled,
                            reason,
                        )));
                    }
                    Err((rule, reason)) => (Decision::Deny, rule, true, Some(reason)),
                }
            }
        };
        let reason = reason.map(|r| self.redactor.redact(&r));
        trace.decision = Some(decision);
        trace.rule = Some(rule.clone());
        (self.events)(Event::PermissionDecided {
            call_id: self.redactor.redact(&p.call.id),
            tool: p.entry.name.clone(),
            server: p.entry.server.clone(),
            decision,
            rule: rule.clone(),
            asked,
            reason: reason.clone(),
        });
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(Box::new(ToolResult::failed(
                &p.call.id,
                ErrorKind::Denied,
                format!(
                    "permission denied for `{}`: {}",
                    p.entry.name,
                    reason.unwrap_or_else(|| "denied".into())
                ),
            ))),
        }
    }
}
