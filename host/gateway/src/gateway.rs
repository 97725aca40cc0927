//! The gateway: the stages in order, one result per call, one audit line per call.

use std::{
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use serde_json::{Map, Value};
use tern_mcp::{ServerPool, ToolEntry, ToolTable};

use crate::{
    approver::Approver,
    audit::{AuditLog, AuditOpenError, AuditRecord, rfc3339_now, sha256_hex},
    call::{CallContext, Decision, ErrorType, ToolCall, ToolResult},
    cap::{cap, needs_cap, spill_path, write_spill},
    dispatch::dispatch,
    event::{EventSink, GatewayEvent},
    permission::{ToolFacts, Verdict, decide},
    redact::Redactor,
    resolve::resolve,
    rules::{CallFacts, RuleParseError, RuleSet},
    settings::{GatewaySettings, ServerPolicy},
    shell::{Analysis, analyze},
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
    pub(crate) rules: RuleSet,
    /// Rules the user added with "always" during this run (also saved to the user config).
    pub(crate) session: RwLock<RuleSet>,
    table: RwLock<Arc<ToolTable>>,
    validators: Validators,
    pub(crate) approver: Arc<dyn Approver>,
    pub(crate) events: EventSink,
    audit: AuditLog,
    pub(crate) redactor: Arc<Redactor>,
}

/// What the stages learned, for the audit line.
#[derive(Default)]
pub(crate) struct Trace {
    pub server: String,
    pub decision: Option<Decision>,
    pub rule: Option<String>,
    /// The full result text (redacted) the audit hashes.
    pub full_text: String,
}

/// A tool call whose permission is being decided.
pub(crate) struct Pending<'a> {
    pub call: &'a ToolCall,
    pub entry: &'a ToolEntry,
    pub args: &'a Map<String, Value>,
    pub policy: &'a ServerPolicy,
    pub command_arg: Option<String>,
    pub shell: Option<Analysis>,
}

impl Pending<'_> {
    pub fn facts<'s>(&'s self, gw: &'s Gateway) -> CallFacts<'s> {
        CallFacts {
            name: &self.entry.name,
            args: self.args,
            command_arg: self.command_arg.as_deref(),
            shell: self.shell.as_ref(),
            ws: &gw.settings.workspace,
        }
    }
}

