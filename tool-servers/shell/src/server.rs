//! The MCP face of tern-shell: the `run` tool, its parameters and its result.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cwd::resolve_cwd;
use crate::exec::{self, Ending, Invocation, Outcome, Report, Stop};
use crate::limits::{self, Timeout, host_limits};
use crate::progress::{Notifier, tail_request};

/// The tool's `_meta`: tells a host which argument holds the shell command, so
/// it can apply command rules without recognising this server by name.
fn run_tool_meta() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::MetaObject::new();
    meta.0
        .insert(tern_tool_common::meta::COMMAND_ARG.into(), "command".into());
    meta
}

/// Settings fixed when the server starts.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Canonical root directory.
    pub root: PathBuf,
    /// `bash` when found on `PATH`, else `sh`.
    pub shell: PathBuf,
    pub timeout_default: Duration,
    pub timeout_max: Duration,
    pub max_output_chars: usize,
    /// The full environment every command starts with.
    pub env: Vec<(OsString, OsString)>,
    /// The OS sandbox every command runs under.
    pub sandbox: Arc<tern_sandbox::Sandbox>,
    /// Commands are shown in the ACP editor's terminal (`--editor-socket`).
    pub editor: Option<crate::terminal::EditorTerminal>,
}

/// Parameters of the `run` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct RunParams {
    /// The shell command line, run as `bash -c COMMAND`. Pipes, `&&`, redirections
    /// and subshells work. There is no terminal and stdin is empty, so interactive
    /// programs (editors, pagers, password prompts) cannot be used.
    pub command: String,
    /// Seconds before the command and everything it started are terminated.
    /// Defaults to the server's default (120 s unless configured); values above
    /// the server's maximum are lowered to it.
    #[serde(default)]
    pub timeout_sec: Option<u64>,
    /// Directory to run in: relative to the server's root, or absolute. It must be
    /// inside the root. Defaults to the root.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// What `run` returns as `structuredContent` (its declared `outputSchema`). It carries
/// everything the text says, the output and every bracketed line after it, because some
/// clients (Claude Code, VS Code) show the model only `structuredContent`; and the text
/// states every string in it. Failures to start are text only.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct RunOutput {
    /// The combined stdout and stderr as the text shows it (long output keeps its start
    /// and end), or `(no output)`.
    pub output: String,
    /// The exit code, when the command exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that killed it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// The timeout ended it.
    pub timed_out: bool,
    /// The call was cancelled.
    pub cancelled: bool,
    /// Output was cut from the middle.
    pub truncated: bool,
    /// Bytes of output the command wrote (before any cut).
    pub total_bytes: u64,
    /// The lines after the output, as the text has them: the exit status and duration,
    /// then timeouts, cuts and sandbox notices.
    pub notes: Vec<String>,
}

/// The shell MCP server.
#[derive(Debug, Clone)]
pub struct ShellServer {
    settings: Arc<Settings>,
    tool_router: ToolRouter<Self>,
    /// Set once the first result has said which sandbox layers are missing.
    degradation_told: Arc<AtomicBool>,
}

#[tool_router]
impl ShellServer {
    /// A server that runs commands under `settings`.
    pub fn new(settings: Settings) -> Self {
        Self {
            settings: Arc::new(settings),
            tool_router: Self::tool_router(),
            degradation_told: Arc::new(AtomicBool::new(false)),
        }
    }

    /// On the first call only: what the sandbox cannot enforce on this
    /// kernel, so the model (and the user reading along) knows once.
    fn degradation_notice(&self) -> Option<String> {
        let missing = self.settings.sandbox.degradations();
        if missing.is_empty() || self.degradation_told.swap(true, Ordering::Relaxed) {
            return None;
        }
        let lines: Vec<String> = missing.iter().map(|d| format!("[sandbox: {d}]")).collect();
        Some(lines.join("\n"))
    }

