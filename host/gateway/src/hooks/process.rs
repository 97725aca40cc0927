//! Running one hook command: `sh -c COMMAND` in its own process group, the event's JSON on
//! stdin, stdout and stderr collected (bounded), the whole group killed at the timeout — a hook
//! that forks a child and hangs must not outlive its budget.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// What a hook process is allowed to print, per stream: more is cut.
const MAX_OUTPUT: usize = 256 * 1024;

/// How long to wait for the pipes to close once the hook has exited: a background child of
/// the hook holding them open must not hold the run.
const PIPE_GRACE: Duration = Duration::from_millis(300);

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal,
    /// It ran past its timeout and its process group was killed.
    TimedOut,
    /// It could not be started.
    SpawnFailed(String),
}

/// One finished hook process.
#[derive(Debug, Clone)]
pub struct Finished {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

/// Runs `command` with `input` on stdin in `cwd` (and `env` added to the environment), killed
/// after `timeout`.
pub async fn run(
    command: &str,
    env: &[(String, String)],
    input: &[u8],
    cwd: &Path,
    timeout: Duration,
) -> Finished {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        // Claude Code's hooks find the project through this variable; tern's name too.
        .env("CLAUDE_PROJECT_DIR", cwd)
        .env("TERN_PROJECT_DIR", cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Finished {
                exit: Exit::SpawnFailed(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
                duration: started.elapsed(),
            };
        }
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw)
        .filter(|pid| *pid != rustix::process::Pid::INIT);
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that never reads its stdin must not block us: write from a task, ignore EPIPE.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = child.stdout.take().map(|s| tokio::spawn(read_bounded(s)));
    let stderr = child.stderr.take().map(|s| tokio::spawn(read_bounded(s)));
    let exit = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => match status.code() {
            Some(code) => Exit::Code(code),
            None => Exit::Signal,
        },
        Ok(Err(e)) => Exit::SpawnFailed(e.to_string()),
        Err(_) => {
            if let Some(pgid) = group {
                let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            }
            let _ = child.kill().await;
            Exit::TimedOut
        }
    };
    let collect = |task: Option<tokio::task::JoinHandle<String>>| async move {
        let Some(task) = task else {
            return String::new();
        };
        let abort = task.abort_handle();
        match tokio::time::timeout(PIPE_GRACE, task).await {
            Ok(Ok(text)) => text,
            _ => {
                abort.abort();
                String::new()
            }
        }
    };
    let (stdout, stderr) = tokio::join!(collect(stdout), collect(stderr));
    Finished {
        exit,
        stdout,
        stderr,
        duration: started.elapsed(),
    }
}

async fn read_bounded(mut stream: impl AsyncRead + Unpin) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}
