//! The loop's tools, through the gateway: every call is an MCP request that
//! passes resolve → validate → permission → dispatch → cap → audit.

use std::sync::Arc;

use async_trait::async_trait;
use tern_gateway::{CallContext, Gateway};
use tern_model::{ToolCall, ToolSpec};
use tokio_util::sync::CancellationToken;

use crate::{
    agent::{ExecOutcome, ToolExecutor},
    events::{AgentEvent, EventBus},
};

/// [`ToolExecutor`] over the [`Gateway`].
pub struct GatewayTools {
    pub gateway: Arc<Gateway>,
    pub bus: EventBus,
}

#[async_trait]
impl ToolExecutor for GatewayTools {
    fn tools(&self) -> Vec<ToolSpec> {
        self.gateway
            .refresh_table()
            .entries()
            .iter()
            .map(|e| ToolSpec {
                name: e.name.clone(),
                description: e.def.description.clone(),
                input_schema: e.def.input_schema.clone(),
            })
            .collect()
    }

    fn is_read_only(&self, name: &str) -> bool {
        self.gateway
            .table()
            .get(name)
            .is_some_and(|e| e.def.annotations.read_only == Some(true))
    }

    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ExecOutcome {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<tern_mcp::Progress>();
        let bus = self.bus.clone();
        let call_id = call.id.clone();
        let forward = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                bus.emit(AgentEvent::ToolProgress {
                    call_id: call_id.clone(),
                    progress: p.progress,
                    total: p.total,
                    message: p.message,
                });
            }
        });
        let ctx = CallContext {
            run_id: self.bus.run_id().to_string(),
            session_id: self.bus.session_id().to_string(),
            cancel,
            progress: Some(tx),
        };
        let result = self
            .gateway
            .call(
                tern_gateway::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
                ctx,
            )
            .await;
        let _ = forward.await;
        let diff = result
            .metadata
            .structured
            .as_ref()
            .and_then(|s| s.get("diff"))
            .and_then(|d| d.as_str())
            .map(str::to_string);
        ExecOutcome {
            content: result.content,
            is_error: result.is_error,
            error_type: result.error_type.map(|t| t.as_str().to_string()),
            diff,
            duration_ms: result.metadata.duration.as_millis() as u64,
        }
    }
}
