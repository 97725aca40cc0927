//! `--editor-socket PATH`: commands shown in a terminal of the editor that drives tern over ACP
//! (issue 21, item 4).
//!
//! ACP's `terminal/create` makes the *editor* start a process. So tern-shell does not hand the
//! editor the model's command: it decides everything about the spawn exactly as it does without
//! an editor (cwd confined to the root, cleared environment, sandbox policy, hidden paths,
//! timeout, output cap), writes that to a private plan file, and asks the editor — through the
//! `tern acp` bridge on the socket — to run tern-shell's own runner on it
//! (`tern-shell --run-plan FILE`, [`runner`]). The runner spawns the command through the same
//! [`crate::exec::run`] under the same sandbox and echoes the output to the terminal; its report
//! of the outcome comes back through the plan's report file, so the tool result is built by the
//! same `render` as always (text, notes, truncation, `structuredContent`).
//!
//! Timeout: the runner enforces the call's timeout itself (the output up to then is kept); if
//! the terminal still has not exited a grace later, tern-shell asks for `terminal/kill`.
//! Cancellation: `terminal/kill` at once; the runner turns SIGTERM into a cancelled run, and a
//! SIGKILLed runner takes the sandbox (and the command) with it. Then the output is the
//! editor's (`terminal/output`, its last `outputByteLimit` bytes).
//!
//! When the editor refuses or fails `terminal/create`, the call fails with the editor's reason:
//! no silent fall back to running the command elsewhere than where the user was told it runs.

mod bridge;
mod plan;
pub mod runner;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{NotificationMetaObject, ProgressNotificationParam};
use rmcp::service::RequestContext;
use tern_tool_common::HeadTail;
use tern_tool_common::editor_terminal::{TerminalReply, TerminalRequest};
use tern_tool_common::meta::{TERMINAL, TerminalShown};

use crate::exec::{self, Ending, Invocation, Outcome, Stop};
use plan::{Plan, Report};

/// How long past the call's timeout (and the runner's own SIGTERM → SIGKILL grace) the
/// terminal may take to exit before tern-shell asks the editor to kill it.
const KILL_SLACK: Duration = Duration::from_secs(3);

/// How long after `terminal/kill` the editor may take to report the exit.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Where commands are shown: the bridge's socket and how to start this program as the runner.
#[derive(Debug, Clone)]
pub struct EditorTerminal {
    pub socket: PathBuf,
    /// This executable, then the arguments that make it tern-shell (`serve shell` for `tern`);
    /// `--run-plan FILE` follows.
    pub runner: Vec<OsString>,
    /// The sandbox layers this kernel gave tern-shell: the runner uses exactly these.
    pub support: tern_sandbox::Support,
}

/// Why a command could not be run in the editor's terminal.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("cannot reach the editor's terminal through `{socket}`: {error}")]
    Unreachable {
        socket: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot prepare the command for the editor's terminal: {0}")]
    Prepare(String),
    #[error(
        "the editor refused to run the command in its terminal ({0}); the command was not run\n\
         hint: allow terminals for tern in the editor, or turn its terminal capability off"
    )]
    Refused(String),
    #[error("the editor's terminal failed: {0}")]
    Failed(String),
    #[error("the editor bridge answered something unexpected: {0}")]
    Garbled(String),
    /// The runner did not run the command (its reason).
    #[error("{0}")]
    Runner(String),
    #[error(
        "the editor's terminal ended ({status}) without tern-shell's runner reporting the \
         command's outcome; the terminal showed:\n{output}"
    )]
    NoReport { status: String, output: String },
    #[error(
        "the editor did not report the command's exit within {} s of terminal/kill; it may still \
         be running in the editor's terminal",
        EXIT_WAIT.as_secs()
    )]
    NoExit,
}

