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
    /// How the connection is opened: probe for the 2026-07-28 revision or use one era.
    pub lifecycle: Lifecycle,
    /// The roots this server is offered (`roots` in its config).
    pub roots: RootsSetting,
    /// Whether the server may narrow the directories its arguments name to the roots it is
    /// offered (server-filesystem does), so `tern mcp doctor` warns when they do not cover
    /// them. False for tern's built-ins: they are confined by their own `--root` and read
    /// other directories in their arguments (the shell's `--protect`) as policy, not as data.
    pub narrows_to_roots: bool,
    /// Tools whose definition (name, description, schemas, as JSON) is longer than this are
    /// held out of the table: every byte is sent on every model request (issue 15, F15).
    pub max_tool_bytes: usize,
    /// How tern authorizes to this server when it asks (HTTP servers only; `None`: it does
    /// not, and a `401` is an ordinary failure).
    pub oauth: Option<crate::oauth::OAuthSpec>,
}

/// Default [`ServerSpec::max_tool_bytes`]: 64 KiB of JSON, a hundred times a typical tool.
pub const DEFAULT_MAX_TOOL_BYTES: usize = 64 * 1024;

impl ServerSpec {
    /// A server named `name` reached through `transport`, with every other setting at its
    /// default: optional, 10 s to start, 60 s per request, every tool offered, the revision
    /// probed, the pool's roots, [`DEFAULT_MAX_TOOL_BYTES`].
    pub fn new(name: impl Into<String>, transport: TransportSpec) -> Self {
        Self {
            name: name.into(),
            transport,
            required: false,
            startup_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            tool_filter: ToolFilter::all(),
            lifecycle: Lifecycle::Auto,
            roots: RootsSetting::Pool,
            narrows_to_roots: true,
            max_tool_bytes: DEFAULT_MAX_TOOL_BYTES,
            oauth: None,
        }
    }
}

/// How tern opens a connection. MCP has two eras: revisions up to 2025-11-25 open with an
/// `initialize` handshake; 2026-07-28 has none (`server/discover`, then every request carries
/// its own `_meta`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lifecycle {
    /// Probe with `server/discover` offering 2026-07-28; a server that does not know it gets
    /// `initialize` offering 2025-11-25 on the same connection. Whatever was found is remembered
    /// for the server's restarts.
    #[default]
    Auto,
    /// Only `initialize`, offering 2025-11-25 (for a server that mishandles the probe).
    Initialize,
    /// Only `server/discover`, 2026-07-28 (a server that cannot speak it fails).
    Discover,
}

/// Which roots a server is offered (`roots/list`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RootsSetting {
    /// The pool's roots ([`PoolOptions::roots`]: tern's working directory).
    #[default]
    Pool,
    /// No roots capability at all (`roots = false`): for servers that narrow what their own
    /// arguments gave them to the roots they are offered.
    Off,
    /// Exactly these directories (`roots = ["dir", …]`).
    Paths(Vec<PathBuf>),
}

impl RootsSetting {
    /// The directories offered, or `None` when roots are off.
    pub fn resolve<'a>(&'a self, pool: &'a [PathBuf]) -> Option<&'a [PathBuf]> {
        match self {
            RootsSetting::Pool => Some(pool),
            RootsSetting::Off => None,
            RootsSetting::Paths(p) => Some(p),
        }
    }
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
#[derive(Clone)]
pub struct PoolOptions {
    /// Offered to servers as `roots/list` (`file://` URIs).
    pub roots: Vec<PathBuf>,
    /// Where each server's stderr is logged as `<dir>/<name>.log`; none: ring buffer only.
    pub log_dir: Option<PathBuf>,
    /// A server's log is rotated to `<name>.log.1` when it reaches this size.
    pub max_log_bytes: u64,
    /// Restarts allowed per minute before a crashing server is marked failed.
    pub max_restarts_per_minute: usize,
    /// First restart delay; doubles per restart within the minute.
    pub restart_base_delay: Duration,
    /// Host environment lookup (injected so tests never mutate the process env).
    pub host_env: BTreeMap<String, String>,
    /// What to answer a server's form elicitation with.
    pub elicitation: ElicitationPolicy,
    /// Where each server's last tool list is remembered across runs, so a server still
    /// starting can be offered at once (none: nothing is remembered).
    pub tool_cache: Option<PathBuf>,
    /// Where OAuth credentials live and how authorizations are opened.
    pub oauth: crate::oauth::OAuthOptions,
    /// Who to ask when a server asks for input (the REPL); `None`: [`Self::elicitation`]
    /// answers.
    pub elicitor: Option<std::sync::Arc<dyn crate::Elicitor>>,
}

impl std::fmt::Debug for PoolOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolOptions")
            .field("roots", &self.roots)
            .field("log_dir", &self.log_dir)
            .field("elicitation", &self.elicitation)
            .field("tool_cache", &self.tool_cache)
            .field("oauth", &self.oauth)
            .field("elicitor", &self.elicitor.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

/// How tern answers `elicitation/create` (and 2026-07-28 elicitation input requests) when no
/// person is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ElicitationPolicy {
    /// Decline every request: a headless run never makes up answers.
    #[default]
    Decline,
    /// Accept form requests with the defaults their schema declares (SEP-1034); decline
    /// requests that need a value without a default, and every URL request.
    AcceptDefaults,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            roots: Vec::new(),
            log_dir: None,
            max_log_bytes: crate::stderr::MAX_LOG_BYTES,
            max_restarts_per_minute: 5,
            restart_base_delay: Duration::from_millis(250),
            host_env: std::env::vars().collect(),
            elicitation: ElicitationPolicy::Decline,
            tool_cache: None,
            oauth: crate::oauth::OAuthOptions::default(),
            elicitor: None,
        }
    }
}
