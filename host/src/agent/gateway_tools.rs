//! The loop's tools, through the gateway: every call is an MCP request that passes
//! resolve → validate → permission → dispatch → cap → audit.

use std::sync::Arc;

use async_trait::async_trait;
use tern_gateway::{CallContext, Gateway};
use tern_model::ToolSpec;
use tern_protocol::{Event, ToolCall, ToolResult};
use tokio_util::sync::CancellationToken;

use super::{bus::EventBus, executor::ToolExecutor};

/// [`ToolExecutor`] over the [`Gateway`].
pub struct GatewayTools {
    pub gateway: Arc<Gateway>,
    pub bus: EventBus,
}

#[async_trait]
impl ToolExecutor for GatewayTools {
    async fn settle(&self) {
        self.gateway.tools_settled().await;
    }

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

    async fn call(&self, call: &ToolCall, cancel: CancellationToken) -> ToolResult {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<tern_mcp::Progress>();
        let bus = self.bus.clone();
        let call_id = call.id.clone();
        let forward = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                bus.emit(Event::ToolProgress {
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
        let outcome = self.gateway.call(call.clone(), ctx).await;
        let _ = forward.await;
        outcome.result
    }
}
