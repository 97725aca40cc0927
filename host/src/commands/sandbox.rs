//! `tern sandbox [--sandbox MODE] [--network on|off] -- CMD ARGS…`: one command under the
//! policy the built-in shell server applies to the model's commands, with the terminal's stdio,
//! so a user can see for themselves what it allows.

use std::{ffi::OsString, io::Write, os::unix::process::ExitStatusExt};

use anyhow::Context as _;
use tern_sandbox::{Mode, Network, Policy, Sandbox, Session, Support};

use crate::{error::UsageError, workspace::Workspace};

/// Runs `command` in the workspace directory under `[sandbox]` with the flags' overrides and
/// returns its exit code. Missing kernel layers are said once on `err` first.
pub fn run(
    ws: &Workspace,
    mode: Option<Mode>,
    network: Option<Network>,
    command: &[OsString],
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| UsageError("no command: `tern sandbox -- CMD ARGS…`".into()))?;
    let config = &ws.config.sandbox;
    let mut roots = vec![ws.cwd.clone()];
    for dir in &config.writable {
        roots.push(
            dir.canonicalize()
                .with_context(|| format!("[sandbox] writable {}", dir.display()))?,
        );
    }
    let mut policy = Policy::new(
        mode.unwrap_or(config.mode),
        network.unwrap_or(config.network),
        roots,
    );
    policy.protected = config.protect.clone();
    let sandbox = Sandbox::new(policy, &Support::detect()).context("cannot set up the sandbox")?;
    for degradation in sandbox.degradations() {
        writeln!(err, "sandbox: {degradation}")?;
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).current_dir(&ws.cwd);
    let status = sandbox
        .run_command(&mut cmd, Session::Inherit)
        .with_context(|| format!("cannot run {}", program.to_string_lossy()))?;
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}
