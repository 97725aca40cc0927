//! `[mcp_servers.NAME]`, resolved: what the server pool needs to start and talk to one MCP server.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Location;

/// How long a server may take to start when `startup_timeout_sec` is not set.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may take when neither `tool_timeout_sec` nor a per-tool `timeout_sec` is set.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Characters of a tool's output the model gets when no `max_output_chars` is set.
pub const DEFAULT_MAX_OUTPUT_CHARS: usize = 30_000;

/// One configured MCP server, validated and with `${VAR}`s expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The `NAME` of `[mcp_servers.NAME]`; matches `^[a-zA-Z0-9_-]+$` and prefixes the server's tool names.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `enabled` (default true): a disabled server is not started.
    pub enabled: bool,
    /// `required` (default false): the run fails when this server cannot start.
    pub required: bool,
    /// `startup_timeout_sec` (default 10).
    pub startup_timeout: Duration,
    /// `tool_timeout_sec` (default 60): the timeout of a call to any of its tools without its own.
    pub tool_timeout: Duration,
    /// `max_output_chars`: the cap on the text the model gets from any of its tools without its own
    /// (default: the gateway's, 30 000).
    pub max_output_chars: Option<usize>,
    /// `trust_annotations` (default: true for built-in servers, false otherwise): whether the
    /// server's `readOnlyHint`s may allow calls without asking, and its tools' `_meta`
    /// self-description (which tools edit files) is believed.
    pub trust_annotations: bool,
    /// `defer` (default `auto`): whether its tools may be held behind the tool search when the
    /// table is too large for the window.
    pub defer: Defer,
    /// `roots` (default: tern's working directory): which roots the server is offered.
    pub roots: ServerRoots,
    /// `max_tool_bytes`: tools whose definition is longer (as JSON) are held out of the table
    /// (default: the pool's, 64 KiB).
    pub max_tool_bytes: Option<usize>,
    /// `protocol` (default `auto`): which of MCP's eras to open the connection in.
    pub protocol: Protocol,
    /// `enabled_tools`: when set, only these tools (original names) are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// `disabled_tools`: these tools are never offered (applied after `enabled_tools`).
    pub disabled_tools: Vec<String>,
    /// `[mcp_servers.NAME.tools.TOOL]`, by original tool name.
    pub tools: BTreeMap<String, ToolSettings>,
    /// `supports_parallel_tool_calls` (Codex's key, default false): its tools may run at the same
    /// time as the step's other concurrent calls, as read-only tools do.
    pub parallel_tool_calls: bool,
    /// Where the server was (last) configured, for messages about it.
    pub defined_at: Location,
}

impl ServerConfig {
    /// A built-in server tern configures itself (not from a file): trusted, never deferred,
    /// default limits.
    pub fn internal(name: &str, builtin: Builtin, args: Vec<String>) -> Self {
        Self {
            name: name.to_owned(),
            transport: Transport::Stdio {
                launch: Launch::Builtin(builtin),
                args,
                env: BTreeMap::new(),
                env_vars: Vec::new(),
                cwd: None,
            },
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            max_output_chars: None,
            trust_annotations: true,
            defer: Defer::Never,
            roots: ServerRoots::WorkingDirectory,
            max_tool_bytes: None,
            protocol: Protocol::Auto,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            tools: BTreeMap::new(),
            parallel_tool_calls: false,
            defined_at: Location {
                file: PathBuf::from("(tern)"),
                line: 0,
                column: 0,
            },
        }
    }

    /// Which of tern's built-in servers this is, if it is one (`builtin = "…"`: started as
    /// `tern serve NAME`, part of tern itself).
    pub fn builtin(&self) -> Option<Builtin> {
        self.transport.builtin()
    }

