//! What a hook said, read the way Claude Code reads it: exit 0 continues (its stdout is context
//! for `UserPromptSubmit` and `SessionStart`, and may be a JSON answer), exit 2 blocks with its
//! stderr as the reason, anything else is a failure that does not block — unless the hook is
//! `fail_closed`. See <https://docs.claude.com/en/docs/claude-code/hooks> ("Hook output").

use serde::Deserialize;
use serde_json::Value;
use tern_config::HookEvent;

use super::process::{Exit, Finished};

/// A `PreToolUse` hook's say on the permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

impl Permission {
    pub fn name(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// What one hook (or every hook of an event, combined) asks of tern.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effect {
    /// Block what the event is about (the tool call, the prompt, the stop), with this reason
    /// for the model (or the person, for a prompt).
    pub block: Option<String>,
    /// `PreToolUse`: allow (skip the prompt), ask, or deny; deny also sets `block`.
    pub permission: Option<Permission>,
    /// Why, for a permission.
    pub permission_reason: Option<String>,
    /// `PreToolUse`: the arguments to call the tool with instead.
    pub updated_input: Option<Value>,
    /// Text for the model's context (`additionalContext`, or stdout where Claude Code adds it).
    pub context: Vec<String>,
    /// `continue: false`: the run stops, with this reason.
    pub stop: Option<String>,
    /// For the person (a failure's stderr, `systemMessage`).
    pub messages: Vec<String>,
    /// A failure: the hook exited with another code, timed out or could not start.
    pub failed: bool,
}

impl Effect {
    /// Lays `other` (a later hook of the same event) over `self`: blocks and contexts add up,
    /// the strictest permission wins, the last rewrite of the input wins.
    pub fn combine(&mut self, other: Effect) {
        self.block = match (self.block.take(), other.block) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        };
        if other.permission > self.permission {
            self.permission = other.permission;
            self.permission_reason = other.permission_reason;
        }
        if other.updated_input.is_some() {
            self.updated_input = other.updated_input;
        }
        self.context.extend(other.context);
        self.stop = self.stop.take().or(other.stop);
        self.messages.extend(other.messages);
        self.failed |= other.failed;
    }

    /// The word for the event and audit line.
    pub fn decision(&self) -> &'static str {
        if self.stop.is_some() {
            "stop"
        } else if self.block.is_some() {
            "block"
        } else if let Some(p) = self.permission {
            p.name()
        } else if self.failed {
            "error"
        } else {
            "continue"
        }
    }
}

/// The JSON a hook may print on stdout (exit 0), every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply {
    #[serde(rename = "continue")]
    cont: Option<bool>,
    stop_reason: Option<String>,
    system_message: Option<String>,
    /// Older spelling: `approve` / `block`.
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

/// Reads what `finished` said about `event`; `fail_closed` turns a failure into a block.
pub fn interpret(event: HookEvent, finished: &Finished, fail_closed: bool) -> Effect {
    let mut effect = Effect::default();
    let stderr = finished.stderr.trim();
    match &finished.exit {
        Exit::Code(0) => read_stdout(event, finished.stdout.trim(), &mut effect),
        Exit::Code(2) => {
            let reason = if stderr.is_empty() {
                format!("blocked by a {event} hook (exit 2)")
            } else {
                stderr.to_string()
            };
            match event {
                HookEvent::PreToolUse => {
                    effect.permission = Some(Permission::Deny);
                    effect.block = Some(reason);
                }
                HookEvent::PostToolUse
                | HookEvent::UserPromptSubmit
                | HookEvent::Stop
                | HookEvent::SubagentStop => effect.block = Some(reason),
                // Nothing to block: the person sees it.
                HookEvent::SessionStart
                | HookEvent::SessionEnd
                | HookEvent::PreCompact
                | HookEvent::Notification => effect.messages.push(reason),
            }
        }
        other => {
            effect.failed = true;
            let what = match other {
                Exit::Code(code) => format!("exited with {code}"),
                Exit::Signal => "was killed by a signal".to_string(),
                Exit::TimedOut => format!(
                    "timed out after {:.1} s and was killed",
                    finished.duration.as_secs_f64()
                ),
                Exit::SpawnFailed(e) => format!("could not start: {e}"),
            };
            let mut message = format!("{event} hook {what}");
            if !stderr.is_empty() {
                message.push_str(&format!(": {stderr}"));
            }
            if fail_closed && blockable(event) {
                effect.block = Some(format!("{message} (the hook is fail_closed)"));
                if event == HookEvent::PreToolUse {
                    effect.permission = Some(Permission::Deny);
                }
            }
            effect.messages.push(message);
        }
    }
    effect
}