/// Runs `inv` in the editor's terminal; the same [`Outcome`] [`exec::run`] would give.
pub async fn run(
    editor: &EditorTerminal,
    inv: Invocation<'_>,
    context: &RequestContext<RoleServer>,
) -> Result<Outcome, TerminalError> {
    let prepare = |e: std::io::Error| TerminalError::Prepare(e.to_string());
    let dir = tempfile::Builder::new()
        .prefix("tern-shell-run-")
        .tempdir()
        .map_err(prepare)?;
    let plan_path = dir.path().join("plan.json");
    let report_path = dir.path().join("report.json");
    let plan = Plan::of(&inv, &editor.support, &report_path);
    plan::write_private(&plan_path, &plan).map_err(prepare)?;
    let request = run_request(editor, &plan_path, &inv)?;

    let started = Instant::now();
    let mut conn = bridge::Connection::open(&editor.socket).await?;
    conn.send(&request).await?;

    let notes = Progress::new(context, inv.timeout);
    let backstop = tokio::time::Instant::now() + inv.timeout + exec::TERM_GRACE + KILL_SLACK;
    let never = backstop + Duration::from_secs(86_400 * 365);
    let mut stop = Stop::Finished;
    let mut killed_at: Option<tokio::time::Instant> = None;
    let mut created = false;
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + exec::PROGRESS_INTERVAL,
        exec::PROGRESS_INTERVAL,
    );
    let (exit_code, signal, output, truncated) = loop {
        let give_up = killed_at.map(|t| t + EXIT_WAIT);
        tokio::select! {
            reply = conn.next() => match reply? {
                TerminalReply::Created { terminal_id } if !created => {
                    created = true;
                    notes.shown(&terminal_id);
                }
                TerminalReply::Exited { exit_code, signal, output, truncated } if created => {
                    break (exit_code, signal, output, truncated);
                }
                TerminalReply::Error(why) if !created => return Err(TerminalError::Refused(why)),
                TerminalReply::Error(why) => return Err(TerminalError::Failed(why)),
                other => return Err(TerminalError::Garbled(format!("{other:?}"))),
            },
            _ = context.ct.cancelled(), if killed_at.is_none() => {
                stop = Stop::Cancelled;
                killed_at = Some(tokio::time::Instant::now());
                conn.send(&TerminalRequest::Kill).await?;
            }
            _ = tokio::time::sleep_until(backstop), if killed_at.is_none() => {
                stop = Stop::TimedOut;
                killed_at = Some(tokio::time::Instant::now());
                conn.send(&TerminalRequest::Kill).await?;
            }
            _ = tokio::time::sleep_until(give_up.unwrap_or(never)), if give_up.is_some() => {
                return Err(TerminalError::NoExit);
            }
            _ = ticker.tick() => notes.tick(started.elapsed(), created),
        }
    };
    match plan::read::<Report>(&report_path) {
        Ok(Report::Ran(ran)) => Ok(ran.outcome()),
        Ok(Report::Failed(why)) => Err(TerminalError::Runner(why)),
        // Killed before it could report (the editor's kill may be SIGKILL): what the terminal
        // kept is the output, as the editor reports it.
        Err(_) if killed_at.is_some() => Ok(Outcome {
            ending: ending(exit_code, signal.as_deref()),
            stop,
            escalated_to_kill: false,
            duration: started.elapsed(),
            output: editor_output(&output, truncated, inv.max_output_chars),
            bytes_read: output.len() as u64,
            output_detached: false,
        }),
        Err(_) => Err(TerminalError::NoReport {
            status: match (exit_code, signal) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("killed by {signal}"),
                (None, None) => "exit status unknown".into(),
            },
            output: editor_output(&output, truncated, 2_000).text,
        }),
    }
}

/// The `Run` request: this program as the runner of the plan at `plan`, in the command's cwd.
fn run_request(
    editor: &EditorTerminal,
    plan: &std::path::Path,
    inv: &Invocation<'_>,
) -> Result<TerminalRequest, TerminalError> {
    // ACP carries strings: a path that is not UTF-8 cannot be named to the editor.
    let text = |s: &std::ffi::OsStr| {
        s.to_str()
            .map(str::to_string)
            .ok_or_else(|| TerminalError::Prepare(format!("{} is not UTF-8", s.to_string_lossy())))
    };
    let (program, prefix) = editor
        .runner
        .split_first()
        .ok_or_else(|| TerminalError::Prepare("no runner program".into()))?;
    let mut args = prefix
        .iter()
        .map(|a| text(a))
        .collect::<Result<Vec<_>, _>>()?;
    args.push("--run-plan".into());
    args.push(text(plan.as_os_str())?);
    Ok(TerminalRequest::Run {
        command: text(program)?,
        args,
        cwd: text(inv.cwd.as_os_str())?,
        output_byte_limit: inv.max_output_chars as u64,
    })
}

