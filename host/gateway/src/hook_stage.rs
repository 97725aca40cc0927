//! The hook stages of a tool call: `PreToolUse` between the rules and the approval, and
//! `PostToolUse` after a successful dispatch (issue 19, item 1). A hook can make the verdict
//! stricter, answer an ask for the person (Claude Code's `allow`), or rewrite the arguments —
//! which are validated and judged by the rules again, so a rewrite cannot reach a call the
//! rules deny.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tern_config::HookEvent;
use tern_mcp::ToolEntry;
use tern_protocol::{ToolCall, ToolResult};

use crate::{
    call::{CallContext, CallMeta},
    gateway::{Gateway, Trace},
    hooks::{HookInput, Hooks, Permission},
    permission::Verdict,
    settings::ToolPolicy,
};

/// The rule a hook's decision is recorded under.
const HOOK_RULE: &str = "hook:PreToolUse";

impl Gateway {
    /// The hooks to run for `event` on a call of `tool`, when any matches.
    pub(crate) fn hooks_for(&self, event: HookEvent, tool: &str) -> Option<Arc<Hooks>> {
        self.hooks
            .as_ref()
            .filter(|h| h.wants(event, Some(tool)))
            .cloned()
    }

    /// Runs the `PreToolUse` hooks on a call the rules did not deny and returns the verdict
    /// that stands. `args` become the hook's `updatedInput` when it gives one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn pre_tool_use(
        &self,
        hooks: &Hooks,
        call: &ToolCall,
        entry: &ToolEntry,
        policy: &ToolPolicy,
        args: &mut Map<String, Value>,
        verdict: Verdict,
        ctx: &CallContext,
        trace: &mut Trace,
    ) -> Result<Verdict, Box<ToolResult>> {
        let mut fields = Map::new();
        fields.insert("tool_input".into(), Value::Object(args.clone()));
        fields.insert("tool_use_id".into(), json!(call.id));
        let effect = hooks
            .run(
                HookEvent::PreToolUse,
                HookInput {
                    session_id: ctx.session_id.clone(),
                    tool: Some(entry.name.clone()),
                    fields,
                },
            )
            .await;
        trace.context.extend(effect.context);
        if let Some(reason) = &effect.stop {
            // `continue: false`: not this call only — the run stops after it.
            trace.stop = Some(format!("a PreToolUse hook stopped the run: {reason}"));
        }
        if let Some(reason) = effect.block.or(effect.stop) {
            return Ok(Verdict::Deny {
                rule: HOOK_RULE.into(),
                reason: format!("a PreToolUse hook blocked it: {reason}"),
            });
        }
        let mut verdict = verdict;
        if let Some(updated) = effect.updated_input {
            *args = self.validators.validate(
                &call.id,
                &entry.name,
                &entry.def.input_schema,
                &updated,
            )?;
            verdict = self.verdict(&self.pending(call, entry, args, policy));
            if matches!(verdict, Verdict::Deny { .. }) {
                return Ok(verdict);
            }
        }
        let reason = effect
            .permission_reason
            .unwrap_or_else(|| "a PreToolUse hook asked for approval".into());
        Ok(match (effect.permission, verdict) {
            // Claude Code's `allow` answers the prompt the rules would have shown.
            // Unless the managed policy's rule asks: that prompt is the administrator's.
            (Some(Permission::Allow), Verdict::Ask { rule, .. }) if !self.managed_rule(&rule) => {
                Verdict::Allow {
                    rule: HOOK_RULE.into(),
                }
            }
            (Some(Permission::Ask), Verdict::Allow { .. }) => Verdict::Ask {
                rule: HOOK_RULE.into(),
                reasons: vec![reason],
            },
            (Some(Permission::Ask), Verdict::Ask { rule, mut reasons }) => {
                reasons.push(reason);
                Verdict::Ask { rule, reasons }
            }
            (_, verdict) => verdict,
        })
    }

    /// Whether `origin` (a rule's `file:line`) is in the managed policy.
    fn managed_rule(&self, origin: &str) -> bool {
        self.settings.managed_policy.as_ref().is_some_and(|file| {
            origin
                .strip_prefix(file.to_string_lossy().as_ref())
                .is_some_and(|rest| rest.starts_with(':'))
        })
    }

    /// Runs the `PostToolUse` hooks on a successful result; returns the text to append to it
    /// for the model (a hook's block reason or `additionalContext`), if any. A hook's
    /// `continue: false` goes to `meta.stop`: the run stops after this call (Claude Code:
    /// "`continue: false` takes precedence over any `decision: block`").
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn post_tool_use(
        &self,
        hooks: &Hooks,
        call: &ToolCall,
        entry: &ToolEntry,
        args: Map<String, Value>,
        result: &ToolResult,
        meta: &mut CallMeta,
        ctx: &CallContext,
    ) -> Option<String> {
        let mut fields = Map::new();
        fields.insert("tool_input".into(), Value::Object(args));
        fields.insert(
            "tool_response".into(),
            meta.structured
                .clone()
                .unwrap_or_else(|| json!(result.content)),
        );
        fields.insert("tool_use_id".into(), json!(call.id));
        let effect = hooks
            .run(
                HookEvent::PostToolUse,
                HookInput {
                    session_id: ctx.session_id.clone(),
                    tool: Some(entry.name.clone()),
                    fields,
                },
            )
            .await;
        if let Some(reason) = &effect.stop {
            meta.stop = Some(format!("a PostToolUse hook stopped the run: {reason}"));
        }
        let mut text = String::new();
        for line in effect.block.into_iter().chain(effect.context) {
            text.push_str(&format!(
                "\n\n[PostToolUse hook] {}",
                self.redactor.redact(&line)
            ));
        }
        (!text.is_empty()).then_some(text)
    }

    /// Tells the `Notification` hooks that the person is being asked (they run beside the
    /// prompt: a hook that sends a desktop notification must not hold it up).
    pub(crate) fn notify_ask(&self, tool: &str, ctx: &CallContext) {
        let Some(hooks) = self
            .hooks
            .as_ref()
            .filter(|h| h.wants(HookEvent::Notification, None))
            .cloned()
        else {
            return;
        };
        let mut fields = Map::new();
        fields.insert(
            "message".into(),
            json!(format!("tern needs your permission to use {tool}")),
        );
        let input = HookInput {
            session_id: ctx.session_id.clone(),
            tool: None,
            fields,
        };
        tokio::spawn(async move {
            hooks.run(HookEvent::Notification, input).await;
        });
    }
}