/// The events whose subject a hook can stop.
fn blockable(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
    )
}

fn read_stdout(event: HookEvent, stdout: &str, effect: &mut Effect) {
    let reply = if stdout.starts_with('{') {
        serde_json::from_str::<Reply>(stdout).ok()
    } else {
        None
    };
    let Some(reply) = reply else {
        // Plain text: context where Claude Code adds it, otherwise only shown.
        if !stdout.is_empty() {
            match event {
                HookEvent::UserPromptSubmit | HookEvent::SessionStart => {
                    effect.context.push(stdout.to_string())
                }
                _ => effect.messages.push(stdout.to_string()),
            }
        }
        return;
    };
    if reply.cont == Some(false) {
        effect.stop = Some(
            reply
                .stop_reason
                .clone()
                .unwrap_or_else(|| format!("stopped by a {event} hook")),
        );
    }
    effect.messages.extend(reply.system_message);
    let specific = reply.hook_specific_output.unwrap_or_default();
    effect.context.extend(specific.additional_context);
    match event {
        HookEvent::PreToolUse => {
            let decision =
                specific
                    .permission_decision
                    .as_deref()
                    .or(match reply.decision.as_deref() {
                        Some("approve") => Some("allow"),
                        Some("block") => Some("deny"),
                        _ => None,
                    });
            let reason = specific.permission_decision_reason.or(reply.reason.clone());
            effect.permission = match decision {
                Some("allow") => Some(Permission::Allow),
                Some("ask") => Some(Permission::Ask),
                Some("deny") => Some(Permission::Deny),
                _ => None,
            };
            if effect.permission == Some(Permission::Deny) {
                effect.block = Some(
                    reason
                        .clone()
                        .unwrap_or_else(|| "denied by a PreToolUse hook".into()),
                );
            }
            effect.permission_reason = reason;
            effect.updated_input = specific.updated_input.filter(Value::is_object);
        }
        _ => {
            if reply.decision.as_deref() == Some("block") && blockable(event) {
                effect.block = Some(
                    reply
                        .reason
                        .unwrap_or_else(|| format!("blocked by a {event} hook")),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn done(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            exit: Exit::Code(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::from_millis(3),
        }
    }

    #[test]
    fn exit_two_blocks_with_stderr_and_other_codes_only_fail() {
        let e = interpret(HookEvent::PreToolUse, &done(2, "", "no rm\n"), false);
        assert_eq!(e.block.as_deref(), Some("no rm"));
        assert_eq!(e.permission, Some(Permission::Deny));
        let e = interpret(HookEvent::PreToolUse, &done(1, "", "oops"), false);
        assert!(e.block.is_none() && e.failed, "{e:?}");
        let e = interpret(HookEvent::PreToolUse, &done(1, "", "oops"), true);
        assert!(e.block.is_some(), "fail_closed blocks: {e:?}");
        let e = interpret(HookEvent::SessionEnd, &done(2, "", "x"), false);
        assert!(e.block.is_none());
    }

    #[test]
    fn json_answers_are_read_per_event() {
        let out = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls"}}}"#;
        let e = interpret(HookEvent::PreToolUse, &done(0, out, ""), false);
        assert_eq!(e.permission, Some(Permission::Allow));
        assert_eq!(e.updated_input, Some(serde_json::json!({"command": "ls"})));
        let out = r#"{"decision":"block","reason":"tests fail"}"#;
        let e = interpret(HookEvent::Stop, &done(0, out, ""), false);
        assert_eq!(e.block.as_deref(), Some("tests fail"));
        let out = r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint ok"}}"#;
        let e = interpret(HookEvent::PostToolUse, &done(0, out, ""), false);
        assert_eq!(e.context, ["lint ok"]);
        let e = interpret(
            HookEvent::UserPromptSubmit,
            &done(0, "today is Monday", ""),
            false,
        );
        assert_eq!(e.context, ["today is Monday"]);
        let e = interpret(
            HookEvent::Stop,
            &done(0, r#"{"continue":false,"stopReason":"enough"}"#, ""),
            false,
        );
        assert_eq!(e.stop.as_deref(), Some("enough"));
    }

    #[test]
    fn combining_keeps_the_strictest() {
        let mut a = Effect {
            permission: Some(Permission::Allow),
            ..Effect::default()
        };
        a.combine(Effect {
            permission: Some(Permission::Deny),
            block: Some("no".into()),
            ..Effect::default()
        });
        a.combine(Effect {
            permission: Some(Permission::Ask),
            ..Effect::default()
        });
        assert_eq!(a.permission, Some(Permission::Deny));
        assert_eq!(a.decision(), "block");
    }
}
