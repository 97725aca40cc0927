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

/// Refuses a sandbox weaker than tern-shell's own on this machine: one that lacks a layer
/// tern-shell has (`missing` lists those tern-shell lacks too). An editor started inside
/// another sandbox (a Flatpak, a container without user namespaces) must not quietly give the
/// command less than tern-shell would.
fn as_strong(sandbox: &tern_sandbox::Sandbox, missing: &[String]) -> Result<(), String> {
    match sandbox
        .degradations()
        .iter()
        .find(|d| !missing.iter().any(|m| m == d.layer))
    {
        None => Ok(()),
        Some(extra) => Err(format!(
            "the editor's terminal cannot give the command tern's sandbox: {extra}. The command \
             was not run.\nhint: start the editor where tern itself could sandbox it (not inside \
             another sandbox), or turn off the editor's terminal for tern"
        )),
    }
}

async fn execute(plan: &Plan) -> (Report, i32) {
    let policy = match plan.policy.policy() {
        Ok(policy) => policy,
        Err(e) => return fail(format!("tern-shell's runner: bad sandbox policy: {e}")),
    };
    let sandbox = match tern_sandbox::Sandbox::new(policy, &tern_sandbox::Support::detect()) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            return fail(format!(
                "tern-shell's runner cannot set up the sandbox: {e}"
            ));
        }
    };
    if let Err(why) = as_strong(&sandbox, &plan.missing_layers) {
        return fail(why);
    }
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
        timeout: plan.timeout(),
        max_output_chars: plan.max_output_chars,
        echo: Some(Echo(&mut stdout)),
        sandbox: &sandbox,
        hidden: &hidden,
    };
    match exec::run(invocation, &cancel, None).await {
        Err(e) => fail(e.to_string()),
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

    #[test]
    fn a_sandbox_weaker_than_tern_shells_is_refused() {
        let policy = || {
            tern_sandbox::Policy::new(
                tern_sandbox::Mode::WorkspaceWrite,
                tern_sandbox::Network::Off,
                vec![std::env::temp_dir()],
            )
        };
        let mut support = tern_sandbox::Support::detect();
        support.network_namespace = Err("refused by the test".into());
        let weaker = tern_sandbox::Sandbox::new(policy(), &support).unwrap();
        let why = as_strong(&weaker, &[]).unwrap_err();
        assert!(
            why.starts_with(
                "the editor's terminal cannot give the command tern's sandbox: network namespace \
                 unavailable (refused by the test)"
            ),
            "{why}"
        );
        assert!(why.contains("hint:"), "{why}");
        // tern-shell lacks it too: the runner gives what tern-shell would.
        assert_eq!(
            as_strong(&weaker, &["network namespace".to_string()]),
            Ok(())
        );
    }
}
