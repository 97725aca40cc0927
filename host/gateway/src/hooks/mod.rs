//! Hooks: the user's commands run at fixed points of a run, in Claude Code's protocol, so hooks
//! written for Claude Code work unchanged (issue 19, item 1).
//!
//! The gateway runs `PreToolUse` after the permission rules (a hook can deny, ask, allow a call
//! the rules would have asked about, or rewrite its arguments — never let through a call a rule
//! denies) and `PostToolUse` after a successful dispatch; the engine runs the others
//! (`UserPromptSubmit`, `Stop`, `SessionStart`, …) through the same [`Hooks`]. Every hook run is
//! an [`Event::HookRun`] and a line of kind `hook` in the audit log.

mod matcher;
pub mod output;
pub mod process;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use serde_json::{Map, Value, json};
use tern_config::{HookConfig, HookEvent, HooksSection};
use tern_protocol::{Event, EventSink, now_rfc3339};

pub use matcher::Matcher;
pub use output::{Effect, Permission};

use crate::{audit::AuditLog, recorders::Recorders, redact::Redactor};

/// The hooks to run once each: the first of every identical command (and environment), with
/// `fail_closed` if any of the copies is — the same script configured at two layers (or by
/// two plugins that resolve to the same command) runs once.
fn dedup<'a>(hooks: impl Iterator<Item = &'a HookConfig>) -> Vec<HookConfig> {
    let mut out: Vec<HookConfig> = Vec::new();
    for hook in hooks {
        match out
            .iter_mut()
            .find(|h| h.command == hook.command && h.env == hook.env)
        {
            Some(first) => first.fail_closed |= hook.fail_closed,
            None => out.push(hook.clone()),
        }
    }
    out
}

/// Aborts the hook tasks of a [`Hooks::run`] that is dropped before they end.
struct AbortOnDrop(Vec<tokio::task::AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for handle in &self.0 {
            handle.abort();
        }
    }
}

/// The configured hooks of a run, ready to run.
pub struct Hooks {
    hooks: Vec<(HookConfig, Matcher)>,
    /// Where hook commands run (`cwd` in their input).
    cwd: PathBuf,
    /// `$TERN_HOME/sessions/`: `transcript_path` is the session's file there.
    sessions_dir: PathBuf,
    /// `permission_mode` in their input.
    mode: String,
    events: EventSink,
    audit: Arc<AuditLog>,
    redactor: Arc<Redactor>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("hooks", &self.hooks.len())
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// What a hook run is about, besides the fields every hook input has.
#[derive(Debug, Clone, Default)]
pub struct HookInput {
    /// The session (`session_id` and `transcript_path` in the input).
    pub session_id: String,
    /// The tool call's `server__tool`, for the tool events (and the matcher).
    pub tool: Option<String>,
    /// The event's own fields (`tool_input`, `prompt`, `stop_hook_active`, …).
    pub fields: Map<String, Value>,
}

impl Hooks {
    /// The hooks of `section`, or `None` when there are none (a run without hooks pays nothing).
    pub fn new(
        section: &HooksSection,
        cwd: &Path,
        sessions_dir: &Path,
        mode: tern_config::PermissionMode,
        recorders: &Recorders,
    ) -> Option<Arc<Self>> {
        if section.is_empty() {
            return None;
        }
        Some(Arc::new(Self {
            hooks: section
                .hooks
                .iter()
                .map(|h| (h.clone(), Matcher::new(h.matcher.as_deref())))
                .collect(),
            cwd: cwd.to_path_buf(),
            sessions_dir: sessions_dir.to_path_buf(),
            mode: serde_json::to_value(mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "default".into()),
            events: recorders.events.clone(),
            audit: recorders.audit.clone(),
            redactor: recorders.redactor.clone(),
        }))
    }

    /// Whether any hook would run for `event` (and `tool`).
    pub fn wants(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.matching(event, tool).next().is_some()
    }

    fn matching<'a>(
        &'a self,
        event: HookEvent,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = &'a HookConfig> + 'a {
        self.hooks
            .iter()
            .filter(move |(h, m)| {
                h.event == event && (!event.matches_tools() || tool.is_none_or(|t| m.is_match(t)))
            })
            .map(|(h, _)| h)
    }

