//! The MCP face of tern-catalog: the `tool_search` tool.

use std::{path::PathBuf, sync::Arc, time::SystemTime};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::index::{Entry, Index, Signature};
use tern_tool_common::catalog::{Found, SearchResult};

/// Matches returned when the call does not say.
const DEFAULT_LIMIT: u32 = 8;
/// Most matches one call may ask for.
const MAX_LIMIT: u32 = 25;

/// Parameters of `tool_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct SearchParams {
    /// What you want to do, in a few words (e.g. `create a calendar event`, `query the
    /// database`). Matched against tool names, descriptions and argument names.
    pub query: String,
    /// How many matches to return (default 8, at most 25).
    #[serde(default)]
    #[schemars(range(min = 1, max = 25))]
    pub limit: Option<u32>,
}

/// The catalog file and its index, rebuilt when the file changes.
struct Loaded {
    modified: Option<SystemTime>,
    index: Index,
}

/// The tool-search server.
#[derive(Clone)]
pub struct CatalogServer {
    path: PathBuf,
    loaded: Arc<Mutex<Option<Loaded>>>,
    tool_router: ToolRouter<Self>,
}

impl CatalogServer {
    /// The index of the current catalog file (re-read when it changed since the last call).
    async fn index(&self) -> Result<tokio::sync::MappedMutexGuard<'_, Index>, String> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .map_err(|e| format!("cannot read the catalog {}: {e}", self.path.display()))?;
        let mut loaded = self.loaded.lock().await;
        if loaded.as_ref().is_none_or(|l| l.modified != Some(modified)) {
            let text = std::fs::read_to_string(&self.path)
                .map_err(|e| format!("cannot read the catalog {}: {e}", self.path.display()))?;
            let entries: Vec<Entry> = serde_json::from_str(&text)
                .map_err(|e| format!("the catalog {} is not valid: {e}", self.path.display()))?;
            *loaded = Some(Loaded {
                modified: Some(modified),
                index: Index::new(entries),
            });
        }
        tokio::sync::MutexGuard::try_map(loaded, |l| l.as_mut().map(|l| &mut l.index))
            .map_err(|_| "the catalog is not loaded".to_string())
    }
}

#[tool_router]
impl CatalogServer {
    /// A server searching the catalog at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            loaded: Arc::default(),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "tool_search",
        description = "Find tools that are available but not listed, by what they do. Many \
            tools are kept out of the list to save context; search here when no listed tool \
            fits. Returns the best matches with their arguments; the tools found can be called \
            from your next step on.",
        annotations(
            title = "Search tools",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn tool_search(&self, Parameters(params): Parameters<SearchParams>) -> CallToolResult {
        let index = match self.index().await {
            Ok(index) => index,
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(e)]),
        };
        let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let hits = index.search(&params.query, limit);
        if hits.is_empty() {
            return CallToolResult::success(vec![ContentBlock::text(format!(
                "No tool matches `{}` among {} deferred tools. Try other words (what the tool \
                 does, or what it acts on).",
                params.query,
                index.len()
            ))]);
        }
        let mut text = format!(
            "{} tool(s) match `{}`; they can be called from your next step on:\n",
            hits.len(),
            params.query
        );
        let mut found = Vec::new();
        for (entry, _) in &hits {
            let description = entry.description.lines().next().unwrap_or("");
            text.push_str(&format!(
                "- {}({}) — {description}\n",
                entry.name,
                entry.signature()
            ));
            found.push(Found {
                name: entry.name.clone(),
                description: description.to_string(),
                arguments: entry.signature(),
            });
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(SearchResult { tools: found }).ok();
        result
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CatalogServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Finds deferred tools by what they do, with `tool_search`.".to_string(),
            )
    }
}
