//! Stage 4, Dispatch: the call to the server, bounded by the tool's timeout and by Ctrl-C (the pool
//! sends MCP `notifications/cancelled` in both cases), and every failure mapped to a result type.

use std::time::Duration;

use serde_json::{Map, Value};
use tern_mcp::{CallError, CallOptions, ServerPool, ToolOutput};

use crate::call::{CallContext, ErrorType};

/// Calls the tool. `timeout` is the per-tool override from config, if any.
pub async fn dispatch(
    pool: &ServerPool,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
    timeout: Option<Duration>,
    ctx: &CallContext,
) -> Result<ToolOutput, (ErrorType, String)> {
    if ctx.cancel.is_cancelled() {
        return Err((ErrorType::Cancelled, "cancelled before the tool ran".into()));
    }
    let options = CallOptions {
        timeout,
        cancel: ctx.cancel.clone(),
        progress: ctx.progress.clone(),
    };
    pool.call(server, tool, Some(arguments), options)
        .await
        .map_err(|e| (classify(&e), e.to_string()))
}

/// The result type of a pool error. Exhaustive on purpose: a new pool error must be classified.
pub fn classify(e: &CallError) -> ErrorType {
    match e {
        CallError::UnknownServer(_) => ErrorType::UnknownTool,
        CallError::NotReady { .. } | CallError::ServerCrashed { .. } => ErrorType::ServerCrashed,
        CallError::Timeout { .. } => ErrorType::Timeout,
        CallError::Cancelled => ErrorType::Cancelled,
        CallError::Server { .. } => ErrorType::ServerError,
        CallError::Transport(_) => ErrorType::Transport,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_errors_map_to_result_types() {
        assert_eq!(
            classify(&CallError::Timeout { secs: 1.0 }),
            ErrorType::Timeout
        );
        assert_eq!(classify(&CallError::Cancelled), ErrorType::Cancelled);
        assert_eq!(
            classify(&CallError::ServerCrashed {
                server: "s".into(),
                stderr_tail: vec![]
            }),
            ErrorType::ServerCrashed
        );
        assert_eq!(
            classify(&CallError::NotReady {
                server: "s".into(),
                state: "failed".into()
            }),
            ErrorType::ServerCrashed
        );
        assert_eq!(
            classify(&CallError::Server {
                code: -32602,
                message: "m".into()
            }),
            ErrorType::ServerError
        );
        assert_eq!(
            classify(&CallError::Transport("x".into())),
            ErrorType::Transport
        );
        assert_eq!(
            classify(&CallError::UnknownServer("x".into())),
            ErrorType::UnknownTool
        );
    }

    #[tokio::test]
    async fn a_cancelled_turn_never_reaches_the_pool() {
        let pool = ServerPool::start(
            Vec::new(),
            tern_mcp::PoolOptions::default(),
            tern_mcp::pins::PinStore::in_memory(),
            std::sync::Arc::new(|_| {}),
        );
        let ctx = CallContext::default();
        ctx.cancel.cancel();
        let err = dispatch(&pool, "s", "t", Map::new(), None, &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.0, ErrorType::Cancelled);
    }
}