    /// Runs every hook of `event` that matches — all at once, as Claude Code does ("All
    /// matching hooks run in parallel, and identical handlers are deduplicated automatically",
    /// <https://code.claude.com/docs/en/hooks>, "Hook handler fields") — and combines what
    /// they said in config order, so the result does not depend on which finished first.
    pub async fn run(&self, event: HookEvent, input: HookInput) -> Effect {
        let mut effect = Effect::default();
        let hooks = dedup(self.matching(event, input.tool.as_deref()));
        if hooks.is_empty() {
            return effect;
        }
        let mut payload = Map::new();
        payload.insert("session_id".into(), json!(input.session_id));
        payload.insert(
            "transcript_path".into(),
            json!(
                self.sessions_dir
                    .join(format!("{}.jsonl", input.session_id))
                    .display()
                    .to_string()
            ),
        );
        payload.insert("cwd".into(), json!(self.cwd.display().to_string()));
        payload.insert("permission_mode".into(), json!(self.mode));
        payload.insert("hook_event_name".into(), json!(event.name()));
        if let Some(tool) = &input.tool {
            payload.insert("tool_name".into(), json!(tool));
        }
        payload.extend(input.fields.clone());
        let bytes: Arc<[u8]> = serde_json::to_vec(&Value::Object(payload))
            .unwrap_or_default()
            .into();
        let running: Vec<_> = hooks
            .iter()
            .map(|hook| {
                let (command, env, bytes) = (hook.command.clone(), hook.env.clone(), bytes.clone());
                let (cwd, timeout) = (self.cwd.clone(), hook.timeout);
                tokio::spawn(
                    async move { process::run(&command, &env, &bytes, &cwd, timeout).await },
                )
            })
            .collect();
        // Dropped before they finish (the call was cancelled): the tasks are aborted, which
        // drops their children, which kills them (`kill_on_drop`) — as when they ran inline.
        let _abort = AbortOnDrop(running.iter().map(|h| h.abort_handle()).collect());
        for (hook, handle) in hooks.iter().zip(running) {
            let finished = handle.await.unwrap_or_else(|e| process::Finished {
                exit: process::Exit::SpawnFailed(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
                duration: std::time::Duration::ZERO,
            });
            let one = output::interpret(event, &finished, hook.fail_closed);
            self.record(hook, &input, &finished, &one);
            effect.combine(one);
        }
        effect
    }

    /// The event and the audit line of one hook run.
    fn record(
        &self,
        hook: &HookConfig,
        input: &HookInput,
        finished: &process::Finished,
        effect: &Effect,
    ) {
        let r = &self.redactor;
        let tool = input.tool.as_deref();
        let exit_code = match finished.exit {
            process::Exit::Code(code) => Some(code),
            _ => None,
        };
        let timed_out = finished.exit == process::Exit::TimedOut;
        let duration_ms = u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX);
        let message = effect
            .stop
            .clone()
            .or_else(|| effect.block.clone())
            .or_else(|| effect.permission_reason.clone())
            .or_else(|| (!effect.messages.is_empty()).then(|| effect.messages.join("\n")))
            .map(|m| r.redact(&m));
        let line = json!({
            "time": now_rfc3339(),
            "session_id": r.redact(&input.session_id),
            "kind": "hook",
            "event": hook.event.name(),
            "source": hook.source(),
            "command": r.redact(&hook.command),
            "tool": tool,
            "decision": effect.decision(),
            "exit_code": exit_code,
            "timed_out": timed_out,
            "duration_ms": duration_ms,
        });
        if let Err(e) = self.audit.append_value(&line, r) {
            (self.events)(Event::Notice {
                message: format!(
                    "could not write a hook run to the audit log {}: {e}",
                    self.audit.path().display()
                ),
            });
        }
        (self.events)(Event::HookRun {
            event: hook.event.name().to_string(),
            source: hook.source(),
            command: r.redact(&hook.command),
            tool: tool.map(str::to_owned),
            decision: effect.decision().to_string(),
            exit_code,
            timed_out,
            duration_ms,
            message,
        });
    }
}
