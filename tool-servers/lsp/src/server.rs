//! The MCP face of tern-lsp: tool declarations, annotations and server info. The work lives
//! in [`crate::tools`].

use std::sync::Arc;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::detect::{Detected, Language};
use crate::render::Severity;
use crate::tools::{Lsp, PositionParams};

/// Parameters of `diagnostics`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsParams {
    /// The source file, relative to the root (or absolute inside it). It is read from disk,
    /// so call this after writing it.
    pub path: String,
    /// Only diagnostics at least this severe: `error`, `warning`, `information` or `hint`
    /// (default: all of them).
    #[serde(default)]
    pub severity: Option<Severity>,
    /// Only what the previous `diagnostics` call for this file did not report (compared by
    /// message, not position): what the edits since introduced. The first call for a file
    /// reports everything.
    #[serde(default)]
    pub new_only: bool,
    /// Milliseconds to wait for the language server at most (default 5000, at most 60000).
    /// A server that is still starting or indexing may need longer the first time.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// Most diagnostics to return (default 50).
    #[serde(default)]
    pub max: Option<usize>,
}

/// Parameters of `references`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
#[serde(deny_unknown_fields)]
pub struct ReferencesParams {
    /// The source file, relative to the root (or absolute inside it).
    pub path: String,
    /// The line, counting from 1.
    pub line: u32,
    /// The column, counting from 1, in characters. Leave it out and give `symbol` instead.
    #[serde(default)]
    pub column: Option<u32>,
    /// The name to ask about, as written on that line: its first whole-word occurrence there
    /// is used (easier than counting columns).
    #[serde(default)]
    pub symbol: Option<String>,
    /// Count the declaration itself as a reference (default true).
    #[serde(default)]
    pub include_declaration: Option<bool>,
    /// Most references to return (default 50).
    #[serde(default)]
    pub max: Option<usize>,
}

/// Parameters of `symbols`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
#[serde(deny_unknown_fields)]
pub struct SymbolsParams {
    /// A source file: lists its symbols (functions, classes, fields…) as an outline with
    /// line numbers.
    #[serde(default)]
    pub path: Option<String>,
    /// Instead, search the whole workspace for symbols whose name matches this.
    #[serde(default)]
    pub query: Option<String>,
    /// With `query`: the language to search (`rust`, `python`, `typescript`, `go`, `c`);
    /// default: that of `path`, else every language served here.
    #[serde(default)]
    pub language: Option<String>,
}

/// The LSP server. Cheap to clone (rmcp clones the handler per session).
#[derive(Clone)]
pub struct LspServer {
    lsp: Arc<Lsp>,
    instructions: Arc<String>,
    /// Built once; empty when no language server was found, so the server offers no tools.
    tool_router: ToolRouter<LspServer>,
}

impl LspServer {
    /// A server over `lsp`'s root and language servers.
    pub fn new(lsp: Lsp) -> Self {
        let off = lsp.detected.servers.is_empty();
        let instructions = instructions(&lsp.detected, &lsp.ws.root().to_string_lossy());
        Self {
            lsp: Arc::new(lsp),
            instructions: Arc::new(instructions),
            tool_router: if off {
                ToolRouter::new()
            } else {
                Self::tool_router()
            },
        }
    }

    /// Whether any language server is available (otherwise the server offers no tools).
    pub fn is_on(&self) -> bool {
        !self.lsp.detected.servers.is_empty()
    }

    /// What the server tells clients about itself.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// Ends the language servers it started.
    pub async fn shutdown(&self) {
        self.lsp.shutdown().await;
    }
}

/// The server's `instructions`: the languages served (or why none is), the root.
pub fn instructions(detected: &Detected, root: &str) -> String {
    if detected.servers.is_empty() {
        let mut text = format!(
            "No language server was found, so this server offers no tools. It looked on PATH \
             for {}; start it with `--server LANG=COMMAND` to use another.",
            Detected::looked_for()
        );
        for note in &detected.notes {
            text.push_str(&format!(" Not usable: {note}."));
        }
        return text;
    }
    let served: Vec<String> = detected
        .servers
        .iter()
        .map(|s| format!("{} ({})", s.language.display(), s.shown))
        .collect();
    format!(
        "Code intelligence from language servers for files under `{root}`: {}. `diagnostics` \
         reports a file's compiler errors and warnings; `definition`, `references` and `hover` \
         answer about the symbol at a line (give `symbol` or `column`); `symbols` outlines a \
         file or searches the workspace. Files are read from disk at each call.",
        served.join(", ")
    )
}