impl Gateway {
    /// Builds a gateway over a running pool. Fails on a rule that cannot be compiled (with its
    /// `file:line`) or an audit log that cannot be opened: a gateway that cannot audit must not
    /// run tools.
    pub fn new(
        pool: Arc<ServerPool>,
        settings: GatewaySettings,
        approver: Arc<dyn Approver>,
        events: EventSink,
    ) -> Result<Self, GatewayError> {
        let rules = RuleSet::from_permissions(&settings.permissions, &settings.workspace)
            .map_err(GatewayError::Rules)?;
        let audit = AuditLog::open(&settings.audit_log)?;
        let redactor = Arc::new(Redactor::new(settings.secrets.iter().cloned()));
        let (table, _) = pool.table();
        Ok(Self {
            pool,
            settings,
            rules,
            session: RwLock::default(),
            table: RwLock::new(Arc::new(table)),
            validators: Validators::default(),
            approver,
            events,
            audit,
            redactor,
        })
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

    /// The table calls are resolved against: the tools to offer the model.
    pub fn table(&self) -> Arc<ToolTable> {
        self.table
            .read()
            .map(|t| t.clone())
            .unwrap_or_else(|_| Arc::new(ToolTable::default()))
    }

    /// The redactor the gateway applies, for the host's other writers (events file, transcript).
    pub fn redactor(&self) -> Arc<Redactor> {
        self.redactor.clone()
    }

    /// Runs one tool call through every stage. Always returns exactly one result; never panics
    /// on any input; writes exactly one audit line.
    pub async fn call(&self, call: ToolCall, ctx: CallContext) -> ToolResult {
        let started = Instant::now();
        let mut trace = Trace::default();
        let mut result = match self.stages(&call, &ctx, &mut trace).await {
            Ok(result) => result,
            Err(result) => *result,
        };
        if trace.full_text.is_empty() {
            trace.full_text = result.content.clone();
        }
        result.metadata.duration = started.elapsed();
        result.metadata.decision = trace.decision;
        result.metadata.rule = trace.rule.clone();
        self.record(&call, &ctx, &trace, &result);
        result
    }

    async fn stages(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        trace: &mut Trace,
    ) -> Result<ToolResult, Box<ToolResult>> {
        // 1. Resolve. A miss re-reads the table once: a server may have become ready since.
        let mut table = self.table();
        if table.get(&call.name).is_none() {
            table = self.refresh_table();
        }
        let entry = resolve(&table, &call.call_id, &call.name)?;
        trace.server = entry.server.clone();

        // 2. Validate.
        let args = self.validators.validate(
            &call.call_id,
            &entry.name,
            &entry.def.input_schema,
            &call.arguments,
        )?;

        // 3. Permission.
        let default_policy = ServerPolicy::default();
        let policy = self
            .settings
            .servers
            .get(&entry.server)
            .unwrap_or(&default_policy);
        let command_arg = policy.command_arg(&entry.server, &entry.tool);
        let shell = command_arg
            .as_deref()
            .and_then(|arg| args.get(arg))
            .and_then(Value::as_str)
            .map(|line| analyze(line, &self.shell_workspace(&args)));
        let pending = Pending {
            call,
            entry,
            args: &args,
            policy,
            command_arg,
            shell,
        };
        self.permit(&pending, ctx, trace).await?;

        // 4. Dispatch.
        let timeout = policy.timeout(&entry.tool);
        let outcome = dispatch(&self.pool, &entry.server, &entry.tool, args, timeout, ctx).await;

        // 5. Cap (errors too: a crash report carries a stderr tail).
        let (text, is_error, error_type, structured) = match outcome {
            Ok(out) => (
                self.redactor.redact(&out.text),
                out.is_error,
                None,
                out.structured.map(|s| self.redactor.redact_json(&s)),
            ),
            Err((kind, message)) => (
                self.redactor.redact(&describe(kind, &message, timeout)),
                true,
                Some(kind),
                None,
            ),
        };
        let limit = policy
            .max_output_chars(&entry.tool)
            .unwrap_or(self.settings.max_output_chars);
        let mut result = ToolResult {
            call_id: call.call_id.clone(),
            content: String::new(),
            is_error,
            error_type,
            metadata: Default::default(),
        };
        result.metadata.structured = structured;
        result.metadata.original_size = text.chars().count();
        if needs_cap(&text, limit) {
            // Ids are redacted too: a file *name* is written as well.
            let path = spill_path(
                &self.settings.runs_dir,
                &self.redactor.redact(&ctx.run_id),
                &self.redactor.redact(&call.call_id),
            );
            let (spilled, err) = match write_spill(&path, &text) {
                Ok(()) => (Some(path), None),
                Err(e) => (None, Some(e.to_string())),
            };
            let capped = cap(&text, limit, spilled.as_deref(), err.as_deref());
            result.content = capped.text;
            result.metadata.truncated = true;
            result.metadata.spill_path = spilled;
        } else {
            result.content = text.clone();
        }
        trace.full_text = text;
        Ok(result)
    }

    /// The workspace a shell command runs in: the tool's `cwd` argument, when it gives one.
    fn shell_workspace(&self, args: &Map<String, Value>) -> crate::paths::Workspace {
        let mut ws = self.settings.workspace.clone();
        if let Some(cwd) = args.get("cwd").and_then(Value::as_str) {
            ws.cwd = ws.normalize(cwd);
        }
        ws
    }

    /// Stage 3: decides, asks when it must, and records the outcome.
    async fn permit(
        &self,
        p: &Pending<'_>,
        ctx: &CallContext,
        trace: &mut Trace,
    ) -> Result<(), Box<ToolResult>> {
        let verdict = {
            let session = self.session.read().map(|s| s.clone()).unwrap_or_default();
            let tool = ToolFacts {
                annotations: &p.entry.def.annotations,
                trusted: p.policy.trusted,
                is_edit: p.policy.is_edit(&p.entry.server, &p.entry.tool),
                mode: self.settings.mode,
            };
            decide(&p.facts(self), &tool, &self.rules, &session)
        };
        let (decision, rule, asked, reason) = match verdict {
            Verdict::Allow { rule } => (Decision::Allow, rule, false, None),
            Verdict::Deny { rule, reason } => (Decision::Deny, rule, false, Some(reason)),
            Verdict::Ask { rule, reasons } => {
                let answer = self.ask(p, ctx, &rule, reasons).await;
                match answer {
                    Ok(rule) => (Decision::Allow, rule, true, None),
                    Err((rule, reason)) if rule == "cancelled" => {
                        trace.decision = Some(Decision::Deny);
                        trace.rule = Some(rule);
                        return Err(Box::new(ToolResult::error(
                            &p.call.call_id,
                            ErrorType::Cancelled,
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
        (self.events)(GatewayEvent::PermissionDecided {
            call_id: self.redactor.redact(&p.call.call_id),
            tool: p.entry.name.clone(),
            server: p.entry.server.clone(),
            decision,
            rule: rule.clone(),
            asked,
            reason: reason.clone(),
        });
        match decision {
            Decision::Allow => Ok(()),
            Decision::Deny => Err(Box::new(ToolResult::error(
                &p.call.call_id,
                ErrorType::Denied,
                format!(
                    "permission denied for `{}`: {}",
                    p.entry.name,
                    reason.unwrap_or_else(|| "denied".into())
                ),
            ))),
        }
    }

    /// Writes the audit line and emits `tool_call_finished`.
    fn record(&self, call: &ToolCall, ctx: &CallContext, trace: &Trace, result: &ToolResult) {
        let r = &self.redactor;
        let args_json = serde_json::to_vec(&call.arguments).unwrap_or_default();
        let record = AuditRecord {
            time: rfc3339_now(),
            run_id: r.redact(&ctx.run_id),
            session_id: r.redact(&ctx.session_id),
            call_id: r.redact(&call.call_id),
            tool: r.redact(&call.name),
            server: trace.server.clone(),
            args_sha256: sha256_hex(&args_json),
            decision: trace.decision,
            rule: trace.rule.clone(),
            duration_ms: u64::try_from(result.metadata.duration.as_millis()).unwrap_or(u64::MAX),
            result_sha256: sha256_hex(trace.full_text.as_bytes()),
            result_bytes: trace.full_text.len(),
            is_error: result.is_error,
            error_type: result.error_type,
            truncated: result.metadata.truncated,
        };
        if let Err(e) = self.audit.append(&record, r) {
            (self.events)(GatewayEvent::Notice {
                message: format!(
                    "could not write the audit log {}: {e}",
                    self.audit.path().display()
                ),
            });
        }
        (self.events)(GatewayEvent::ToolCallFinished(record));
    }
}

/// The model-facing text of a failed dispatch.
fn describe(kind: ErrorType, message: &str, timeout: Option<Duration>) -> String {
    match kind {
        ErrorType::Timeout => match timeout {
            Some(t) => format!(
                "the tool timed out after {:.1} s (its configured timeout) and was cancelled",
                t.as_secs_f64()
            ),
            None => format!("the tool {message} and was cancelled"),
        },
        ErrorType::Cancelled => "the call was cancelled by the user".into(),
        _ => format!("the tool call failed: {message}"),
    }
}
