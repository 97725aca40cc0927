//! Why a server did not start, and why a call did not complete.

/// A server could not be started.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StartError {
    /// The command is not on the child's PATH (or the path does not exist).
    #[error("command `{command}` not found: it is not on PATH ({path})")]
    CommandNotFound { command: String, path: String },
    /// The OS refused to spawn it.
    #[error("cannot spawn `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    /// It did not finish spawn + initialize + tools/list in time.
    #[error("did not become ready within {secs:.1} s (startup_timeout_sec)")]
    Timeout { secs: f64 },
    /// The MCP handshake failed: it exited, closed stdout, or spoke something else.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// `tools/list` failed after initialize.
    #[error("tools/list failed: {0}")]
    ListTools(String),
    /// Invalid configuration detected at spawn time (bad URL, bad header).
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// The server crashed too often.
    #[error("crashed {restarts} times within a minute; not restarting (last: {last})")]
    TooManyRestarts { restarts: usize, last: String },
}

/// A tool call that produced no result from the server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// No server of that name is configured.
    #[error("no server named `{0}`")]
    UnknownServer(String),
    /// The server is not ready (still starting, restarting or failed).
    #[error("server `{server}` is not ready: {state}")]
    NotReady { server: String, state: String },
    /// The call exceeded its timeout; `notifications/cancelled` was sent.
    #[error("timed out after {secs:.1} s")]
    Timeout { secs: f64 },
    /// The caller cancelled (Ctrl-C); `notifications/cancelled` was sent.
    #[error("cancelled")]
    Cancelled,
    /// The server process died while the call was in flight.
    #[error("server `{server}` crashed during the call{}", fmt_tail(stderr_tail))]
    ServerCrashed {
        server: String,
        stderr_tail: Vec<String>,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server error {code}: {message}")]
    Server { code: i32, message: String },
    /// The transport failed in another way.
    #[error("transport error: {0}")]
    Transport(String),
}

fn fmt_tail(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from("; its last stderr lines:\n");
    for line in tail {
        s.push_str("  ");
        s.push_str(line);
        s.push('\n');
    }
    s
}
