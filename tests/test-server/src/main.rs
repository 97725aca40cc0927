//! `tern-test-server`: an MCP stdio server that misbehaves on request.
//!
//! Each flag turns on one of the failure modes that MCP hosts get wrong (see
//! issue #3): crash at start, crash mid-call, never answer initialize, garbage on
//! stdout, over-long and colliding tool names, an invalid inputSchema,
//! `list_changed` with a changed description, slow startup. Its normal tools
//! (`echo`, `sleep`, `progress`, `env`, `roots`, `crash`, `noop`) give tests
//! something to call. `--audit FILE` appends every `tools/call` it receives,
//! so a test can prove a call never reached the server.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// It exercises roots/list, deprecated only in the 2026-07-28 protocol (SEP-2577).
#![allow(deprecated)]

use std::{
    io::Write,
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use clap::Parser;

mod oauth;
mod raw;
mod tasks;
mod tools;

use rmcp::{
    RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
        ListPromptsResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
        Prompt, PromptArgument, PromptMessage, Role, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tools::text;

#[derive(Debug, Clone, Parser)]
struct Args {
    /// Exit with status 3 before reading anything.
    #[arg(long)]
    crash_at_start: bool,
    /// Die this many ms after starting, before serving: a few lines on stderr (with the value
    /// of `--leak-env`), then exit status 3. The client is already waiting for the handshake.
    #[arg(long)]
    crash_after_ms: Option<u64>,
    /// Die as `--crash-after-ms` does once this file appears (it is removed first, so the
    /// restarted server lives): a crash at a moment the test chooses.
    #[arg(long)]
    crash_when_file: Option<PathBuf>,
    /// With `--crash-after-ms` or `--crash-when-file`: an environment variable whose value the
    /// dying server prints on stderr, as a crash dump may print a key.
    #[arg(long)]
    leak_env: Option<String>,
    /// Read requests but never answer initialize.
    #[arg(long)]
    hang_initialize: bool,
    /// Print non-JSON lines on stdout before serving.
    #[arg(long)]
    garbage_stdout: bool,
    /// Add a tool with a 100-character name.
    #[arg(long)]
    long_name: bool,
    /// Add tools `a.b` and `a_b`, which collide after sanitizing.
    #[arg(long)]
    colliding: bool,
    /// Add a tool whose inputSchema is not a valid JSON Schema.
    #[arg(long)]
    invalid_schema: bool,
    /// After this many ms, change `echo`'s description and send list_changed.
    #[arg(long)]
    list_changed_after_ms: Option<u64>,
    /// Sleep this long before serving (also from the environment, so that the command line —
    /// what a client may key its caches by — stays the same).
    #[arg(long, env = "TEST_SERVER_SLOW_START_MS")]
    slow_start_ms: Option<u64>,
    /// Serve tools/list in pages of this size.
    #[arg(long)]
    page_size: Option<usize>,
    /// Description of the `echo` tool (to simulate a changed definition across runs).
    #[arg(long, default_value = "Echo the text back.")]
    echo_description: String,
    /// Annotate every tool as not read-only (and destructive), so a client runs its calls one
    /// at a time unless told otherwise (Codex's `supports_parallel_tool_calls`).
    #[arg(long)]
    destructive: bool,
    /// Append every tools/call received to this file, one JSON line each.
    #[arg(long)]
    audit: Option<PathBuf>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:0) instead of stdio;
    /// the bound address is printed on stdout as `listening on ADDR`.
    #[arg(long)]
    http: Option<String>,
    /// Offer the tool `ask`, which asks the person to fill in a form (elicitation: an
    /// `elicitation/create` request, or in the 2026-07-28 era an input request).
    #[arg(long)]
    ask: bool,
    /// With `--http`: guard `/mcp` with OAuth 2.1 and serve a small authorization server on the
    /// same origin (see `oauth.rs`); adds the tool `token`, which returns the bearer token the
    /// call came with.
    #[arg(long, requires = "http")]
    oauth: bool,
    /// Speak hand-written JSON-RPC with the wire-level fault MODE (see `raw.rs`).
    #[arg(long, value_enum)]
    raw: Option<raw::RawMode>,
    /// Answer `server/discover` with "method not found", like a server of the
    /// 2025-11-25 era (it still answers `initialize`).
    #[arg(long)]
    legacy: bool,
    /// Print this many bytes of log lines on stderr before serving.
    #[arg(long)]
    stderr_flood: Option<usize>,
    /// Once `remove_noop` was called, answer tools/list only after this many ms (a slow re-list).
    #[arg(long)]
    relist_delay_ms: Option<u64>,
    /// Also offer a tool of this name (it echoes, like `echo`).
    #[arg(long)]
    extra_tool: Option<String>,
    /// Also offer a tool `huge` whose inputSchema has this many properties.
    #[arg(long)]
    huge_schema: Option<usize>,
    /// Advertise the tasks extension (SEP-2663) and offer the tool `job`, which runs as a task
    /// (see `tasks.rs`).
    #[arg(long)]
    tasks: bool,
}

#[derive(Clone)]
struct TestServer {
    args: Args,
    changed: Arc<AtomicBool>,
    /// `remove_noop` was called: `noop` is no longer listed.
    noop_removed: Arc<AtomicBool>,
    /// Calls that arrived at `rendezvous`, by group: only ever counts up.
    arrivals: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
    /// The tasks `job` started (`--tasks`).
    tasks: rmcp::task_manager::TaskManager,
}

impl ServerHandler for TestServer {
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, rmcp::ErrorData> {
        if self.args.legacy {
            return Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found: server/discover",
                None,
            ));
        }
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder()
            .enable_prompts()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.args.tasks {
            caps.extensions.get_or_insert_default().insert(
                rmcp::model::TASKS_EXTENSION_ID.to_string(),
                rmcp::model::JsonObject::new(),
            );
        }
        ServerConfig::new(caps).with_server_info(Implementation::new(
            "tern-test-server",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, rmcp::ErrorData> {
        self.tasks
            .get_task(&request.task_id)
            .map(rmcp::model::GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, rmcp::ErrorData> {
        let mut name = PromptArgument::new("name");
        name.required = Some(true);
        name.description = Some("Who to greet".into());
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Ask the model to greet someone."),
            Some(vec![name]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, rmcp::ErrorData> {
        let name = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| rmcp::ErrorData::invalid_params("argument `name` is required", None))?;
        Ok(GetPromptResponse::Complete(GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, format!("Please greet {name} warmly.")),
        ])))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        if let Some(ms) = self.args.relist_delay_ms
            && self.noop_removed.load(Ordering::SeqCst)
        {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let tools = self.tools();
        let Some(size) = self.args.page_size else {
            return Ok(ListToolsResult::with_all_items(tools));
        };
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + size).min(tools.len());
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        self.audit(&request);
        let args = request.arguments.clone().unwrap_or_default();
        let int = |k: &str| args.get(k).and_then(Value::as_u64).unwrap_or(0);
        match request.name.as_ref() {
            "echo" => Ok(text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            "noop" => Ok(text("")),
            "job" if self.args.tasks => tasks::start_job(
                &self.tasks,
                context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks()),
                &args,
                self.args.audit.as_deref(),
            ),
            "remove_noop" => {
                self.noop_removed.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("noop removed"))
            }
            name if Some(name) == self.args.extra_tool.as_deref() => Ok(text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            "rendezvous" => {
                let group = args
                    .get("group")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let arrived = |this: &Self| {
                    this.arrivals
                        .lock()
                        .map(|m| m.get(&group).copied().unwrap_or(0))
                        .unwrap_or(0)
                };
                if let Ok(mut m) = self.arrivals.lock() {
                    *m.entry(group.clone()).or_default() += 1;
                }
                let deadline = tokio::time::Instant::now() + Duration::from_millis(int("ms"));
                while arrived(self) < int("n") {
                    if tokio::time::Instant::now() >= deadline {
                        return Ok(text("alone"));
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok(text("met"))
            }
            "big" => Ok(text("x".repeat(int("chars") as usize))),
            "sleep" => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(int("ms"))) => Ok(text("slept")),
                    _ = context.ct.cancelled() => {
                        eprintln!("sleep cancelled by the client");
                        Ok(text("cancelled"))
                    }
                }
            }
            "progress" => {
                let steps = int("steps");
                if let Some(token) = context.meta.get_progress_token() {
                    for i in 1..=steps {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), i as f64)
                                    .with_total(steps as f64)
                                    .with_message(format!("step {i}")),
                            )
                            .await;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                Ok(text(format!("{steps} steps")))
            }
            "env" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
                Ok(text(
                    std::env::var(name).unwrap_or_else(|_| "<unset>".to_string()),
                ))
            }
            "roots" => {
                // 2026-07-28 has no server→client requests: the roots come back as an input
                // response to a retried call (SEP-2322). Earlier revisions ask directly.
                let stateless = context
                    .meta
                    .protocol_version()
                    .is_some_and(|v| !v.has_initialize());
                if stateless {
                    if let Some(answer) = request
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("roots"))
                    {
                        let roots = answer.get("roots").cloned().unwrap_or(Value::Null);
                        return Ok(text(roots.to_string()));
                    }
                    #[allow(deprecated)]
                    let ask = rmcp::model::InputRequest::ListRoots(rmcp::model::ListRootsRequest {
                        method: Default::default(),
                        extensions: Default::default(),
                    });
                    return Ok(CallToolResponse::InputRequired(
                        rmcp::model::InputRequiredResult::from_input_requests(
                            [("roots".to_string(), ask)].into(),
                        ),
                    ));
                }
                #[allow(deprecated)]
                let roots = context.peer.list_roots().await;
                match roots {
                    Ok(r) => Ok(text(serde_json::to_string(&r.roots).unwrap_or_default())),
                    Err(e) => Ok(text(format!("roots/list failed: {e}"))),
                }
            }
            "headers" => {
                let headers: serde_json::Map<String, Value> = context
                    .extensions
                    .get::<http::request::Parts>()
                    .map(|parts| {
                        parts
                            .headers
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.to_string(),
                                    Value::String(v.to_str().unwrap_or("?").to_string()),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(text(Value::Object(headers).to_string()))
            }
            "ask" => {
                let form = json!({
                    "mode": "form",
                    "message": "Tell the test server about yourself",
                    "requestedSchema": {"type": "object", "properties": {
                        "name": {"type": "string", "title": "Name", "minLength": 1},
                        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 30},
                        "color": {"type": "string", "title": "Colour", "oneOf": [
                            {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                        "subscribe": {"type": "boolean", "title": "Subscribe", "default": false}
                    }, "required": ["name", "color"]}
                });
                let Ok(params) = serde_json::from_value::<rmcp::model::ElicitRequestParams>(form)
                else {
                    return Ok(text("could not build the form"));
                };
                let stateless = context
                    .meta
                    .protocol_version()
                    .is_some_and(|v| !v.has_initialize());
                let answer: Value = if stateless {
                    match request.input_responses.as_ref().and_then(|r| r.get("form")) {
                        Some(answer) => answer.clone(),
                        None => {
                            let ask = rmcp::model::InputRequest::Elicitation(
                                rmcp::model::ElicitRequest::new(params),
                            );
                            return Ok(CallToolResponse::InputRequired(
                                rmcp::model::InputRequiredResult::from_input_requests(
                                    [("form".to_string(), ask)].into(),
                                ),
                            ));
                        }
                    }
                } else {
                    match context.peer.create_elicitation(params).await {
                        Ok(r) => serde_json::to_value(r).unwrap_or_default(),
                        Err(e) => return Ok(text(format!("elicitation failed: {e}"))),
                    }
                };
                Ok(text(format!(
                    "answer: {} {}",
                    answer["action"].as_str().unwrap_or("?"),
                    answer.get("content").cloned().unwrap_or(Value::Null)
                )))
            }
            "token" => {
                let token = context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get(http::header::AUTHORIZATION))
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .unwrap_or("(none)")
                    .to_string();
                Ok(text(token))
            }
            "crash" => {
                eprintln!("test-server: dying mid-call on purpose");
                let _ = std::io::stderr().flush();
                std::process::exit(7);
            }
            other => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(format!("unknown tool {other}")),
            ]))),
        }
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    eprintln!("test-server: starting with {args:?}");
    if args.crash_at_start {
        eprintln!("test-server: fatal: crashing at start on purpose");
        std::process::exit(3);
    }
    if let Some(ms) = args.slow_start_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(ms) = args.crash_after_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        die(args.leak_env.as_deref());
    }
    if let Some(file) = args.crash_when_file.clone() {
        let leak = args.leak_env.clone();
        tokio::spawn(async move {
            loop {
                if std::fs::remove_file(&file).is_ok() {
                    die(leak.as_deref());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
    }
    if args.hang_initialize {
        // Hold stdin open and never answer.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    }
    if let Some(bytes) = args.stderr_flood {
        let line = "test-server: flooding stderr with a line of 64 bytes of noise.....\n";
        let mut err = std::io::stderr().lock();
        for _ in 0..bytes / line.len() {
            if err.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
    }
    if let Some(mode) = args.raw {
        raw::serve(mode, args.audit.as_deref());
        return;
    }
    if args.garbage_stdout {
        println!("this is not JSON-RPC");
        println!("{{\"neither\": \"is this\"}}");
        let _ = std::io::stdout().flush();
    }
    let server = TestServer {
        args: args.clone(),
        changed: Arc::new(AtomicBool::new(false)),
        noop_removed: Arc::default(),
        arrivals: Arc::default(),
        tasks: rmcp::task_manager::TaskManager::new(),
    };
    if let Some(addr) = &args.http {
        serve_http(server, addr).await;
        return;
    }
    let service = match server.clone().serve(rmcp::transport::stdio_pipes()).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("test-server: initialize failed: {e}");
            std::process::exit(1);
        }
    };
    if let Some(ms) = args.list_changed_after_ms {
        let peer = service.peer().clone();
        let changed = server.changed.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            changed.store(true, Ordering::SeqCst);
            let _ = peer.notify_tool_list_changed().await;
        });
    }
    let _ = service.waiting().await;
}

/// A crash: a few lines on stderr, one with the value of the variable `leak` (a key in a crash
/// dump), then exit status 3.
fn die(leak: Option<&str>) -> ! {
    let key = leak
        .map(|var| std::env::var(var).unwrap_or_default())
        .unwrap_or_default();
    eprintln!("test-server: connecting to the database as {key}");
    eprintln!("test-server: fatal: the database refused the connection");
    std::process::exit(3);
}

/// Streamable HTTP mode: `/mcp` on `addr`, for the pool's HTTP transport tests.
async fn serve_http(server: TestServer, addr: &str) {
    let oauth = server.args.oauth;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("test-server: cannot bind {addr}: {e}");
            std::process::exit(1);
        }
    };
    let router = match (oauth, listener.local_addr()) {
        (true, Ok(local)) => oauth::router(format!("http://{local}"), router),
        _ => router,
    };
    if let Ok(local) = listener.local_addr() {
        println!("listening on {local}");
        let _ = std::io::stdout().flush();
    }
    let _ = axum::serve(listener, router).await;
}
