//! `tern serve agent`: tern itself as an MCP tool server.
//!
//! One tool, `run {goal, cwd?, profile?, max_steps?}`, runs a whole tern agent — the same
//! [`Engine`](crate::agent::Engine) as `tern run`, headless — and returns its final answer as
//! text, a [`RunReport`] as `structuredContent` (the tool's output schema) and its tokens as
//! `_meta["tern/usage"]` (see [`crate::agent::delegated`]), which tern folds into the calling
//! run's totals. Any MCP client can use it (Claude Code, Codex, the Python SDK); inside tern,
//! `[mcp_servers.agent] builtin = "agent"` makes it the way the model delegates to sub-agents,
//! through the same gateway, audit and trace as every other tool call.
//!
//! - Progress: one `notifications/progress` per tool call of the sub-run (`step N: TOOL ARGS`).
//! - Cancellation: `notifications/cancelled` stops the sub-run; its servers are shut down and
//!   its `run_finished` says `cancelled`.
//! - Confinement: a sub-run works in a directory inside the roots (`--root`, else the client's
//!   `roots/list` where the protocol revision still has it, else the working directory) and its
//!   built-in servers are rooted there.
//! - Permissions: sub-runs are headless (asks become denials with the hint) and run in
//!   `--mode` (default `read-only`), so by default `run` is honestly annotated read-only and
//!   tern runs several at once.
//! - Nesting: `--depth` is how deep this server's runs are; beyond `--max-depth` (default 1)
//!   `run` refuses with an error. tern passes both down to the agent servers of sub-runs.
//! - Transport: stdio, or MCP streamable HTTP with `--http ADDR` (the same guard as the other
//!   servers: a bearer token always, generated and printed unless given or `--no-auth`;
//!   Host and Origin checks).

mod report;
mod roots;
mod server;
mod subrun;

use crate::agent::inherit::ParentPolicy;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tern_config::{Config, ConfigPaths, LoadOptions, PermissionMode};
use tern_tool_common::ServeError;

pub use report::{ReportStatus, RunReport};
pub use server::AgentServer;

/// How long a closing server waits for its cancelled runs to write `run_finished` and stop
/// their servers.
const WIND_DOWN: Duration = Duration::from_secs(15);

/// `tern serve agent` flags (besides the global `--mode`, `--config`, `-c`, `--allow`, …,
/// which apply to every sub-run).
#[derive(Debug, Clone, clap::Args)]
#[command(args_override_self = true)]
pub struct Args {
    /// A directory sub-agents may work in (repeatable). Without it, the roots the client offers
    /// (`roots/list`), else the directory the server runs in.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// How many levels of sub-agents may nest: 1 (the default) lets this server's sub-agents
    /// work but not delegate again.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub max_depth: u32,
    /// The nesting level of the runs this server starts (1 for a server started by a person or
    /// a top-level run; tern sets it for the agent servers of sub-runs).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub depth: u32,
    /// The run whose tool server this is: recorded as the `parent_run_id` of every run it starts
    /// (tern sets it, in the environment).
    #[arg(long, value_name = "RUN_ID", env = crate::agent::servers::PARENT_RUN_ENV)]
    pub parent_run_id: Option<String>,
    /// Tokens (prompt, cached or not, plus output) a sub-run may use before it is stopped, when
    /// its profile sets no `token_budget`. Default: no limit besides its steps.
    #[arg(long, value_name = "TOKENS")]
    pub token_budget: Option<u64>,
    /// `--http ADDR` and its token and origin flags, as for `tern serve fs|shell|web`.
    #[command(flatten)]
    pub http: tern_tool_common::http::HttpArgs,
}

/// What every run of this server shares.
pub(crate) struct Settings {
    /// Canonical `--root`s; empty: ask the client.
    roots: Vec<PathBuf>,
    /// Where the server runs: the root when neither `--root` nor the client gives one.
    here: PathBuf,
    depth: u32,
    max_depth: u32,
    parent_run_id: Option<String>,
    token_budget: Option<u64>,
    /// The server's config flags, with the permission mode of every sub-run.
    options: LoadOptions,
    mode: PermissionMode,
    env: BTreeMap<String, String>,
    tern_exe: PathBuf,
    /// Runs in progress, so a closing server can wait for them.
    active: tokio::sync::watch::Sender<usize>,
}