/// An ACP exit status as an [`Ending`] (signal names as Node and Rust editors spell them).
fn ending(exit_code: Option<u32>, signal: Option<&str>) -> Ending {
    match (exit_code, signal) {
        (Some(code), _) => Ending::Exited(i32::try_from(code).unwrap_or(i32::MAX)),
        (None, Some(name)) => {
            let number = match name.trim_start_matches("SIG") {
                "HUP" => Some(1),
                "INT" => Some(2),
                "QUIT" => Some(3),
                "KILL" => Some(9),
                "TERM" => Some(15),
                n => n.parse().ok(),
            };
            number.map_or(Ending::Unknown, Ending::Signaled)
        }
        (None, None) => Ending::Unknown,
    }
}

/// The editor's copy of the output, capped as tern-shell caps its own; a first line says
/// when the editor had already dropped the beginning.
fn editor_output(output: &str, truncated: bool, cap: usize) -> tern_tool_common::Capped {
    let mut capture = HeadTail::new(cap);
    if truncated {
        capture.push_str("[the editor's terminal kept only the end of the output]\n");
    }
    capture.push_str(output);
    capture.finish()
}

/// The progress notifications of a call in the editor's terminal: the terminal's id once (in
/// `_meta["tern/terminal"]`, for the host to show it), then a tick a second — only for a client
/// that asked for progress.
struct Progress {
    peer: rmcp::Peer<RoleServer>,
    token: Option<rmcp::model::ProgressToken>,
    total: f64,
}

impl Progress {
    fn new(context: &RequestContext<RoleServer>, timeout: Duration) -> Self {
        Self {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token(),
            total: timeout.as_secs_f64(),
        }
    }

    fn send(&self, note: ProgressNotificationParam) {
        let peer = self.peer.clone();
        // Never let a slow client hold the call up.
        tokio::spawn(async move {
            if let Err(e) = peer.notify_progress(note).await {
                tracing::debug!("progress notification not sent: {e}");
            }
        });
    }

    fn shown(&self, terminal_id: &str) {
        let Some(token) = &self.token else { return };
        let mut note = ProgressNotificationParam::new(token.clone(), 0.0).with_total(self.total);
        let mut meta = NotificationMetaObject::new();
        meta.0.0.insert(
            TERMINAL.into(),
            serde_json::json!(TerminalShown {
                terminal_id: terminal_id.to_string()
            }),
        );
        note.meta = Some(meta);
        self.send(note);
    }

    fn tick(&self, elapsed: Duration, created: bool) {
        let Some(token) = &self.token else { return };
        if !created {
            return;
        }
        let secs = elapsed.as_secs();
        self.send(
            ProgressNotificationParam::new(token.clone(), secs as f64)
                .with_total(self.total)
                .with_message(format!("{secs} s elapsed, in the editor's terminal")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acp_exit_statuses_become_endings() {
        assert_eq!(ending(Some(3), None), Ending::Exited(3));
        assert_eq!(ending(None, Some("SIGTERM")), Ending::Signaled(15));
        assert_eq!(ending(None, Some("SIGKILL")), Ending::Signaled(9));
        assert_eq!(ending(None, Some("SIGWINCH")), Ending::Unknown);
        assert_eq!(ending(None, None), Ending::Unknown);
    }

    #[test]
    fn the_editors_output_is_capped_and_its_own_cut_said() {
        let o = editor_output("tail of it\n", true, 1_000);
        assert!(
            o.text
                .starts_with("[the editor's terminal kept only the end of the output]\n"),
            "{}",
            o.text
        );
        let o = editor_output(&"x".repeat(5_000), false, 100);
        assert!(o.truncated && o.text.len() < 400, "{}", o.text);
    }
}
