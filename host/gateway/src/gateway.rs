//! The gateway: the stages in order, one result per call, one audit line per call.

use std::{
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use serde_json::{Map, Value};
use tern_config::PermissionMode;
use tern_mcp::{ServerPool, ServerState, ToolEntry, ToolTable};
use tern_protocol::{
    AuditRecord, Decision, ErrorKind, Event, EventSink, ToolCall, ToolResult, now_rfc3339,
};

use crate::{
    approver::Approver,
    audit::{AuditLog, AuditOpenError, sha256_hex},
    call::{CallContext, CallMeta, Outcome},
    cap::{Spill, cap, needs_cap, spill_path, write_spill},
    dispatch::{Dispatch, dispatch},
    permission::Verdict,
    recorders::Recorders,
    redact::Redactor,
    resolve::resolve,
    rules::{CallFacts, RuleParseError, RuleSet},
    settings::{GatewaySettings, ToolPolicy},
    shell::Analysis,
    validate::Validators,
};

/// Why a gateway could not be built.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// Rules that parse as config shapes but not as rules.
    #[error("invalid permission rules:\n{}", list(.0))]
    Rules(Vec<RuleParseError>),
    #[error(transparent)]
    Audit(#[from] AuditOpenError),
}

fn list(errors: &[RuleParseError]) -> String {
    errors
        .iter()
        .map(|e| format!("  {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The one path from the agent to any tool.
pub struct Gateway {
    pub(crate) pool: Arc<ServerPool>,
    pub(crate) settings: GatewaySettings,
    /// The permission mode now: `settings.mode` at the start, changed by [`Gateway::set_mode`]
    /// (an editor's mode picker over ACP).
    mode: RwLock<PermissionMode>,
    pub(crate) rules: RuleSet,
    /// Rules the user added with "always" during this run (also saved to the user config).
    pub(crate) session: RwLock<RuleSet>,
    table: RwLock<Arc<ToolTable>>,
    pub(crate) validators: Validators,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) events: EventSink,
    audit: Arc<AuditLog>,
    pub(crate) redactor: Arc<Redactor>,
    /// `[[hooks.EVENT]]` (the gateway runs `PreToolUse` and `PostToolUse`).
    pub(crate) hooks: Option<Arc<crate::hooks::Hooks>>,
    /// What holds for the running turn only: a custom command's allow rules, loaded skills.
    pub(crate) turn: RwLock<crate::turn_state::TurnState>,
}

/// What the stages learned, for the audit line.
#[derive(Default)]
pub(crate) struct Trace {
    pub server: String,
    pub decision: Option<Decision>,
    pub rule: Option<String>,
    /// The full result text (redacted) the audit hashes.
    pub full_text: String,
    /// A `PreToolUse` hook's `additionalContext`, shown to the model next to the result.
    pub context: Vec<String>,
    /// A hook's `continue: false` reason.
    pub stop: Option<String>,
}

/// A tool call whose permission is being decided.
pub(crate) struct Pending<'a> {
    pub call: &'a ToolCall,
    pub entry: &'a ToolEntry,
    pub args: &'a Map<String, Value>,
    pub policy: &'a ToolPolicy,
    pub shell: Option<Analysis>,
}

impl Pending<'_> {
    pub fn facts<'s>(&'s self, gw: &'s Gateway) -> CallFacts<'s> {
        CallFacts {
            name: &self.entry.name,
            args: self.args,
            command_arg: self.policy.command_arg.as_deref(),
            shell: self.shell.as_ref(),
            ws: &gw.settings.scope,
        }
    }
}

impl Gateway {
    /// Builds a gateway over a running pool, recording into `recorders`. Fails on a rule that
    /// cannot be compiled (with its `file:line`).
    pub fn new(
        pool: Arc<ServerPool>,
        settings: GatewaySettings,
        approver: Arc<dyn Approver>,
        recorders: Recorders,
    ) -> Result<Self, GatewayError> {
        let rules = RuleSet::from_permissions(&settings.permissions, &settings.scope)
            .map_err(GatewayError::Rules)?;
        let Recorders {
            events,
            redactor,
            audit,
        } = recorders;
        let (table, _) = pool.table();
        Ok(Self {
            pool,
            mode: RwLock::new(settings.mode),
            settings,
            rules,
            session: RwLock::default(),
            table: RwLock::new(Arc::new(table)),
            validators: Validators::default(),
            approver,
            events,
            audit,
            redactor,
            hooks: None,
            turn: RwLock::default(),
        })
    }

    /// The permission mode calls are decided under now.
    pub fn mode(&self) -> PermissionMode {
        self.mode.read().map_or(self.settings.mode, |m| *m)
    }

    /// Decides the next calls under `mode` (calls already past the permission stage keep their
    /// decision). The caller bounds it (a sub-agent's ceiling): the gateway takes it as given.
    pub fn set_mode(&self, mode: PermissionMode) {
        if let Ok(mut m) = self.mode.write() {
            *m = mode;
        }
    }

    /// Runs `hooks`' `PreToolUse` and `PostToolUse` hooks around every call.
    pub fn with_hooks(mut self, hooks: Option<Arc<crate::hooks::Hooks>>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Re-reads the pool's tool table (call it when the pool reports servers ready or tools
    /// changed, before offering the tools to the model) and returns it.
    pub fn refresh_table(&self) -> Arc<ToolTable> {
        let (table, _) = self.pool.table();
        let table = Arc::new(table);
        if let Ok(mut t) = self.table.write() {
            *t = table.clone();
        }
        table
    }

    /// Waits until no server is re-listing its tools after announcing a change (bounded), so the
    /// next [`Self::refresh_table`] has the change.
    pub async fn tools_settled(&self) {
        self.pool.tools_settled().await;
    }

    /// The servers still starting (their tools join the table when they are up).
    pub fn starting_servers(&self) -> Vec<String> {
        self.pool.starting()
    }

    /// The table calls are resolved against: the tools to offer the model.
    pub fn table(&self) -> Arc<ToolTable> {
        self.table
            .read()
            .map(|t| t.clone())
            .unwrap_or_else(|_| Arc::new(ToolTable::default()))
    }

    /// Appends a line to the audit log that is not a tool call's (an elicitation). Emits
    /// nothing (it is called from an event subscriber): the caller reports a failure.
    pub fn audit_line(&self, value: &serde_json::Value) -> std::io::Result<()> {
        self.audit.append_value(value, &self.redactor)
    }

    /// The redactor the gateway applies, for the host's other writers (events file, transcript).
    pub fn redactor(&self) -> Arc<Redactor> {
        self.redactor.clone()
    }

    /// Runs one tool call through every stage. Always returns exactly one result; never panics
    /// on any input; writes exactly one audit line.
    pub async fn call(&self, call: ToolCall, ctx: CallContext) -> Outcome {
        let started = Instant::now();
        let mut trace = Trace::default();
        let mut meta = CallMeta::default();
        let mut result = match self.stages(&call, &ctx, &mut trace, &mut meta).await {
            Ok(result) => result,
            Err(result) => *result,
        };
        if trace.full_text.is_empty() {
            trace.full_text = result.content.clone();
        }
        // Claude Code puts a PreToolUse hook's `additionalContext` next to the tool result.
        for line in &trace.context {
            result.content.push_str(&format!(
                "\n\n[PreToolUse hook] {}",
                self.redactor.redact(line)
            ));
        }
        meta.stop = meta.stop.take().or(trace.stop.take());
        meta.duration = started.elapsed();
        meta.decision = trace.decision;
        meta.rule = trace.rule.clone();
        self.record(&call, &ctx, &trace, &result, &meta);
        Outcome { result, meta }
    }

    async fn stages(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        trace: &mut Trace,
        meta: &mut CallMeta,
    ) -> Result<ToolResult, Box<ToolResult>> {
        // 1. Resolve. A miss re-reads the table once: a server may have become ready since.
        let mut table = self.table();
        if table.get(&call.name).is_none() {
            table = self.refresh_table();
        }
        // A tool of a server still starting (named from the line telling the model which
        // servers are coming, or from an earlier session) waits for its server, as a
        // remembered tool does; Ctrl-C ends the wait.
        if table.get(&call.name).is_none()
            && let Some((server, _)) = call.name.split_once("__")
            && self.pool.starting().iter().any(|s| s == server)
        {
            tokio::select! {
                _ = self.pool.wait_started(server) => table = self.refresh_table(),
                () = ctx.cancel.cancelled() => {}
            }
        }
        if table.get(&call.name).is_none()
            && let Some(unavailable) = self.unavailable_server(&call.id, &call.name)
        {
            return Err(unavailable);
        }
        let entry = resolve(&table, &call.id, &call.name)?;
        trace.server = entry.server.clone();

        // 2. Validate.
        let args = self.validators.validate(
            &call.id,
            &entry.name,
            &entry.def.input_schema,
            &call.arguments,
        )?;

        // 3. Permission: the rules, then the PreToolUse hooks, which may tighten the verdict
        // or rewrite the arguments (judged by the rules again) but never lift a rule's deny.
        let policy = self.settings.policy(entry);
        let mut args = args;
        let mut verdict = self.verdict(&self.pending(call, entry, &args, &policy));
        if !matches!(verdict, Verdict::Deny { .. })
            && let Some(hooks) = self.hooks_for(tern_config::HookEvent::PreToolUse, &entry.name)
        {
            verdict = self
                .pre_tool_use(&hooks, call, entry, &policy, &mut args, verdict, ctx, trace)
                .await?;
        }
        let pending = self.pending(call, entry, &args, &policy);
        self.permit(&pending, ctx, trace, verdict).await?;
        let post_hooks = self.hooks_for(tern_config::HookEvent::PostToolUse, &entry.name);
        let hook_args = post_hooks.as_ref().map(|_| args.clone());

        // 4. Dispatch.
        let limits = policy.limits;
        let how = Dispatch {
            limits,
            deny_paths: deny_paths(&policy, &self.rules, &entry.name),
        };
        let written = policy.edits_files.then(|| args.clone());
        let mut outcome = dispatch(&self.pool, &entry.server, &entry.tool, args, &how, ctx).await;
        if let (Some(args), Ok(out)) = (written, &mut outcome)
            && !out.is_error
            && let Some(more) = self.diagnostics_after_edit(&args, ctx).await
        {
            out.text.push_str(&more);
        }

        // 5. Cap (errors too: a crash report carries a stderr tail).
        let mut result = match outcome {
            Ok(out) => {
                meta.structured = out.structured.map(|s| self.redactor.redact_json(&s));
                meta.result_meta = out.raw.get("_meta").map(|m| self.redactor.redact_json(m));
                if !out.is_error {
                    self.observe_skill(&policy, meta.result_meta.as_ref());
                }
                ToolResult {
                    is_error: out.is_error,
                    images: out.images,
                    diff: out.diff.map(|d| self.redactor.redact(&d)),
                    ..ToolResult::text(call.id.clone(), self.redactor.redact(&out.text))
                }
            }
            Err((kind, message)) => ToolResult::failed(
                call.id.clone(),
                kind,
                self.redactor
                    .redact(&describe(kind, &message, limits.timeout)),
            ),
        };
        let feedback = match (&post_hooks, hook_args) {
            (Some(hooks), Some(args)) if !result.is_error => {
                self.post_tool_use(hooks, call, entry, args, &result, meta, ctx)
                    .await
            }
            _ => None,
        };
        let text = std::mem::take(&mut result.content);
        meta.original_size = text.chars().count();
        let limit = limits.max_output_chars;
        if needs_cap(&text, limit) {
            // Ids are redacted too: a file *name* is written as well.
            let path = spill_path(
                &self.settings.runs_dir,
                &self.redactor.redact(&ctx.run_id),
                &self.redactor.redact(&call.id),
            );
            let (spilled, err) = match write_spill(&path, &text) {
                Ok(()) => (Some(path), None),
                Err(e) => (None, Some(e.to_string())),
            };
            let written = spilled.as_deref().ok_or(err.as_deref().unwrap_or_default());
            // The model's file tools read inside the roots; a spill elsewhere is the person's.
            let readable = spilled
                .as_deref()
                .is_some_and(|p| self.settings.scope.in_roots(p));
            let capped = cap(&text, limit, Spill::of(written, readable));
            result.content = capped.text;
            meta.truncated = true;
            meta.spill_path = spilled;
        } else {
            result.content = text.clone();
        }
        trace.full_text = text;
        if let Some(feedback) = feedback {
            result.content.push_str(&feedback);
        }
        Ok(result)
    }

    /// When `name` belongs to a configured server that is not running, the result saying so
    /// (and why) — better than "unknown tool" for a tool the model saw or was told about.
    fn unavailable_server(&self, call_id: &str, name: &str) -> Option<Box<ToolResult>> {
        let (server, _) = name.split_once("__")?;
        let status = self
            .pool
            .statuses()
            .into_iter()
            .find(|s| s.name == server)?;
        let why = match &status.state {
            ServerState::Failed { reason } => format!("failed to start: {reason}"),
            ServerState::Starting => "is still starting; try again shortly".to_owned(),
            ServerState::Restarting { .. } => "crashed and is restarting".to_owned(),
            ServerState::Stopped => "has stopped".to_owned(),
            ServerState::Ready { .. } => return None,
        };
        Some(Box::new(ToolResult::failed(
            call_id,
            ErrorKind::ServerUnavailable,
            format!("`{name}` is not available: server `{server}` {why}"),
        )))
    }

    /// The scope a shell command runs in: the tool's `cwd` argument, when it gives one.
    pub(crate) fn shell_scope(&self, args: &Map<String, Value>) -> crate::paths::PathScope {
        let mut ws = self.settings.scope.clone();
        if let Some(cwd) = args.get("cwd").and_then(Value::as_str) {
            ws.cwd = ws.normalize(cwd);
        }
        ws
    }

    /// Whether the tool is offered to the model now: the profile allows it and the current
    /// mode offers it ([`ToolPolicy::offered_in`]; plan mode offers only read-only tools and
    /// the todo and plan servers'). The permission stage denies a call to any other.
    pub fn offers(&self, entry: &ToolEntry) -> bool {
        self.may_call(&entry.name) && self.settings.policy(entry).offered_in(self.mode(), entry)
    }

    /// Whether `name` is a tool of the built-in plan server (its successful result carries a
    /// proposed plan in `structuredContent.plan`).
    /// The command line of `call` when its tool declares a command argument
    /// (`tern/command_arg`, e.g. `shell__run`'s `command`): what the host checkpoints before.
    pub fn command_of(&self, call: &ToolCall) -> Option<String> {
        let table = self.table();
        let entry = table.get(&call.name)?;
        let arg = self.settings.policy(entry).command_arg?;
        call.arguments.get(&arg)?.as_str().map(str::to_owned)
    }

    pub fn is_plan_tool(&self, name: &str) -> bool {
        self.table()
            .get(name)
            .is_some_and(|e| self.settings.policy(e).builtin == Some(tern_config::Builtin::Plan))
    }

    /// The full name (`server__tool`) of tool `tool` of a running server of kind `builtin`: the
    /// host's own calls to a built-in server (the REPL seeding the todo list from an approved
    /// plan) find the tool by what the server is, never by the name a config gave it.
    pub fn builtin_tool(&self, builtin: tern_config::Builtin, tool: &str) -> Option<String> {
        self.table()
            .entries()
            .iter()
            .find(|e| e.tool == tool && self.settings.policy(e).builtin == Some(builtin))
            .map(|e| e.name.clone())
    }

    /// Whether this run may call `name` at all (an agent profile's tools); one outside is
    /// neither offered to the model nor let through the permission stage.
    pub fn may_call(&self, name: &str) -> bool {
        self.settings
            .tool_allow
            .as_ref()
            .is_none_or(|allow| allow.is_match(name))
    }

    /// Writes the audit line and emits `tool_call_finished`.
    fn record(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        trace: &Trace,
        result: &ToolResult,
        meta: &CallMeta,
    ) {
        let r = &self.redactor;
        let args_json = serde_json::to_vec(&call.arguments).unwrap_or_default();
        let record = AuditRecord {
            time: now_rfc3339(),
            run_id: r.redact(&ctx.run_id),
            session_id: r.redact(&ctx.session_id),
            call_id: r.redact(&call.id),
            tool: r.redact(&call.name),
            server: trace.server.clone(),
            args_sha256: sha256_hex(&args_json),
            decision: trace.decision,
            rule: trace.rule.clone(),
            duration_ms: u64::try_from(meta.duration.as_millis()).unwrap_or(u64::MAX),
            result_sha256: sha256_hex(trace.full_text.as_bytes()),
            result_bytes: trace.full_text.len(),
            is_error: result.is_error,
            error_type: result.error,
            truncated: meta.truncated,
        };
        if let Err(e) = self.audit.append(&record, r) {
            (self.events)(Event::Notice {
                message: format!(
                    "could not write the audit log {}: {e}",
                    self.audit.path().display()
                ),
            });
        }
        (self.events)(Event::Audit { record });
    }
}

/// The deny globs to send with a call of `tool`. Only a trusted server learns them: a
/// third-party server would learn what the user hides, and has no reason to be believed to
/// enforce it.
/// A tool that runs shell commands (it names its command argument) gets the globs of every
/// path rule: its commands can read any file, whatever tool the rule was written for.
fn deny_paths(policy: &ToolPolicy, rules: &RuleSet, tool: &str) -> Vec<String> {
    match (policy.trusted, &policy.command_arg) {
        (false, _) => Vec::new(),
        (true, Some(_)) => rules.deny_globs_for_shell(),
        (true, None) => rules.deny_globs_for(tool),
    }
}

/// The model-facing text of a failed dispatch.
fn describe(kind: ErrorKind, message: &str, timeout: Duration) -> String {
    match kind {
        ErrorKind::Timeout => format!(
            "the tool timed out after {:.1} s (its configured timeout) and was cancelled",
            timeout.as_secs_f64()
        ),
        ErrorKind::Cancelled => "the call was cancelled by the user".into(),
        _ => format!("the tool call failed: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use tern_config::{RuleList, ToolLimits};

    use super::*;
    use crate::{paths::PathScope, rules::Rule};

    #[test]
    fn only_trusted_servers_are_told_the_deny_globs() {
        let ws = PathScope {
            cwd: "/p".into(),
            roots: vec!["/p".into()],
            home: None,
            tern_home: "/h".into(),
        };
        let mut rules = RuleSet::default();
        let deny = Rule::compile("*(path: **/.env)", RuleList::Deny, "t:1".into(), &ws).unwrap();
        rules.push(deny);
        let policy = |trusted| ToolPolicy {
            limits: ToolLimits::default(),
            trusted,
            command_arg: None,
            edits_files: false,
            builtin: None,
        };
        assert_eq!(
            deny_paths(&policy(true), &rules, "fs__grep"),
            ["**/.[eE][nN][vV]"]
        );
        assert!(deny_paths(&policy(false), &rules, "thirdparty__grep").is_empty());
        // A rule written for the file tools also binds a shell's commands.
        let mut rules = RuleSet::default();
        let fs_only =
            Rule::compile("fs__*(path: **/.env)", RuleList::Deny, "t:2".into(), &ws).unwrap();
        rules.push(fs_only);
        assert!(deny_paths(&policy(true), &rules, "web__fetch").is_empty());
        let shell = ToolPolicy {
            command_arg: Some("command".into()),
            ..policy(true)
        };
        assert_eq!(
            deny_paths(&shell, &rules, "shell__run"),
            ["**/.[eE][nN][vV]"]
        );
    }
}