    /// Whether `tool` (original name) should be offered, after `enabled_tools`, `disabled_tools` and
    /// `tools.TOOL.enabled`.
    pub fn tool_enabled(&self, tool: &str) -> bool {
        let listed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|t| t == tool));
        let disabled = self.disabled_tools.iter().any(|t| t == tool);
        let per_tool = self.tools.get(tool).and_then(|t| t.enabled).unwrap_or(true);
        listed && !disabled && per_tool
    }

    /// The limits of a call to `tool` — the one place they are decided. Timeout: the tool's own
    /// `timeout_sec`, else the server's `tool_timeout_sec`. Output: the tool's own
    /// `max_output_chars`, else the server's, else [`DEFAULT_MAX_OUTPUT_CHARS`]. The host enforces
    /// them and sends them to the server, so a server with limits of its own applies the same.
    pub fn limits(&self, tool: &str) -> ToolLimits {
        let settings = self.tools.get(tool);
        ToolLimits {
            timeout: settings
                .and_then(|t| t.timeout)
                .unwrap_or(self.tool_timeout),
            max_output_chars: settings
                .and_then(|t| t.max_output_chars)
                .or(self.max_output_chars)
                .unwrap_or(DEFAULT_MAX_OUTPUT_CHARS),
        }
    }
}

/// The effective limits of one tool; see [`ServerConfig::limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// How long one call may run.
    pub timeout: Duration,
    /// Characters of output the model gets (head and tail kept when more).
    pub max_output_chars: usize,
}

impl Default for ToolLimits {
    /// The limits of a tool nothing is configured for.
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TOOL_TIMEOUT,
            max_output_chars: DEFAULT_MAX_OUTPUT_CHARS,
        }
    }
}

/// `defer` of a server: may its tools wait behind `tool_search`?
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Defer {
    /// Deferred only when the table is too large (`[context] defer_tools_*`).
    #[default]
    Auto,
    /// Always deferred: found through the search.
    Always,
    /// Never deferred: always in the table.
    Never,
}

/// `protocol` of a server: the MCP era tern opens with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// `"auto"`: probe with `server/discover` (2026-07-28), fall back to `initialize`
    /// (2025-11-25); what was found is remembered across runs.
    #[default]
    Auto,
    /// `"2025-11-25"`: only the `initialize` handshake, for a server whose features (tasks,
    /// `ctx.elicit`) work only in that era although it answers the probe.
    Initialize,
    /// `"2026-07-28"`: only `server/discover`; a server that cannot speak it fails to start.
    Discover,
}

impl Protocol {
    /// The config spelling, or `None` for an unknown one.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "2025-11-25" => Some(Self::Initialize),
            "2026-07-28" => Some(Self::Discover),
            _ => None,
        }
    }
}

/// `roots` of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ServerRoots {
    /// Not set, or `true`: tern's working directory.
    #[default]
    WorkingDirectory,
    /// `false`: no roots at all, for servers that would narrow their own directories to them.
    Off,
    /// A list of absolute directories.
    Paths(Vec<PathBuf>),
}

/// How the host reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        /// What to run.
        launch: Launch,
        /// `args`, after `${VAR}` expansion. For a built-in server they follow `serve NAME`.
        args: Vec<String>,
        /// `env`: variables set for the process, after expansion.
        env: BTreeMap<String, String>,
        /// `env_vars`: names of host variables passed through unchanged (the pool clears the rest).
        env_vars: Vec<String>,
        /// `cwd`: the working directory, when not tern's own.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// `url`, after expansion.
        url: String,
        /// `bearer_token_env_var`: the variable holding the token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
        /// `http_headers`: sent with every request, after expansion.
        headers: BTreeMap<String, String>,
        /// `env_http_headers`: header name → variable whose value is sent (read when connecting, so the
        /// secret never sits in the resolved config).
        env_headers: BTreeMap<String, String>,
        /// `oauth`: how tern authorizes when the server asks (`None`: it does not — a static
        /// `bearer_token_env_var` is configured, or `oauth.enabled = false`).
        oauth: Option<OAuthConfig>,
    },
}

impl Transport {
    /// The built-in server this transport launches, if any.
    pub fn builtin(&self) -> Option<Builtin> {
        match self {
            Transport::Stdio {
                launch: Launch::Builtin(b),
                ..
            } => Some(*b),
            _ => None,
        }
    }
}

