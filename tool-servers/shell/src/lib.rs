//! tern-shell: an MCP server (stdio, or streamable HTTP with `--http ADDR`) with
//! one tool, `run`, that runs a shell command the way an agent needs it run.
//!
//! - Commands start in `--root` (a `cwd` argument must resolve inside it).
//! - The environment is cleared and rebuilt from an allow-list (see [`env`]), so
//!   the API keys of whoever launched the server do not leak into `env` output.
//! - Each command gets its own session and process group; on timeout or
//!   cancellation the whole group gets SIGTERM, then SIGKILL (see [`exec`]).
//! - Output is capped while it is read, so `yes` cannot grow memory.
//! - Every command runs under the OS sandbox of [`tern_sandbox`] (`--sandbox`,
//!   `--network`), and nothing it starts outlives the call (README.md, "Sandbox").
//! - Git's config cannot make an allowed `git status` run a program (see [`env`]).
//!
//! Run it standalone, or as `tern serve shell`; the flags are the same:
//!
//! ```no_run
//! use clap::Parser;
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! let args = tern_shell::Args::parse_from(["tern-shell", "--root", ".", "--timeout-default", "60"]);
//! tern_shell::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod cwd;
mod decode;
pub mod deny;
pub mod env;
pub mod exec;
mod group;
mod limits;
mod live;
mod progress;
mod server;
pub mod terminal;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use tern_sandbox::{Mode, Network};

pub use server::{RunOutput, RunParams, Settings, ShellServer};

/// Command-line flags, shared by `tern-shell` and `tern serve shell`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-shell",
    version,
    about = "tern's shell MCP server over stdio (or streamable HTTP with --http)"
)]
pub struct Args {
    /// Directory commands run in; a `cwd` argument must resolve inside it.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// Timeout in seconds when the call gives none.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout_default: u64,
    /// Largest timeout in seconds a call may ask for.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout_max: u64,
    /// Characters of output kept per command (head and tail halves).
    #[arg(long, value_name = "CHARS", default_value_t = 30_000)]
    pub max_output_chars: usize,
    /// Also pass this environment variable through to commands (repeatable).
    #[arg(long = "env-allow", value_name = "NAME")]
    pub env_allow: Vec<String>,
    /// OS sandbox for commands: `read-only` (nothing writable), `workspace-write`
    /// (only the root, `--writable` directories and TMPDIR), `full-access` (none).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = Mode::WorkspaceWrite)]
    pub sandbox: Mode,
    /// Network for sandboxed commands: `off` gives them a private loopback only.
    /// Ignored in `full-access`.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = Network::Off)]
    pub network: Network,
    /// Also writable in `workspace-write` (repeatable).
    #[arg(long, value_name = "DIR")]
    pub writable: Vec<PathBuf>,
    /// Keep this path read-only even inside a writable directory (repeatable;
    /// e.g. `$TERN_HOME`). `.git` and `.tern` always are.
    #[arg(long, value_name = "PATH")]
    pub protect: Vec<PathBuf>,
    /// Let commands write to `.git` (commit, fetch, checkout): objects, refs,
    /// the index. `config`, `hooks`, `commondir`, `modules/`, `worktrees/` and
    /// `info/` stay read-only, and any of them a command creates is removed
    /// after the call and reported.
    #[arg(long)]
    pub git_writes: bool,
    /// A unix socket commands may still connect to with the network off
    /// (repeatable), e.g. an ssh-agent socket under `$XDG_RUNTIME_DIR`.
    #[arg(long = "allow-socket", value_name = "PATH")]
    pub allow_socket: Vec<PathBuf>,
    /// Show each command in a terminal of the editor that drives tern over ACP: the `tern acp`
    /// bridge listening on this unix socket asks the editor (`terminal/create`) to run this
    /// program's runner, which runs the command exactly as without it — same sandbox,
    /// environment, cwd, timeout and output cap.
    #[arg(long, value_name = "PATH")]
    pub editor_socket: Option<PathBuf>,
    /// The runner the editor starts: run the one command this plan file describes, echo its
    /// output, write the report the plan names, exit with the command's status.
    #[arg(long, value_name = "FILE", hide = true)]
    pub run_plan: Option<PathBuf>,
    /// The arguments that make this executable tern-shell (`serve shell` for `tern`), so the
    /// runner is started the same way. Not a flag: set by `tern serve shell`.
    #[arg(skip)]
    pub invoked_as: Vec<String>,
    #[command(flatten)]
    pub http: tern_tool_common::http::HttpArgs,
}

/// The runtime tern-shell runs on (the standalone binary and `tern serve shell` alike).
///
/// Two workers: a call waits on a child process and streams its output while other calls
/// (and cancellations) keep being answered.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::Workers(2);

