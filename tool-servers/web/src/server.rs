//! The MCP face of tern-web: the `fetch` tool.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::convert::{self, Kind};
use crate::fetch::{FetchError, Fetched, Fetcher};

/// `_meta` key of a failed fetch's result: `{"url", "error": KIND, "status"}` for programs
/// (KIND is `invalid_url`, `blocked_address`, `http_status`, …); defined with every other `tern/…`
/// key in `tern_protocol::meta`.
pub const FETCH_ERROR_META: &str = tern_tool_common::meta::FETCH_ERROR;

/// Characters returned when the call does not say.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// Parameters of the `fetch` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchParams {
    /// The http:// or https:// URL to fetch. Other schemes, and hosts on private,
    /// loopback or link-local networks, are refused.
    pub url: String,
    /// Most characters of page text to return (default 20000). HTML pages are
    /// converted to markdown first; the rest of a longer page is cut and the
    /// result says so.
    #[serde(default)]
    pub max_chars: Option<usize>,
}

/// What `fetch` returns as `structuredContent` (its declared `outputSchema`): the page
/// text and every line the text adds around it, since some clients (Claude Code, VS Code)
/// show the model only `structuredContent`; the text states every string in it.
/// Failures are text only.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct FetchOutput {
    /// The URL asked for (the same as `final_url` unless redirects led elsewhere).
    pub url: String,
    /// The URL the page came from, after redirects.
    pub final_url: String,
    /// The HTTP status.
    pub status: u16,
    /// The response's `Content-Type`, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Redirects followed.
    pub redirects: usize,
    /// The page as text (HTML converted to markdown), cut at `max_chars`.
    pub content: String,
    /// `content` is not the whole page.
    pub truncated: bool,
    /// Characters of the whole converted page.
    pub total_chars: usize,
    /// Bytes downloaded.
    pub bytes: usize,
    /// The download stopped at the size limit.
    pub download_truncated: bool,
    /// The text's lines before and after the content, as it has them.
    pub notes: Vec<String>,
}

/// The web MCP server.
#[derive(Debug, Clone)]
pub struct WebServer {
    fetcher: Arc<Fetcher>,
    max_chars_limit: usize,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl WebServer {
    /// A server fetching through `fetcher`; calls may ask for up to
    /// `max_chars_limit` characters.
    pub fn new(fetcher: Fetcher, max_chars_limit: usize) -> Self {
        Self {
            fetcher: Arc::new(fetcher),
            max_chars_limit,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "fetch",
        description = "Fetch a web page or text file over http(s) and return it as readable \
            text: HTML is converted to markdown (headings, links, lists, tables, code), other \
            text types are returned as they are, binary content is refused. Redirects are \
            followed. Long pages are cut at max_chars and the result says so.",
        annotations(
            title = "Fetch URL",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        ),
        output_schema = schema_for_output::<FetchOutput>()
    )]
    async fn fetch(
        &self,
        Parameters(params): Parameters<FetchParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let max_chars = params
            .max_chars
            .unwrap_or(DEFAULT_MAX_CHARS)
            .clamp(1, self.max_chars_limit);
        let fetched = tokio::select! {
            result = self.fetcher.fetch(&params.url) => result,
            () = cancel.cancelled() => {
                return CallToolResult::error(vec![ContentBlock::text(format!("fetching {} was cancelled", params.url))]);
            }
        };
        match fetched {
            Ok(page) => render(page, max_chars).await,
            Err(e) => error_result(&params.url, &e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for WebServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Fetches public web pages with `fetch`; HTML comes back as markdown.".to_string(),
            )
    }
}

async fn render(page: Fetched, max_chars: usize) -> CallToolResult {
    let Fetched {
        url,
        final_url,
        status,
        content_type,
        kind,
        body,
        body_truncated,
        redirects,
    } = page;
    let bytes = body.len();
    let ct = content_type.clone();
    // Parsing a multi-megabyte page takes tens of milliseconds: keep it off
    // the reactor threads that serve other requests.
    let text = tokio::task::spawn_blocking(move || {
        let decoded = convert::decode(&body, ct.as_deref());
        match kind {
            Kind::Html => convert::html_to_markdown(&decoded),
            Kind::Text | Kind::Binary => decoded,
        }
    })
    .await;
    let text = match text {
        Ok(text) => text,
        Err(e) => {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "converting {final_url} failed: {e}"
            ))]);
        }
    };
    let total_chars = text.chars().count();
    let (kept, cut) = convert::truncate_chars(&text, max_chars);
    let truncated = cut || body_truncated;

    let shown_type = content_type.as_deref().map_or("no content type", |ct| ct);
    let mut head = vec![format!("Fetched {final_url} ({status}, {shown_type})")];
    if redirects > 0 {
        head.push(format!("Redirected {redirects}× from {url}"));
    }
    let mut tail = Vec::new();
    if cut {
        tail.push(format!(
            "[… truncated: showing the first {max_chars} of {total_chars} characters …]"
        ));
    }
    if body_truncated {
        tail.push(format!(
            "[… download stopped at {bytes} bytes, the size limit; the page is longer …]"
        ));
    }
    let mut out = String::new();
    for line in &head {
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(kept);
    for line in &tail {
        out.push_str("\n\n");
        out.push_str(line);
    }
    let structured = FetchOutput {
        url: url.to_string(),
        final_url: final_url.to_string(),
        status,
        content_type,
        redirects,
        content: kept.to_string(),
        truncated,
        total_chars,
        bytes,
        download_truncated: body_truncated,
        notes: head.into_iter().chain(tail).collect(),
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(out)]);
    result.structured_content = serde_json::to_value(&structured).ok();
    result
}

fn error_result(requested: &str, error: &FetchError) -> CallToolResult {
    let (kind, status) = match error.root() {
        FetchError::InvalidUrl { .. } => ("invalid_url", None),
        FetchError::Blocked { .. } => ("blocked_address", None),
        FetchError::Refused { .. } => ("refused", None),
        FetchError::Dns { .. } => ("dns", None),
        FetchError::Connect { .. } => ("connect", None),
        FetchError::Timeout { .. } => ("timeout", None),
        FetchError::TooManyRedirects { .. } => ("too_many_redirects", None),
        FetchError::BadRedirect { status, .. } => ("bad_redirect", Some(*status)),
        FetchError::Status { status, .. } => ("http_status", Some(*status)),
        FetchError::Binary { .. } => ("binary_content", None),
        FetchError::Client(_) => ("client", None),
        FetchError::Redirected { .. } => ("redirected", None),
    };
    // Text only, like every failure: the output schema describes a fetched page. The kind
    // and status go to `_meta` for programs that want them.
    let mut result = CallToolResult::error(vec![ContentBlock::text(error.to_string())]);
    let mut meta = rmcp::model::MetaObject::new();
    meta.insert(
        FETCH_ERROR_META.into(),
        serde_json::json!({ "url": requested, "error": kind, "status": status }),
    );
    result.meta = Some(meta);
    result
}
