//! The MCP face of tern-fs: tool declarations, annotations and server info.
//! The work itself lives in [`crate::tools`]; this file only routes.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rmcp::handler::server::{
    router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters,
};
use rmcp::model::{
    CallToolResult, MetaObject, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use tokio_util::sync::CancellationToken;

use crate::deny::{DenyCache, DenyError};
use crate::editor::Editor;
use crate::resolve::Roots;
use crate::tools::output::{
    EditOutput, GlobOutput, GrepOutput, ListOutput, ReadOutput, WriteOutput,
};
use crate::tools::{
    self, Context, Limits, edit::EditFileParams, glob::GlobParams, grep::GrepParams,
    list::ListDirParams, read::ReadFileParams, write::WriteFileParams,
};
use crate::walk;

/// The filesystem server. Cheap to clone (rmcp clones the handler per session).
#[derive(Debug, Clone)]
pub struct FsServer {
    shared: Arc<Shared>,
    /// Built once: rebuilding the router per request costs ~50 µs (RMCP-NOTES.md).
    tool_router: ToolRouter<FsServer>,
}

#[derive(Debug)]
struct Shared {
    ctx: Context,
    instructions: String,
}

impl FsServer {
    /// A server over `roots` with the given limits, refusing paths that match
    /// `deny_read` (globs; see the crate docs) in every call. With `editor_socket`, the text
    /// of what read_file, write_file and edit_file read and write goes through the editor
    /// bridge listening there (see `--editor-socket`).
    pub fn new(
        roots: Roots,
        limits: Limits,
        deny_read: Vec<String>,
        editor_socket: Option<PathBuf>,
    ) -> Result<Self, DenyError> {
        let deny = DenyCache::new(&roots, deny_read)?;
        let list: Vec<String> = roots
            .paths()
            .map(|p| format!("`{}`", p.display()))
            .collect();
        let instructions = format!(
            "Read, write, edit and search files inside these roots: {}. Relative paths are \
             resolved against the first root; absolute paths must lie inside a root. Paths that \
             lead outside the roots (through `..` or symlinks) are refused. read_file returns at \
             most {} bytes per call; follow its next_offset to continue.{}",
            list.join(", "),
            limits.max_read_bytes,
            match editor_socket {
                Some(_) =>
                    " read_file, write_file and edit_file read and write the text the \
                            user's editor has (unsaved changes included); glob, grep and \
                            list_dir see the files as saved on disk.",
                None => "",
            }
        );
        Ok(Self {
            shared: Arc::new(Shared {
                ctx: Context {
                    roots,
                    limits,
                    gitignore: OnceLock::new(),
                    threads: walk::default_threads(),
                    deny,
                    editor: editor_socket.map(Editor::new),
                },
                instructions,
            }),
            tool_router: Self::tool_router(),
        })
    }
}

/// The tool definition's `_meta` for tools that create or modify the file at
/// their `path` argument: the host recognises file-editing tools by this key,
/// never by a server or tool name (see the crate docs).
fn edits_files() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.insert(EDITS_FILES_KEY.into(), serde_json::Value::Bool(true));
    meta
}

/// `_meta` key on a tool definition: the tool edits files at its path arguments.
pub(crate) const EDITS_FILES_KEY: &str = tern_tool_common::meta::EDITS_FILES;

/// Walks (glob, grep) can take a while on a large tree, so they run on Tokio's
/// blocking pool. The other tools do a handful of syscalls on one bounded file
/// and run inline: a thread hop would cost more than the work.
impl FsServer {
    /// Runs a read_file / write_file / edit_file call: inline from disk (microseconds), on the
    /// blocking pool when the text goes through the editor (a round trip that may wait on it).
    async fn file_call(
        &self,
        call: impl FnOnce(&Context) -> CallToolResult + Send + 'static,
    ) -> CallToolResult {
        if self.shared.ctx.editor.is_none() {
            return call(&self.shared.ctx);
        }
        let shared = Arc::clone(&self.shared);
        match tokio::task::spawn_blocking(move || call(&shared.ctx)).await {
            Ok(result) => result,
            Err(e) => tools::failure("use", "", format!("the editor call failed: {e}")),
        }
    }
}

async fn blocking(f: impl FnOnce() -> CallToolResult + Send + 'static) -> CallToolResult {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => tools::failure("search", "", format!("the search task failed: {e}")),
    }
}