    #[tool(
        name = "run",
        description = "Run a shell command (bash -c) in the workspace and return its combined \
            stdout and stderr, in the order they were written, followed by a line with the \
            exit code. Long output keeps its beginning and end with a note of what was cut. \
            Commands run without a terminal and with stdin empty; secrets in the server's \
            environment are not passed on. The command and every process it starts are \
            terminated when the timeout expires or the call is cancelled.",
        annotations(
            title = "Run shell command",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        ),
        meta = run_tool_meta(),
        output_schema = schema_for_output::<RunOutput>()
    )]
    async fn run(
        &self,
        Parameters(params): Parameters<RunParams>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let settings = &self.settings;
        let cwd = match resolve_cwd(&settings.root, params.cwd.as_deref()) {
            Ok(cwd) => cwd,
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        let host = match host_limits(&context.meta.0.0) {
            Ok(host) => host,
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        let Timeout {
            effective: timeout,
            clamped_from: clamped,
        } = limits::timeout(
            params.timeout_sec.map(Duration::from_secs),
            &host,
            settings.timeout_default,
            settings.timeout_max,
        );

        // Progress only for a client that asked (a progress token); the live tail only for one
        // that asked for that too (`_meta["tern/output_tail"]`).
        let tail_lines = tail_request(&context.meta.0.0);
        let mut progress = context
            .meta
            .get_progress_token()
            .map(|token| Notifier::start(context.peer.clone(), token, timeout, tail_lines > 0));
        // Full access is no sandbox: there is no view to hide anything in.
        let full_access = settings.sandbox.policy().mode == tern_sandbox::Mode::FullAccess;
        let hidden = match crate::deny::denied_paths(&settings.root, &context.meta.0.0) {
            Ok(_) if full_access => Vec::new(),
            Ok(hidden) => hidden,
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        let git_guard = tern_sandbox::GitGuard::before(settings.sandbox.policy());
        let invocation = Invocation {
            shell: &settings.shell,
            command: &params.command,
            cwd: &cwd,
            env: &settings.env,
            timeout,
            max_output_chars: limits::output_budget(&host, settings.max_output_chars),
            echo: None,
            sandbox: &settings.sandbox,
            hidden: &hidden,
            tail_lines,
        };
        let mut report = progress.as_mut().map(|n| move |r: Report| n.report(r));
        let on_progress = report
            .as_mut()
            .map(|f| f as &mut (dyn FnMut(Report) + Send));
        let outcome = match &settings.editor {
            Some(editor) => crate::terminal::run(editor, invocation, &context)
                .await
                .map_err(|e| e.to_string()),
            None => exec::run(invocation, &context.ct, on_progress)
                .await
                .map_err(|e| e.to_string()),
        };
        // `.git` entries a command may not create are removed whatever became of the command.
        let removed: Vec<String> = git_guard
            .after()
            .iter()
            .map(|n| format!("[sandbox: {n}]"))
            .collect();
        let mut output = match outcome {
            Ok(outcome) => render(&outcome, timeout, clamped),
            Err(e) => {
                let mut lines = vec![e.to_string()];
                lines.extend(removed);
                return CallToolResult::error(vec![ContentBlock::text(lines.join("\n"))]);
            }
        };
        output.notes.extend(removed);
        let mut text = output.output.clone();
        text.push_str(&output.notes.join("\n"));
        let mut content = vec![ContentBlock::text(text)];
        if let Some(notice) = self.degradation_notice() {
            output.notes.extend(notice.lines().map(str::to_string));
            content.push(ContentBlock::text(notice));
        }
        let mut result = CallToolResult::success(content);
        result.structured_content = serde_json::to_value(&output).ok();
        result
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ShellServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(format!(
                "Runs shell commands with `run`. Commands start in {} and time out after {} s \
                 by default (at most {} s). {}. Background processes end with the call.",
                self.settings.root.display(),
                self.settings.timeout_default.as_secs(),
                self.settings.timeout_max.as_secs(),
                sandbox_sentence(self.settings.sandbox.policy()),
            ))
    }
}

/// What the sandbox means for a command, in words a model acts on.
fn sandbox_sentence(policy: &tern_sandbox::Policy) -> String {
    let network = match policy.network {
        tern_sandbox::Network::Off => "no network access (loopback inside the command only)",
        tern_sandbox::Network::On => "network access",
    };
    match policy.mode {
        tern_sandbox::Mode::FullAccess => "Commands run without a sandbox".to_string(),
        tern_sandbox::Mode::ReadOnly => {
            format!("Commands run in a read-only sandbox with {network}")
        }
        tern_sandbox::Mode::WorkspaceWrite => format!(
            "Commands run in a sandbox: they may write only inside the root{} and TMPDIR \
             (a private /tmp emptied after each call; {git} and .tern stay read-only), with \
             {network}",
            if policy.writable_roots.len() > 1 {
                " and the extra writable directories"
            } else {
                ""
            },
            git = match policy.git {
                tern_sandbox::GitWrites::None => ".git",
                tern_sandbox::GitWrites::Objects => {
                    ".git/config, .git/hooks and git's other control files"
                }
            }
        ),
    }
}

/// Output first, then one footer line a model can read at a glance (the text is
/// `output` followed by `notes`, one per line); the same facts, typed, for programs.
fn render(outcome: &Outcome, timeout: Duration, clamped: Option<Duration>) -> RunOutput {
    let mut text = if outcome.output.text.is_empty() {
        "(no output)\n".to_string()
    } else {
        outcome.output.text.clone()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let secs = outcome.duration.as_secs_f64();
    let status = match outcome.ending {
        Ending::Exited(code) => format!("exit code {code}"),
        Ending::Signaled(signal) => format!("killed by signal {signal} ({})", signal_name(signal)),
        Ending::Unknown => "exit status unknown".to_string(),
    };
    let mut notes = vec![match outcome.stop {
        Stop::Finished => format!("[{status} · {secs:.2} s]"),
        Stop::TimedOut => format!(
            "[timed out after {}; process group terminated{} · {status}]",
            seconds(timeout),
            if outcome.escalated_to_kill {
                " (SIGKILL needed)"
            } else {
                ""
            }
        ),
        Stop::Cancelled => {
            format!("[cancelled after {secs:.2} s; process group terminated · {status}]")
        }
    }];
    if let Some(requested) = clamped {
        notes.push(format!(
            "[timeout_sec {} is outside the allowed range; used {}]",
            requested.as_secs(),
            seconds(timeout)
        ));
    }
    if outcome.output.truncated {
        notes.push(format!(
            "[output truncated: {} of {} characters omitted from the middle]",
            outcome.output.omitted_chars, outcome.output.total_chars
        ));
    }
    if outcome.output_detached {
        notes.push(format!(
            "[a background process still holds stdout/stderr open; output after {} ms past exit is not captured]",
            exec::DRAIN_AFTER_EXIT.as_millis()
        ));
    }

    let (exit_code, signal) = match outcome.ending {
        Ending::Exited(code) => (Some(code), None),
        Ending::Signaled(signal) => (None, Some(signal)),
        Ending::Unknown => (None, None),
    };
    RunOutput {
        output: text,
        exit_code,
        signal,
        duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
        timed_out: outcome.stop == Stop::TimedOut,
        cancelled: outcome.stop == Stop::Cancelled,
        truncated: outcome.output.truncated,
        total_bytes: outcome.bytes_read,
        notes,
    }
}

/// `5 s`, or `1.5 s` when the duration is not whole seconds (host limits are in ms).
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        let millis = format!("{:.3}", d.as_secs_f64());
        format!("{} s", millis.trim_end_matches('0'))
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_with(support: &tern_sandbox::Support) -> ShellServer {
        let root = std::env::temp_dir();
        let policy = tern_sandbox::Policy::new(
            tern_sandbox::Mode::WorkspaceWrite,
            tern_sandbox::Network::Off,
            vec![root.clone()],
        );
        ShellServer::new(Settings {
            root,
            shell: PathBuf::from("/bin/sh"),
            timeout_default: Duration::from_secs(1),
            timeout_max: Duration::from_secs(1),
            max_output_chars: 100,
            env: Vec::new(),
            sandbox: Arc::new(tern_sandbox::Sandbox::new(policy, support).unwrap()),
            editor: None,
        })
    }

    #[test]
    fn a_missing_sandbox_layer_is_told_in_the_first_result_only() {
        let mut support = tern_sandbox::Support::detect();
        support.network_namespace = Err("refused by the test".into());
        let server = server_with(&support);
        let notice = server.degradation_notice().unwrap();
        assert!(
            notice.starts_with("[sandbox: network namespace unavailable (refused by the test)"),
            "{notice}"
        );
        assert_eq!(
            server.clone().degradation_notice(),
            None,
            "told once per server"
        );

        let complete = server_with(&tern_sandbox::Support::detect());
        assert_eq!(complete.degradation_notice(), None);
    }
}