impl Settings {
    /// Counts a run until the guard drops.
    fn enter(&self) -> ActiveRun<'_> {
        self.active.send_modify(|n| *n += 1);
        ActiveRun(&self.active)
    }
}

struct ActiveRun<'a>(&'a tokio::sync::watch::Sender<usize>);

impl Drop for ActiveRun<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Serves the agent over stdio until the client disconnects (or with `--http` over streamable
/// HTTP until SIGTERM or Ctrl-C), then lets the runs still going (which rmcp has cancelled)
/// finish cleanly. `options` are the global config flags; `cd` is `-C DIR`.
pub async fn serve(args: Args, options: LoadOptions, cd: Option<&Path>) -> Result<(), ServeError> {
    let config_error = |e: String| ServeError::Config(e);
    let http = args.http.config()?;
    let here = std::env::current_dir()
        .map_err(|e| config_error(format!("cannot read the current directory: {e}")))?;
    let here = cd
        .map(|d| here.join(d))
        .unwrap_or(here)
        .canonicalize()
        .map_err(|e| config_error(format!("cannot use the working directory: {e}")))?;
    let roots = if args.roots.is_empty() {
        Vec::new()
    } else {
        let given: Vec<PathBuf> = args.roots.iter().map(|r| here.join(r)).collect();
        roots::canonical(&given).map_err(|e| config_error(e.to_string()))?
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mode = options.mode.unwrap_or(PermissionMode::ReadOnly);
    let options = LoadOptions {
        mode: Some(mode),
        ..options
    };
    // Started by a tern run: its command line and effective policy bind every sub-run, which
    // may only be narrower.
    let parent = ParentPolicy::from_env(&env).map_err(config_error)?;
    let options = match &parent {
        Some(parent) => parent.under(options),
        None => options,
    };
    let mode = options.mode.unwrap_or(mode);
    // The profiles the tool's description lists come from the config where the server starts;
    // each run loads its own directory's config again.
    let lookup = |k: &str| env.get(k).cloned();
    let start_dir = roots.first().unwrap_or(&here);
    let paths =
        ConfigPaths::resolve(start_dir, &lookup).map_err(|e| config_error(e.to_string()))?;
    let config =
        Config::load(&paths, &options, &lookup).map_err(|e| config_error(e.to_string()))?;
    let tern_exe = std::env::current_exe()
        .map_err(|e| config_error(format!("cannot find the tern executable: {e}")))?;
    let (active, mut idle) = tokio::sync::watch::channel(0usize);
    let settings = Arc::new(Settings {
        roots,
        here,
        depth: args.depth,
        max_depth: args.max_depth,
        parent_run_id: args.parent_run_id,
        token_budget: args.token_budget,
        options,
        mode,
        env,
        tern_exe,
        active,
    });
    let server = AgentServer::new(settings, &config.agents);
    let served = match http {
        None => tern_tool_common::serve_stdio(server).await,
        // Every session (and every 2026-07-28 request) gets a clone: the same roots, mode,
        // depth and budget; where a session's runs work still comes from its own roots.
        Some(http) => tern_tool_common::http::serve(http, move || server.clone()).await,
    };
    if tokio::time::timeout(WIND_DOWN, idle.wait_for(|n| *n == 0))
        .await
        .is_err()
    {
        tracing::warn!("sub-runs still going after {WIND_DOWN:?}; exiting anyway");
    }
    served
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Args;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn flags_tern_appends_win_over_the_same_flags_in_the_config_args() {
        let cli = Cli::parse_from([
            "agent",
            "--root",
            "a",
            "--depth",
            "0",
            "--max-depth",
            "5",
            "--root",
            "b",
            "--depth",
            "2",
            "--max-depth",
            "1",
        ]);
        assert_eq!(cli.args.roots, ["a", "b"].map(std::path::PathBuf::from));
        assert_eq!((cli.args.depth, cli.args.max_depth), (2, 1));
    }
}
