//! Running one command under supervision: spawn, capture, time out, cancel, kill.
//!
//! The rules come from issue 2, item 4:
//! - the command gets its own session (`setsid`), hence its own process group,
//!   so one `kill(-pgid)` reaches everything it started (except what deliberately
//!   starts yet another session, e.g. `setsid sleep 1000 &`);
//! - stdout and stderr share one pipe, so output keeps its arrival order;
//! - output is read *while* the command runs into a bounded [`HeadTail`]: a
//!   flood such as `yes` neither blocks the writer nor grows our memory;
//! - on timeout or cancellation the group gets SIGTERM, then SIGKILL after
//!   [`TERM_GRACE`];
//! - a background child that keeps the pipe open cannot hold the call hostage:
//!   we stop reading [`DRAIN_AFTER_EXIT`] after the main process has exited.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use tern_tool_common::{Capped, HeadTail};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::decode::Utf8Stream;
use crate::group::{Group, KillOnDrop, group_has_live_members, signal_group};
use crate::live::LiveTail;
use tern_sandbox::Session;

/// Time between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// How long to keep reading after the main process has exited. Output already
/// in the pipe is read in microseconds; anything slower comes from a background
/// process that we do not wait for.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);

/// How often a progress callback fires.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest time between two live tails ([`Report::Tail`]): at most ten a second, however
/// fast the output comes.
pub const TAIL_INTERVAL: Duration = Duration::from_millis(100);

/// Size of one read from the output pipe: a quarter of the enlarged pipe
/// buffer, so a flood is taken in few, large reads.
const READ_CHUNK: usize = 256 * 1024;

/// Capacity asked for the output pipe (Linux's default `pipe-max-size`): a
/// writer flooding it wakes us four times less often than with 64 KiB.
const PIPE_CAPACITY: usize = 1024 * 1024;

/// What to run and under which limits.
#[derive(Debug)]
pub struct Invocation<'a> {
    /// `bash` or `sh`, run as `SHELL -c COMMAND`.
    pub shell: &'a Path,
    pub command: &'a str,
    pub cwd: &'a Path,
    /// The complete environment of the child (nothing is inherited).
    pub env: &'a [(OsString, OsString)],
    pub timeout: Duration,
    pub max_output_chars: usize,
    /// Where a copy of the raw output goes as it is read, when anywhere (the editor-terminal
    /// runner: its own stdout, which the editor shows).
    pub echo: Option<Echo<'a>>,
    /// The sandbox the command runs under (also what kills its leftovers).
    pub sandbox: &'a tern_sandbox::Sandbox,
    /// Paths the command sees as empty (the host's file deny rules).
    pub hidden: &'a [std::path::PathBuf],
    /// Lines of live tail wanted ([`Report::Tail`]); 0 for none.
    pub tail_lines: usize,
}

/// What the progress callback of [`run`] is told.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// Every [`PROGRESS_INTERVAL`]: how long it has run and how much it wrote.
    Tick { elapsed: Duration, bytes: u64 },
    /// The output's last lines changed (when asked for with [`Invocation::tail_lines`]); at
    /// most once per [`TAIL_INTERVAL`].
    Tail {
        elapsed: Duration,
        lines: Vec<String>,
    },
}

/// A writer that gets every byte of output as it is read, unchanged. A write that fails (the
/// reader went away) stops the echo; the capture goes on.
pub struct Echo<'a>(pub &'a mut (dyn std::io::Write + Send));

impl std::fmt::Debug for Echo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Echo")
    }
}

/// Why the supervision loop stopped the command, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The command ended on its own.
    Finished,
    /// The timeout expired and the group was signalled.
    TimedOut,
    /// The caller cancelled and the group was signalled.
    Cancelled,
}

/// How the main process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Normal exit with this code.
    Exited(i32),
    /// Terminated by this signal number.
    Signaled(i32),
    /// Never observed (the process could not be waited for).
    Unknown,
}

impl From<ExitStatus> for Ending {
    fn from(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(signal)) => Ending::Signaled(signal),
            (None, None) => Ending::Unknown,
        }
    }
}