/// `[mcp_servers.NAME.oauth]` of an HTTP server (every key optional): how tern authorizes to
/// it with OAuth 2.1 when it answers `401` (`tern mcp login NAME`). Without any key tern
/// discovers everything and registers itself dynamically.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `client_id`: a client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// `client_secret_env`: the variable holding that client's secret (read when connecting).
    pub client_secret_env: Option<String>,
    /// `scopes`: the scopes to ask for, instead of those the server names.
    pub scopes: Option<Vec<String>>,
    /// `redirect_port`: the loopback port of the redirect URI
    /// (`http://127.0.0.1:PORT/callback`), for a client registered with a fixed one.
    pub redirect_port: Option<u16>,
    /// `client_metadata_url`: the `https` URL of a Client ID Metadata Document describing tern,
    /// used as the client id where the authorization server supports those.
    pub client_metadata_url: Option<String>,
    /// `resource` (Codex: `oauth_resource`): the RFC 8707 resource to ask a token for, instead
    /// of the one the server's protected resource metadata names.
    pub resource: Option<String>,
    /// `private_key_file` or `private_key_env`: the PEM private key the client authenticates
    /// with (`private_key_jwt`, RFC 7523) instead of a secret (read when connecting).
    pub private_key: Option<PrivateKeySource>,
    /// `signing_alg`: `RS256`, `PS256`, `ES256` or `ES384`; without it, the key's own (RS256
    /// for RSA) or one the authorization server lists.
    pub signing_alg: Option<String>,
    /// `key_id`: the `kid` sent with each assertion.
    pub key_id: Option<String>,
}

/// Where a client's private key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrivateKeySource {
    /// `private_key_file`: an absolute path, or one starting with `~/`.
    File(String),
    /// `private_key_env`: a variable holding the PEM text.
    Env(String),
}

/// The JWS algorithms `signing_alg` takes.
pub const SIGNING_ALGS: [&str; 4] = ["RS256", "PS256", "ES256", "ES384"];

/// The program a stdio server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// `command`: a program looked up on `PATH` (or a path).
    Command(String),
    /// `builtin`: `<this tern executable> serve NAME`, so built-in servers need nothing installed.
    Builtin(Builtin),
}

/// tern's own tool servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Builtin {
    /// Files, confined to the roots.
    Fs,
    /// Shell commands in a root.
    Shell,
    /// Web fetches with an SSRF guard.
    Web,
    /// The tool search over deferred tools (`tern__tool_search`); tern adds it itself when the
    /// table may need deferring.
    Catalog,
    /// tern itself as a tool: `run` starts a sub-agent (`tern serve agent`).
    Agent,
    /// The session's todo list (`tern serve todo`).
    Todo,
    /// Plan mode's `exit` tool (`tern serve plan`); offered to the model only in plan mode.
    Plan,
    /// Agent Skills: `SKILL.md` folders listed, loaded and read (`tern serve skills`).
    Skills,
    /// Code intelligence from the language servers on the machine (`tern serve lsp`); offers
    /// no tools when none is found.
    Lsp,
}

impl Builtin {
    /// The `serve` subcommand name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fs => "fs",
            Self::Shell => "shell",
            Self::Web => "web",
            Self::Catalog => "catalog",
            Self::Agent => "agent",
            Self::Todo => "todo",
            Self::Plan => "plan",
            Self::Skills => "skills",
            Self::Lsp => "lsp",
        }
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `[mcp_servers.NAME.tools.TOOL]`: settings for one tool of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// `timeout_sec`: overrides the server's `tool_timeout_sec` for this tool.
    pub timeout: Option<Duration>,
    /// `max_output_chars`: overrides the gateway's cap on the text given to the model.
    pub max_output_chars: Option<usize>,
    /// `command_arg`: the argument holding a shell command, which the gateway parses into simple commands
    /// for rule matching. Overrides what the tool's own `_meta` declares.
    pub command_arg: Option<String>,
    /// `edits_files`: the tool creates or modifies files at its path arguments, so `accept-edits`
    /// allows it inside the roots. Overrides what the tool's own `_meta` declares.
    pub edits_files: Option<bool>,
    /// `enabled`: `false` hides this tool, like listing it in `disabled_tools`.
    pub enabled: Option<bool>,
}
