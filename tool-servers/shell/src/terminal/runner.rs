//! `tern-shell --run-plan FILE` (hidden): the process the editor starts in its terminal.
//!
//! It runs the one command its plan describes through [`crate::exec::run`] — the same spawn
//! path tern-shell uses: the command's own session and process group, stdin empty, stdout and
//! stderr on one pipe, the cleared environment, the OS sandbox with the plan's exact policy
//! and hidden paths, the timeout, the head-and-tail capture, nothing left running after it —
//! and copies the output to its own stdout as it comes, which is what the editor shows. The
//! command never gets the terminal itself (no pty, no way to type into it). Then it writes the
//! outcome to the plan's report file for tern-shell and exits with the command's status
//! (128 + N when killed by signal N).
//!
//! SIGTERM, SIGINT or SIGHUP (how editors kill a terminal's command) cancel the command like a
//! cancelled call: the group gets SIGTERM, then SIGKILL, and the report says `cancelled`. If
//! the runner itself is SIGKILLed, the sandbox's supervisor notices its parent's death and
//! kills the command with everything it started.

use std::io::Write;
use std::path::Path;

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::plan::{self, PLAN_VERSION, Plan, RanReport, Report};
use crate::exec::{self, Echo, Ending, Invocation};

/// Exit status when the command did not run (the plan or the sandbox was refused).
const NOT_RUN: i32 = 126;

/// Runs the plan at `path` and exits the process with the command's status.
pub async fn run(path: &Path) -> ! {
    let plan: Result<Plan, String> = plan::read(path);
    let report_path = plan.as_ref().ok().map(|p| p.report.path());
    let (report, code) = match plan {
        Err(e) => fail(format!("tern-shell's runner cannot read its plan: {e}")),
        Ok(plan) if plan.version != PLAN_VERSION => fail(format!(
            "tern-shell's runner got a plan of version {}, expected {PLAN_VERSION} (was tern-shell \
             replaced while it ran?)",
            plan.version
        )),
        Ok(plan) => execute(&plan).await,
    };
    if let Report::Failed(why) = &report {
        // The editor's terminal shows it too (stderr is the terminal here, not a log).
        let _ = writeln!(std::io::stderr(), "tern: {why}");
    }
    if let Some(path) = report_path
        && let Err(e) = plan::write_private(&path, &report)
    {
        tracing::error!("cannot write the report {}: {e}", path.display());
    }
    std::process::exit(code)
}

fn fail(why: String) -> (Report, i32) {
    (Report::Failed(why), NOT_RUN)
}

/// Why the command did not start, for the model and the terminal.
fn not_started(e: &exec::SpawnError) -> String {
    format!(
        "the command could not be started in the editor's terminal under tern's sandbox: {e}\n\
         hint: an editor that runs more confined than tern (inside a Flatpak, or a container \
         without user namespaces) cannot give its terminal tern's sandbox; run the editor \
         outside it, or turn off the editor's terminal for tern"
    )
}

async fn execute(plan: &Plan) -> (Report, i32) {
    let policy = match plan.policy.policy() {
        Ok(policy) => policy,
        Err(e) => return fail(format!("tern-shell's runner: bad sandbox policy: {e}")),
    };
    // Exactly tern-shell's layers: one this process cannot have fails the spawn below.
    let sandbox = match tern_sandbox::Sandbox::new(policy, &plan.support.support()) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            return fail(format!(
                "tern-shell's runner cannot set up the sandbox: {e}"
            ));
        }
    };
    let cancel = CancellationToken::new();
    for kind in [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ] {
        match signal(kind) {
            Ok(mut stream) => {
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    if stream.recv().await.is_some() {
                        cancel.cancel();
                    }
                });
            }
            Err(e) => tracing::warn!("cannot catch {kind:?}: {e}"),
        }
    }
    let shell = plan.shell.path();
    let cwd = plan.cwd.path();
    let env: Vec<_> = plan.env.iter().map(|(k, v)| (k.os(), v.os())).collect();
    let hidden: Vec<_> = plan.hidden.iter().map(|p| p.path()).collect();
    let mut stdout = std::io::stdout();
    let invocation = Invocation {
        shell: &shell,
        command: &plan.command,
        cwd: &cwd,
        env: &env,
        timeout: plan.timeout_left(std::time::SystemTime::now()),
        max_output_chars: plan.max_output_chars,
        echo: Some(Echo(&mut stdout)),
        sandbox: &sandbox,
        hidden: &hidden,
        // The editor shows the whole output: no tail to report.
        tail_lines: 0,
    };
    match exec::run(invocation, &cancel, None).await {
        Err(e) => fail(not_started(&e)),
        Ok(outcome) => {
            let code = match outcome.ending {
                Ending::Exited(code) => code,
                Ending::Signaled(signal) => 128 + signal,
                Ending::Unknown => 1,
            };
            (Report::Ran(RanReport::from(&outcome)), code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::plan::{Bytes, PolicyPlan, SupportPlan};

    #[tokio::test]
    async fn a_command_that_cannot_start_is_reported_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let policy = tern_sandbox::Policy::new(
            tern_sandbox::Mode::WorkspaceWrite,
            tern_sandbox::Network::Off,
            vec![dir.path().to_path_buf()],
        );
        let plan = Plan {
            version: PLAN_VERSION,
            shell: Bytes::Utf8("/bin/sh".into()),
            command: "touch made".into(),
            cwd: Bytes::from(dir.path().join("gone").as_path()),
            env: Vec::new(),
            timeout_ms: 5_000,
            since_unix_ms: None,
            max_output_chars: 100,
            policy: PolicyPlan::from(&policy),
            hidden: Vec::new(),
            support: SupportPlan::from(&tern_sandbox::Support::detect()),
            report: Bytes::from(dir.path().join("report.json").as_path()),
        };
        let (report, code) = execute(&plan).await;
        let Report::Failed(why) = report else {
            panic!("{report:?}")
        };
        assert!(
            why.starts_with("the command could not be started in the editor's terminal"),
            "{why}"
        );
        assert!(why.contains("hint:"), "{why}");
        assert_eq!(code, NOT_RUN);
        assert!(!dir.path().join("made").exists());
    }
}