async fn cancellable(
    cancel: CancellationToken,
    what: &str,
    work: impl std::future::Future<Output = CallToolResult>,
) -> CallToolResult {
    tokio::select! {
        result = work => result,
        () = cancel.cancelled() => {
            CallToolResult::error(vec![ContentBlock::text(format!("{what} was cancelled"))])
        }
    }
}

#[tool_router]
impl LspServer {
    #[tool(
        name = "diagnostics",
        description = "Compiler and type-checker diagnostics (errors, warnings) for one source \
            file, from its language server, as `path:line:col: severity: message`. The file is \
            read from disk, so call it after writing a file to see what the change broke. \
            `severity: \"error\"` keeps only errors; `new_only: true` keeps only what the \
            previous call for the file did not report.",
        annotations(
            title = "Diagnostics",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn diagnostics(
        &self,
        Parameters(p): Parameters<DiagnosticsParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        cancellable(
            cancel,
            "diagnostics",
            self.lsp
                .diagnostics(&p.path, p.severity, p.new_only, p.wait_ms, p.max),
        )
        .await
    }

    #[tool(
        name = "definition",
        description = "Where the symbol at a position is defined (go to definition): \
            `path:line:col` with the line's text. Give the line and either the symbol's name \
            as written there (`symbol`) or its column.",
        annotations(
            title = "Go to definition",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn definition(
        &self,
        Parameters(p): Parameters<PositionParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        cancellable(
            cancel,
            "definition",
            self.lsp.locations(&p, "textDocument/definition", true, 20),
        )
        .await
    }

    #[tool(
        name = "references",
        description = "Every place the symbol at a position is used (find references), as \
            `path:line:col` with each line's text. Give the line and either the symbol's name \
            (`symbol`) or its column.",
        annotations(
            title = "Find references",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn references(
        &self,
        Parameters(p): Parameters<ReferencesParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let max = p.max.unwrap_or(50).clamp(1, 1000);
        let include = p.include_declaration.unwrap_or(true);
        let at = PositionParams {
            path: p.path,
            line: p.line,
            column: p.column,
            symbol: p.symbol,
        };
        cancellable(
            cancel,
            "references",
            self.lsp
                .locations(&at, "textDocument/references", include, max),
        )
        .await
    }

    #[tool(
        name = "hover",
        description = "The type, signature and documentation of the symbol at a position, as \
            the language server shows it on hover (markdown). Give the line and either the \
            symbol's name (`symbol`) or its column.",
        annotations(
            title = "Hover",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn hover(
        &self,
        Parameters(p): Parameters<PositionParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        cancellable(cancel, "hover", self.lsp.hover(&p)).await
    }

    #[tool(
        name = "symbols",
        description = "With `path`: the outline of a source file (functions, classes, methods, \
            fields with their line numbers). With `query`: symbols matching a name anywhere in \
            the workspace.",
        annotations(
            title = "Symbols",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn symbols(
        &self,
        Parameters(p): Parameters<SymbolsParams>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let language = match p.language.as_deref().map(str::parse::<Language>) {
            None => None,
            Some(Ok(l)) => Some(l),
            Some(Err(e)) => return crate::tools::failure("", "bad_arguments", e),
        };
        cancellable(
            cancel,
            "symbols",
            self.lsp
                .symbols(p.path.as_deref(), p.query.as_deref(), language),
        )
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for LspServer {
    fn get_info(&self) -> ServerConfig {
        // No language server, no tools: a host then has nothing to list or offer.
        let capabilities = if self.is_on() {
            ServerCapabilities::builder().enable_tools().build()
        } else {
            ServerCapabilities::default()
        };
        ServerConfig::new(capabilities)
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.instructions.to_string())
    }
}
