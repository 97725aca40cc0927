//! What the pool is asked to run: one [`ServerSpec`] per configured server.
//!
//! Specs are already resolved (env expanded, builtin servers turned into a
//! command line) by the host's config layer; the pool does no config parsing.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

/// One server to launch and supervise.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The configured name: the `server` in `server__tool`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// A required server that fails makes the run fail fast.
    pub required: bool,
    /// How long spawn + initialize + tools/list may take.
    pub startup_timeout: Duration,
    /// How long a request that is not a tool call (prompts, resources) may take; tool calls
    /// carry their own timeout (see [`crate::CallOptions`]).
    pub request_timeout: Duration,
    /// Which of its tools (original names) enter the table.
    pub tool_filter: ToolFilter,
}

/// Which tools of a server are offered. The rule itself lives with the config that states it
/// (`enabled_tools`, `disabled_tools`, `tools.NAME.enabled`); the pool only asks.
#[derive(Clone)]
pub struct ToolFilter(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl ToolFilter {
    /// A filter that offers every tool.
    pub fn all() -> Self {
        Self(Arc::new(|_| true))
    }

    /// A filter asking `allows` for each tool name.
    pub fn new(allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(allows))
    }

    /// Whether `tool` (its name on the server) is offered.
    pub fn allows(&self, tool: &str) -> bool {
        (self.0)(tool)
    }
}

impl std::fmt::Debug for ToolFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolFilter")
    }
}

/// The transport of a server.
#[derive(Debug, Clone)]
pub enum TransportSpec {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        /// Program to run (looked up on the child's `PATH` when it has no `/`).
        program: String,
        /// Arguments.
        args: Vec<String>,
        /// Explicit environment (already expanded), on top of the allow-list.
        env: BTreeMap<String, String>,
        /// Names of host variables passed through as they are (`env_vars`).
        pass_env: Vec<String>,
        /// Working directory; default: the host's.
        cwd: Option<PathBuf>,
    },
    /// A server whose configuration could not be completed (e.g. the variable
    /// holding its token is unset): it is reported as failed with `reason`, and
    /// the other servers carry on.
    Unavailable {
        /// `stdio` or `http`: what it would have been.
        kind: &'static str,
        /// Why it cannot start.
        reason: String,
    },
    /// A streamable HTTP server.
    Http {
        /// Endpoint URL.
        url: String,
        /// Bearer token sent as `Authorization: Bearer …` (already read from its env var).
        bearer_token: Option<String>,
        /// Extra headers.
        headers: BTreeMap<String, String>,
    },
}

impl TransportSpec {
    /// `stdio` or `http`, for status output.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Http { .. } => "http",
            TransportSpec::Unavailable { kind, .. } => kind,
        }
    }
}

/// Pool-wide settings.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Offered to servers as `roots/list` (`file://` URIs).
    pub roots: Vec<PathBuf>,
    /// Where each server's stderr is logged as `<dir>/<name>.log`; none: ring buffer only.
    pub log_dir: Option<PathBuf>,
    /// Restarts allowed per minute before a crashing server is marked failed.
    pub max_restarts_per_minute: usize,
    /// First restart delay; doubles per restart within the minute.
    pub restart_base_delay: Duration,
    /// Host environment lookup (injected so tests never mutate the process env).
    pub host_env: BTreeMap<String, String>,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            log_dir: None,
            max_restarts_per_minute: 5,
            restart_base_delay: Duration::from_millis(250),
            host_env: std::env::vars().collect(),
        }
    }
}