/// Runs the server over stdio until the client disconnects, or with `--http` over
/// streamable HTTP until SIGTERM or Ctrl-C.
pub async fn run(args: Args) -> Result<(), tern_tool_common::ServeError> {
    if let Some(plan) = &args.run_plan {
        terminal::runner::run(plan).await
    }
    let http = args.http.config()?;
    let settings = settings_from(args)?;
    tracing::info!(root = %settings.root.display(), shell = %settings.shell.display(), "tern-shell starting");
    tracing::info!("{}", settings.sandbox.summary());
    for degradation in settings.sandbox.degradations() {
        tracing::warn!("{degradation}");
    }
    let server = ShellServer::new(settings);
    match http {
        None => tern_tool_common::serve_stdio(server).await,
        // Every session runs its commands under the one sandbox policy and root.
        Some(http) => tern_tool_common::http::serve(http, move || server.clone()).await,
    }
}

/// Validates the flags and snapshots the environment commands will get.
pub fn settings_from(args: Args) -> Result<Settings, tern_tool_common::ServeError> {
    let invalid = |msg: String| tern_tool_common::ServeError::Config(msg);
    let root = args
        .root
        .canonicalize()
        .map_err(|e| invalid(format!("--root {}: {e}", args.root.display())))?;
    if !root.is_dir() {
        return Err(invalid(format!(
            "--root {}: not a directory",
            root.display()
        )));
    }
    if args.timeout_max == 0 {
        return Err(invalid("--timeout-max must be at least 1 second".into()));
    }
    if args.max_output_chars == 0 {
        return Err(invalid("--max-output-chars must be at least 1".into()));
    }
    let timeout_max = Duration::from_secs(args.timeout_max);
    let timeout_default = Duration::from_secs(args.timeout_default.max(1)).min(timeout_max);
    let env = env::child_env(std::env::vars_os(), &args.env_allow);
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let shell = find_shell(&var("PATH").unwrap_or_default());
    let support = tern_sandbox::Support::detect();
    let sandbox = sandbox_from(&args, &root, var("TMPDIR"), &support)?;
    let editor = match &args.editor_socket {
        None => None,
        Some(socket) => Some(editor_terminal(socket, &args.invoked_as, support)?),
    };
    Ok(Settings {
        root,
        shell,
        timeout_default,
        timeout_max,
        max_output_chars: args.max_output_chars,
        env,
        sandbox: Arc::new(sandbox),
        editor,
    })
}

/// `--editor-socket`: the bridge's socket, and how the editor starts this program's runner.
fn editor_terminal(
    socket: &Path,
    invoked_as: &[String],
    support: tern_sandbox::Support,
) -> Result<terminal::EditorTerminal, tern_tool_common::ServeError> {
    let invalid = |msg: String| tern_tool_common::ServeError::Config(msg);
    let exe = std::env::current_exe()
        .map_err(|e| invalid(format!("--editor-socket: cannot find this executable: {e}")))?;
    let socket = std::path::absolute(socket)
        .map_err(|e| invalid(format!("--editor-socket {}: {e}", socket.display())))?;
    let mut runner = vec![exe.into_os_string()];
    runner.extend(invoked_as.iter().map(std::ffi::OsString::from));
    Ok(terminal::EditorTerminal {
        socket,
        runner,
        support,
    })
}

/// The sandbox commands run under: the policy from the flags, fitted to what
/// this kernel supports (missing layers are logged by [`run`]).
fn sandbox_from(
    args: &Args,
    root: &Path,
    tmpdir: Option<std::ffi::OsString>,
    support: &tern_sandbox::Support,
) -> Result<tern_sandbox::Sandbox, tern_tool_common::ServeError> {
    let invalid = |msg: String| tern_tool_common::ServeError::Config(msg);
    let absolute = |flag: &str, p: &Path| {
        p.canonicalize()
            .map_err(|e| invalid(format!("{flag} {}: {e}", p.display())))
    };
    let mut roots = vec![root.to_path_buf()];
    for dir in &args.writable {
        roots.push(absolute("--writable", dir)?);
    }
    let mut policy = tern_sandbox::Policy::new(args.sandbox, args.network, roots);
    if let Some(tmp) = tmpdir.filter(|t| !t.is_empty()) {
        policy.temp_dirs[0] = PathBuf::from(tmp);
    }
    // A protected path may not exist yet; it is protected from when it does.
    policy.protected = args
        .protect
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect();
    if args.git_writes {
        policy.git = tern_sandbox::GitWrites::Objects;
    }
    for socket in &args.allow_socket {
        policy
            .allow_sockets
            .push(absolute("--allow-socket", socket)?);
    }
    tern_sandbox::Sandbox::new(policy, support).map_err(|e| invalid(format!("--sandbox: {e}")))
}

/// `bash` from the commands' `PATH` when present (models write bash), else `sh`.
fn find_shell(path: &std::ffi::OsStr) -> PathBuf {
    std::env::split_paths(path)
        .map(|dir| dir.join("bash"))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