/// Everything the caller reports about a finished run.
#[derive(Debug)]
pub struct Outcome {
    pub ending: Ending,
    pub stop: Stop,
    /// SIGKILL had to be sent because SIGTERM was not enough within the grace.
    pub escalated_to_kill: bool,
    pub duration: Duration,
    /// The captured output (head + tail, with a marker when cut).
    pub output: Capped,
    /// Raw bytes read from the pipe.
    pub bytes_read: u64,
    /// We stopped reading while some process still held the pipe open.
    pub output_detached: bool,
}

/// A command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot create the output pipe: {0}")]
    Pipe(std::io::Error),
    #[error("{0}")]
    Sandbox(tern_sandbox::SandboxError),
    #[error("cannot start `{shell}`: {source}")]
    Spawn {
        shell: String,
        source: std::io::Error,
    },
}

/// Runs `inv` to completion, timeout or cancellation.
///
/// `on_progress` is told a [`Report::Tick`] every [`PROGRESS_INTERVAL`] and, when the
/// invocation asks for a tail, a [`Report::Tail`] whenever the last lines changed (at most once
/// per [`TAIL_INTERVAL`]). If the returned future is dropped before it completes (the client
/// went away), the whole process group is killed.
pub async fn run(
    mut inv: Invocation<'_>,
    cancel: &CancellationToken,
    mut on_progress: Option<&mut (dyn FnMut(Report) + Send)>,
) -> Result<Outcome, SpawnError> {
    let start = Instant::now();
    let (mut child, mut reader) = spawn(&inv)?;
    // The sandbox's supervisor called `setsid`: its pid is the pgid.
    let supervisor = child.id();
    let group = supervisor
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw)
        .and_then(Group::new);
    let mut guard = KillOnDrop(supervisor);

    let mut capture = HeadTail::new(inv.max_output_chars);
    let mut decoder = Utf8Stream::default();
    let mut buf = vec![0u8; READ_CHUNK];
    let mut bytes_read: u64 = 0;

    let deadline = tokio::time::Instant::from_std(start + inv.timeout);
    let mut stop = Stop::Finished;
    let mut termed_at: Option<tokio::time::Instant> = None;
    let mut escalated_to_kill = false;
    let mut ending: Option<Ending> = None;
    let mut exited_at: Option<tokio::time::Instant> = None;
    let mut eof = false;
    let mut output_detached = false;
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::from_std(start) + PROGRESS_INTERVAL,
        PROGRESS_INTERVAL,
    );
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A far-future instant for disabled timers (their branch is also guarded off).
    let never = deadline + Duration::from_secs(86_400 * 365);
    // The live tail: new output schedules one, no sooner than TAIL_INTERVAL after the last.
    let tailing = inv.tail_lines > 0 && on_progress.is_some();
    let mut live = LiveTail::default();
    let mut tail_due: Option<tokio::time::Instant> = None;
    let mut tail_sent: Option<(tokio::time::Instant, Vec<String>)> = None;

    while !(eof && ending.is_some()) {
        let kill_at = termed_at.map(|t| t + TERM_GRACE);
        let drain_until = exited_at.map(|t| t + DRAIN_AFTER_EXIT);
        tokio::select! {
            _ = cancel.cancelled(), if termed_at.is_none() && ending.is_none() => {
                stop = Stop::Cancelled;
                termed_at = Some(tokio::time::Instant::now());
                signal_group(group, Signal::TERM);
            }
            _ = tokio::time::sleep_until(deadline), if termed_at.is_none() && ending.is_none() => {
                stop = Stop::TimedOut;
                termed_at = Some(tokio::time::Instant::now());
                signal_group(group, Signal::TERM);
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or(never)), if kill_at.is_some() && !escalated_to_kill => {
                escalated_to_kill = true;
                kill_everything(supervisor, group);
            }
            status = child.wait(), if ending.is_none() => {
                ending = Some(match status {
                    Ok(status) => Ending::from(status),
                    Err(e) => {
                        tracing::warn!("waiting for the command failed: {e}");
                        Ending::Unknown
                    }
                });
                exited_at = Some(tokio::time::Instant::now());
            }
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => {
                    bytes_read += n as u64;
                    decoder.push(&buf[..n], &mut capture);
                    echo(&mut inv.echo, &buf[..n]);
                    if tailing {
                        live.push(&buf[..n]);
                        let now = tokio::time::Instant::now();
                        let earliest = tail_sent.as_ref().map_or(now, |(at, _)| *at + TAIL_INTERVAL);
                        tail_due.get_or_insert(earliest.max(now));
                    }
                }
                Err(e) => {
                    tracing::warn!("reading command output failed: {e}");
                    eof = true;
                }
            },
            _ = tokio::time::sleep_until(drain_until.unwrap_or(never)), if drain_until.is_some() && !eof => {
                output_detached = true;
                break;
            }
            _ = ticker.tick(), if on_progress.is_some() => {
                if let Some(report) = on_progress.as_mut() {
                    report(Report::Tick { elapsed: start.elapsed(), bytes: bytes_read });
                }
            }
            _ = tokio::time::sleep_until(tail_due.unwrap_or(never)), if tail_due.is_some() => {
                tail_due = None;
                let lines = live.lines(inv.tail_lines);
                let now = tokio::time::Instant::now();
                if tail_sent.as_ref().is_none_or(|(_, sent)| *sent != lines)
                    && let Some(report) = on_progress.as_mut()
                {
                    report(Report::Tail { elapsed: start.elapsed(), lines: lines.clone() });
                    tail_sent = Some((now, lines));
                }
            }
        }
    }
    decoder.finish(&mut capture);

    if let Some(signalled_at) = termed_at {
        // The main process is gone, but other members of the group may ignore
        // SIGTERM: give them the rest of the grace, then SIGKILL, so a timed-out
        // or cancelled command never leaves anything of its group running.
        let kill_at = signalled_at + TERM_GRACE;
        while !escalated_to_kill && group_has_live_members(group) {
            if tokio::time::Instant::now() >= kill_at {
                escalated_to_kill = true;
                kill_everything(supervisor, group);
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    // The supervisor has exited, and with it everything the command started
    // (issue F9: `sleep 100 &` does not outlive the call).
    guard.disarm();

    Ok(Outcome {
        ending: ending.unwrap_or(Ending::Unknown),
        stop,
        escalated_to_kill,
        duration: start.elapsed(),
        output: capture.finish(),
        bytes_read,
        output_detached,
    })
}

fn spawn(
    inv: &Invocation<'_>,
) -> Result<(tokio::process::Child, tokio::net::unix::pipe::Receiver), SpawnError> {
    // One pipe for stdout and stderr keeps their relative order. `std::io::pipe`
    // creates both ends close-on-exec, so a concurrent spawn cannot inherit them.
    let (read_end, write_end) = std::io::pipe().map_err(SpawnError::Pipe)?;
    if let Err(e) = rustix::pipe::fcntl_setpipe_size(&read_end, PIPE_CAPACITY) {
        tracing::debug!("output pipe keeps its default size: {e}");
    }
    let write_end_for_stderr = write_end.try_clone().map_err(SpawnError::Pipe)?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(read_end))
        .map_err(SpawnError::Pipe)?;

    let mut cmd = tokio::process::Command::new(inv.shell);
    cmd.arg("-c")
        .arg(inv.command)
        .current_dir(inv.cwd)
        .env_clear()
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_end_for_stderr));
    inv.sandbox
        .configure_hiding(cmd.as_std_mut(), Session::New, inv.hidden)
        .map_err(SpawnError::Sandbox)?;
    let child = cmd.spawn().map_err(|source| SpawnError::Spawn {
        shell: inv.shell.display().to_string(),
        source,
    })?;
    // Dropping the command closes our copies of the write end; otherwise the
    // pipe would never report end-of-file.
    drop(cmd);
    Ok((child, reader))
}

/// Copies `bytes` to the echo, if any; drops the echo when it fails. The write blocks: a
/// terminal that reads slowly slows the command, as it would if the command wrote to it.
fn echo(echo: &mut Option<Echo<'_>>, bytes: &[u8]) {
    if let Some(Echo(out)) = echo
        && let Err(e) = out.write_all(bytes).and_then(|()| out.flush())
    {
        tracing::debug!("output echo stopped: {e}");
        *echo = None;
    }
}

/// SIGKILL for everything the command started: the supervisor's sweep
/// reaches processes that left the group (`setsid`), the group signal
/// anything left if the supervisor itself is gone.
fn kill_everything(supervisor: Option<u32>, group: Option<Group>) {
    if let Some(pid) = supervisor {
        tern_sandbox::abort(pid);
    }
    signal_group(group, Signal::KILL);
}
