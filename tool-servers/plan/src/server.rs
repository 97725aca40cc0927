//! The MCP face of tern-plan: the `exit` tool.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of `exit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct ExitParams {
    /// The plan, as markdown: the steps you will take, the files you will change and how you
    /// will check the result.
    pub plan: String,
}

/// What `exit` returns as `structuredContent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Proposed {
    /// The plan, as the model wrote it.
    pub plan: String,
}

/// The plan server. Stateless: cheap to clone.
#[derive(Clone)]
pub struct PlanServer {
    /// Built once: rebuilding the router per request costs ~50 µs (RMCP-NOTES.md).
    tool_router: ToolRouter<PlanServer>,
}

impl Default for PlanServer {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl PlanServer {
    /// A new server.
    pub fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "exit",
        description = "Finish planning: hand your plan (markdown) to the user, who approves it, \
            asks you to keep planning (with feedback), or cancels. Call it once your plan is \
            complete; nothing is written before the user approves. Do not call it outside plan \
            mode.",
        output_schema = schema_for_output::<Proposed>(),
        annotations(
            title = "Propose the plan",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn exit(&self, Parameters(params): Parameters<ExitParams>) -> CallToolResult {
        let plan = params.plan.trim();
        if plan.is_empty() {
            return CallToolResult::error(vec![ContentBlock::text(
                "The plan is empty.\nhint: call exit again with the plan as markdown in `plan`.",
            )]);
        }
        let proposed = Proposed {
            plan: plan.to_string(),
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
            "Plan handed to the user for approval:\n\n{plan}"
        ))]);
        result.structured_content = serde_json::to_value(&proposed).ok();
        result
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlanServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Plan mode: `exit` hands your finished plan (markdown) to the user for approval."
                    .to_string(),
            )
    }
}
