//! Stage 4, Dispatch: the call to the server, bounded by the tool's timeout and by Ctrl-C (the pool
//! sends MCP `notifications/cancelled` in both cases), and every failure mapped to an error kind.
//!
//! The tool's limits also travel to the server in the request's `_meta` ([`LIMITS_META`]), so a
//! server with limits of its own (tern-shell's timeout and output cap) applies the host's: the two
//! can never disagree about how long a command may run or how much output it may keep. A trusted
//! server also gets the deny rules' path globs ([`DENY_PATHS_META`]), to enforce on what it opens.
//! When someone follows the call's progress, the request asks for a live tail of its output
//! ([`meta::OUTPUT_TAIL`]).

use serde_json::{Map, Value, json};
use tern_config::ToolLimits;
use tern_mcp::{CallError, CallOptions, ServerPool, ToolOutput};
use tern_protocol::{ErrorKind, meta};

use crate::call::CallContext;

pub use tern_protocol::meta::{DENY_PATHS as DENY_PATHS_META, LIMITS as LIMITS_META};

/// What travels to the server besides the arguments.
#[derive(Debug, Clone, Default)]
pub struct Dispatch {
    pub limits: ToolLimits,
    /// Deny globs for [`DENY_PATHS_META`]; sent only when not empty.
    pub deny_paths: Vec<String>,
}

/// Lines of a running call's output the host asks for ([`meta::OUTPUT_TAIL`]): what the
/// terminal shows under the call.
pub const TAIL_LINES: usize = 5;

/// How long the host waits beyond the limit it sent (at most; a tenth of the limit for short
/// ones), so that a server enforcing it itself can still answer with its own, more useful,
/// timeout result and partial output.
const SERVER_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Calls the tool under `how.limits`.
pub async fn dispatch(
    pool: &ServerPool,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
    how: &Dispatch,
    ctx: &CallContext,
) -> Result<ToolOutput, (ErrorKind, String)> {
    let limits = how.limits;
    if ctx.cancel.is_cancelled() {
        return Err((ErrorKind::Cancelled, "cancelled before the tool ran".into()));
    }
    let mut meta = ctx.meta.clone();
    meta.insert(
        LIMITS_META.into(),
        json!(meta::Limits {
            timeout_ms: Some(u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX)),
            max_output_chars: Some(limits.max_output_chars as u64),
        }),
    );
    if !how.deny_paths.is_empty() {
        meta.insert(DENY_PATHS_META.into(), json!(how.deny_paths));
    }
    // Someone follows the call's progress: a server that can (tern-shell) adds the last lines
    // of its output to its progress notifications.
    if ctx.progress.is_some() {
        meta.insert(
            meta::OUTPUT_TAIL.into(),
            json!(meta::TailRequest { lines: TAIL_LINES }),
        );
    }
    let options = CallOptions {
        timeout: limits.timeout + SERVER_GRACE.min(limits.timeout / 10),
        meta: Some(meta),
        cancel: ctx.cancel.clone(),
        progress: ctx.progress.clone(),
    };
    pool.call(server, tool, arguments, options)
        .await
        .map_err(|e| (classify(&e), e.to_string()))
}

/// The error kind of a pool error. Exhaustive on purpose: a new pool error must be classified.
pub fn classify(e: &CallError) -> ErrorKind {
    match e {
        CallError::UnknownServer(_) | CallError::ToolGone { .. } => ErrorKind::UnknownTool,
        CallError::NotReady { .. } => ErrorKind::ServerUnavailable,
        CallError::ServerCrashed { .. } | CallError::ConnectionLost { .. } => {
            ErrorKind::ServerCrashed
        }
        CallError::BadReply(_) => ErrorKind::ServerError,
        CallError::Timeout { .. } => ErrorKind::Timeout,
        CallError::Cancelled => ErrorKind::Cancelled,
        CallError::Server { .. } => ErrorKind::ServerError,
        CallError::Transport(_) => ErrorKind::Transport,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_errors_map_to_error_kinds() {
        assert_eq!(
            classify(&CallError::Timeout { secs: 1.0 }),
            ErrorKind::Timeout
        );
        assert_eq!(classify(&CallError::Cancelled), ErrorKind::Cancelled);
        assert_eq!(
            classify(&CallError::ServerCrashed {
                server: "s".into(),
                stderr_tail: vec![]
            }),
            ErrorKind::ServerCrashed
        );
        assert_eq!(
            classify(&CallError::NotReady {
                server: "s".into(),
                state: "failed".into()
            }),
            ErrorKind::ServerUnavailable
        );
        assert_eq!(
            classify(&CallError::Server {
                code: -32602,
                message: "m".into()
            }),
            ErrorKind::ServerError
        );
        assert_eq!(
            classify(&CallError::Transport("x".into())),
            ErrorKind::Transport
        );
        assert_eq!(
            classify(&CallError::UnknownServer("x".into())),
            ErrorKind::UnknownTool
        );
    }

    #[tokio::test]
    async fn a_cancelled_turn_never_reaches_the_pool() {
        let pool = ServerPool::start(
            Vec::new(),
            tern_mcp::PoolOptions::default(),
            tern_mcp::pins::PinStore::in_memory(),
            tern_protocol::ignore_events(),
        );
        let ctx = CallContext::default();
        ctx.cancel.cancel();
        let err = dispatch(&pool, "s", "t", Map::new(), &Dispatch::default(), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.0, ErrorKind::Cancelled);
    }
}