#[tool_router]
impl FsServer {
    /// Read a text file, with line numbers (like `cat -n`).
    #[tool(
        name = "read_file",
        output_schema = schema_for_output::<ReadOutput>(),
        description = "Read a UTF-8 text file. Returns its lines numbered like `cat -n`. Use \
                       `offset` (1-based line) and `limit` (lines) for parts of large files; a \
                       read cut by the per-call byte limit says so and gives `next_offset`. An \
                       image file (PNG, JPEG, GIF, WebP) is returned as an image to look at. \
                       Other binary files, directories, FIFOs and devices are refused.",
        annotations(
            title = "Read file",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read_file(
        &self,
        Parameters(p): Parameters<ReadFileParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        self.file_call(move |ctx| {
            let deny = match ctx.deny(&meta, "read", &p.path) {
                Ok(deny) => deny,
                Err(result) => return result,
            };
            match tools::host_max_chars(&meta, "read", &p.path) {
                Ok(cap) => tools::read::read_file(ctx, &deny, p, cap),
                Err(result) => result,
            }
        })
        .await
    }

    /// Create or overwrite a file.
    #[tool(
        name = "write_file",
        output_schema = schema_for_output::<WriteOutput>(),
        description = "Create a file or replace its whole content. Missing parent directories \
                       are created. The file is replaced atomically; a symlink at the path is \
                       refused, never written through. Prefer edit_file for changes to an \
                       existing file.",
        meta = edits_files(),
        annotations(
            title = "Write file",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn write_file(
        &self,
        Parameters(p): Parameters<WriteFileParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        self.file_call(move |ctx| match ctx.deny(&meta, "write", &p.path) {
            Ok(deny) => tools::write::write_file(ctx, &deny, p),
            Err(result) => result,
        })
        .await
    }

    /// Replace an exact string in a file.
    #[tool(
        name = "edit_file",
        output_schema = schema_for_output::<EditOutput>(),
        description = "Replace an exact piece of text in an existing file and return a unified \
                       diff of the change. `old_string` must occur exactly once (include enough \
                       surrounding lines to make it unique) unless `replace_all` is true.",
        meta = edits_files(),
        annotations(
            title = "Edit file",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn edit_file(
        &self,
        Parameters(p): Parameters<EditFileParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        self.file_call(move |ctx| match ctx.deny(&meta, "edit", &p.path) {
            Ok(deny) => tools::edit::edit_file(ctx, &deny, p),
            Err(result) => result,
        })
        .await
    }

    /// List one directory.
    #[tool(
        name = "list_dir",
        output_schema = schema_for_output::<ListOutput>(),
        description = "List the entries of one directory, sorted by name, with their type \
                       (file, dir, symlink, …), size and symlink target.",
        annotations(
            title = "List directory",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_dir(
        &self,
        Parameters(p): Parameters<ListDirParams>,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        let ctx = &self.shared.ctx;
        match ctx.deny(&meta, "list", p.path.as_deref().unwrap_or(".")) {
            Ok(deny) => tools::list::list_dir(ctx, &deny, p),
            Err(result) => result,
        }
    }

    /// Find paths by glob pattern.
    #[tool(
        name = "glob",
        output_schema = schema_for_output::<GlobOutput>(),
        description = "Find files whose path matches a glob pattern such as `**/*.rs`, searching \
                       below a directory. Respects .gitignore; never follows symlinks. Returns \
                       absolute paths, sorted, capped.",
        annotations(
            title = "Find files",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn glob(
        &self,
        Parameters(p): Parameters<GlobParams>,
        cancel: CancellationToken,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        let deny = match self
            .shared
            .ctx
            .deny(&meta, "glob in", p.path.as_deref().unwrap_or("."))
        {
            Ok(deny) => deny,
            Err(result) => return result,
        };
        let shared = Arc::clone(&self.shared);
        blocking(move || tools::glob::glob(&shared.ctx, &deny, p, &cancel)).await
    }

    /// Search file contents by regex.
    #[tool(
        name = "grep",
        output_schema = schema_for_output::<GrepOutput>(),
        description = "Search file contents for a regular expression (ripgrep's engine, \
                       in-process). Respects .gitignore and skips binary files. output_mode: \
                       `files_with_matches` (default), `content` (path:line:text) or `count`. \
                       Results are capped.",
        annotations(
            title = "Search file contents",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn grep(
        &self,
        Parameters(p): Parameters<GrepParams>,
        cancel: CancellationToken,
        meta: RequestMetaObject,
    ) -> CallToolResult {
        let deny = match self
            .shared
            .ctx
            .deny(&meta, "search", p.path.as_deref().unwrap_or("."))
        {
            Ok(deny) => deny,
            Err(result) => return result,
        };
        let shared = Arc::clone(&self.shared);
        blocking(move || tools::grep::grep(&shared.ctx, &deny, p, &cancel)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.shared.instructions.clone())
    }
}
