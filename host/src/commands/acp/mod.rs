//! `tern acp`: tern as an Agent Client Protocol agent (agentclientprotocol.com, protocol
//! version 1) over stdio, for editors (Zed, JetBrains, Neovim and Emacs clients).
//!
//! A new driver of the same engine: each ACP session is one [`Engine`](crate::agent::Engine)
//! whose renderer turns events into `session/update`s and whose approver asks the editor. Every
//! tool call still goes through the gateway (rules, sandbox, audit); the editor only answers
//! its "ask".
//!
//! Stdout carries only protocol; logs go to stderr. When the editor closes stdin, every turn
//! is cancelled and every session's servers are stopped before tern exits.

mod approver;
mod editor_fs;
mod editor_terminal;
mod history;
mod mcp_servers;
mod modes;
mod plan;
mod prompt;
mod rpc;
mod session;
mod tool_view;
mod updates;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

pub use session::Base;

use self::{
    editor_fs::ClientCaps,
    rpc::{Incoming, METHOD_NOT_FOUND, Outbox, RESOURCE_NOT_FOUND, RpcError},
    session::Session,
};

/// The ACP protocol version tern speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// The methods tern answers (what a method-not-found error lists).
const METHODS: &[&str] = &[
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/prompt",
    "session/set_mode",
    "session/cancel",
];

/// The agent: its sessions and how to reach the editor.
struct Agent {
    out: Outbox,
    base: Base,
    /// What the editor offers (`initialize`'s `clientCapabilities`).
    caps: Mutex<ClientCaps>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// Serves ACP on stdin/stdout until the editor closes stdin. Returns the exit code.
pub async fn run(base: Base) -> anyhow::Result<i32> {
    let (out, writer) = Outbox::new(tokio::io::stdout());
    let agent = Arc::new(Agent {
        out,
        base,
        caps: Mutex::default(),
        sessions: Mutex::default(),
    });
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        while tasks.try_join_next().is_some() {}
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        match rpc::parse(line.trim()) {
            Incoming::Request { id, method, params } => {
                let agent = agent.clone();
                tasks.spawn(async move { agent.request(id, &method, params).await });
            }
            Incoming::Notification { method, params } => agent.notification(&method, &params),
            Incoming::Response { id, result } => {
                if !agent.out.resolve(&id, result) {
                    tracing::warn!(?id, "a response to no request of tern's");
                }
            }
            Incoming::Invalid { id, error } => agent.out.respond(id, Err(error)),
        }
    }
    // The editor is gone: cancel every turn, answer nothing more, stop every server.
    agent.out.abandon_requests();
    agent.finish_sessions().await;
    // Prompts answer as their turns end; sessions still starting are given a moment, and
    // finished too if they came up meanwhile.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
    agent.finish_sessions().await;
    drop(agent);
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    Ok(0)
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params[key]
        .as_str()
        .ok_or_else(|| RpcError::invalid_params(format!("missing string parameter `{key}`")))
}

impl Agent {
    /// Cancels every session's turn, then finishes each (`run_finished`, servers stopped).
    async fn finish_sessions(&self) {
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .map(|mut s| s.drain().map(|(_, v)| v).collect())
            .unwrap_or_default();
        sessions.iter().for_each(|s| s.cancel());
        for s in &sessions {
            s.finish().await;
        }
    }

    fn session(&self, params: &Value) -> Result<Arc<Session>, RpcError> {
        let id = str_param(params, "sessionId")?;
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .ok_or_else(|| {
                RpcError::new(
                    RESOURCE_NOT_FOUND,
                    format!("no session `{id}` in this connection"),
                )
                .hint("create one with session/new, or continue a saved one with session/load")
            })
    }

    async fn request(self: Arc<Self>, id: Value, method: &str, params: Value) {
        let result = match method {
            "initialize" => {
                if let Ok(mut caps) = self.caps.lock() {
                    *caps = ClientCaps::from_initialize(&params);
                }
                Ok(initialize(self.base.takes_images()))
            }
            "authenticate" => authenticate(&params),
            "session/new" => match self.new_session(&params, None).await {
                Ok(session) => {
                    let response = json!({
                        "sessionId": session.id,
                        "modes": modes::mode_state(session.mode()),
                    });
                    self.out.respond(id, Ok(response));
                    self.after_start(&session).await;
                    return;
                }
                Err(e) => Err(e),
            },
            "session/load" => self.load_session(&params).await,
            "session/list" => self.list_sessions(&params),
            "session/prompt" => self.prompt(&params).await,
            "session/set_mode" => self.set_mode(&params),
            _ => Err(
                RpcError::new(METHOD_NOT_FOUND, format!("method not found: `{method}`"))
                    .hint(format!("tern answers {}", METHODS.join(", "))),
            ),
        };
        self.out.respond(id, result);
    }

    fn notification(&self, method: &str, params: &Value) {
        match method {
            "session/cancel" => match self.session(params) {
                Ok(s) => s.cancel(),
                Err(e) => tracing::warn!("session/cancel: {}", e.message),
            },
            // Notifications get no answer, even unknown ones (JSON-RPC 2.0 §4.1).
            other => tracing::debug!(method = other, "notification ignored"),
        }
    }

    async fn new_session(
        &self,
        params: &Value,
        resume: Option<String>,
    ) -> Result<Arc<Session>, RpcError> {
        let cwd = str_param(params, "cwd")?;
        let servers = match &params["mcpServers"] {
            Value::Array(a) => a.clone(),
            Value::Null => Vec::new(),
            _ => return Err(RpcError::invalid_params("`mcpServers` must be an array")),
        };
        let caps = self.caps.lock().map(|c| *c).unwrap_or_default();
        let session = Session::start(&self.out, &self.base, caps, cwd, &servers, resume).await?;
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(session.id.clone(), session.clone());
        }
        Ok(session)
    }

    /// What a new session tells the editor once it knows the session's id.
    async fn after_start(&self, session: &Session) {
        let commands = session.commands().await;
        updates::send(
            &self.out,
            &session.id,
            json!({"sessionUpdate": "available_commands_update", "availableCommands": commands}),
        );
    }

    async fn load_session(&self, params: &Value) -> Result<Value, RpcError> {
        let id = str_param(params, "sessionId")?.to_string();
        session::check_id(&id)?;
        if self.sessions.lock().is_ok_and(|s| s.contains_key(&id)) {
            return Err(RpcError::new(
                rpc::INVALID_REQUEST,
                format!("session `{id}` is already open in this connection"),
            ));
        }
        let session = self.new_session(params, Some(id.clone())).await?;
        let messages = crate::agent::session::load(&session.sessions_dir, &id)
            .map_err(|e| RpcError::new(RESOURCE_NOT_FOUND, e.to_string()))?;
        for update in history::replay(session.cwd(), &messages) {
            updates::send(&self.out, &id, update);
        }
        self.after_start(&session).await;
        Ok(json!({"modes": modes::mode_state(session.mode())}))
    }

    fn list_sessions(&self, params: &Value) -> Result<Value, RpcError> {
        // Runs record their canonical directory: compare like with like.
        let cwd = params["cwd"]
            .as_str()
            .map(|c| std::fs::canonicalize(c).unwrap_or_else(|_| c.into()));
        let paths = self.base.paths();
        let sessions = match paths {
            Some(p) => history::list(&p.runs_dir(), &p.sessions_dir(), cwd.as_deref()),
            None => Vec::new(),
        };
        let cursor = match &params["cursor"] {
            Value::Null => None,
            Value::String(c) => Some(c.as_str()),
            _ => return Err(RpcError::invalid_params("`cursor` must be a string")),
        };
        history::page(sessions, cursor, history::PAGE)
    }

    async fn prompt(&self, params: &Value) -> Result<Value, RpcError> {
        let session = self.session(params)?;
        let blocks = params["prompt"].as_array().ok_or_else(|| {
            RpcError::invalid_params("`prompt` must be an array of content blocks")
        })?;
        let takes_images = session.takes_images().await;
        let prompt::Prompt { text, images } = prompt::to_prompt(blocks, takes_images)?;
        if !images.is_empty() {
            // Images go with the message as it is (no slash command takes them).
            let stop = session.prompt(&text, images).await?;
            return Ok(json!({"stopReason": stop}));
        }
        // tern's own slash commands run here, their output sent as the answer.
        if let Some(command) = text.trim_start().strip_prefix('/') {
            let (name, arg) = command
                .split_once(char::is_whitespace)
                .unwrap_or((command, ""));
            if let Some(outcome) = session.slash(name, arg).await {
                let text = match outcome? {
                    session::SlashOutcome::Said(said) => {
                        updates::send(
                            &self.out,
                            &session.id,
                            updates::chunk("agent_message_chunk", &said),
                        );
                        return Ok(json!({"stopReason": "end_turn"}));
                    }
                    session::SlashOutcome::Send(text) => text,
                };
                let stop = session.prompt(&text, Vec::new()).await?;
                return Ok(json!({"stopReason": stop}));
            }
            if let Some(invocation) = session.custom(name, arg).await {
                let stop = session.prompt_command(&invocation?).await?;
                return Ok(json!({"stopReason": stop}));
            }
        }
        let text = session.expand_command(&text).await?;
        let stop = session.prompt(&text, Vec::new()).await?;
        Ok(json!({"stopReason": stop}))
    }

    fn set_mode(&self, params: &Value) -> Result<Value, RpcError> {
        let session = self.session(params)?;
        let id = str_param(params, "modeId")?;
        let mode = modes::parse_mode(id).ok_or_else(|| {
            RpcError::invalid_params(format!("no mode `{id}`")).hint(format!(
                "the modes are {}",
                modes::MODES
                    .iter()
                    .map(|(m, ..)| m.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        session.set_mode(mode)?;
        updates::send(
            &self.out,
            &session.id,
            json!({"sessionUpdate": "current_mode_update", "currentModeId": mode.to_string()}),
        );
        Ok(json!({}))
    }
}

/// The `initialize` answer: protocol version 1 whatever the editor asked (ACP: the agent
/// answers with the version it supports; a client that cannot speak it disconnects), and what
/// tern offers. `images`: whether the configured model takes images.
fn initialize(images: bool) -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": images, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [{
            "id": AUTH_METHOD,
            "name": "API key in the environment",
            "description": "tern reads its model key from the environment it is started in: \
                ANTHROPIC_API_KEY, or OPENAI_API_KEY (OPENAI_BASE_URL for a local server); \
                set it in the editor's agent_servers env. Nothing to do at authenticate.",
        }],
        "agentInfo": {"name": "tern", "title": "tern", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The one authentication method: keys come from the environment.
const AUTH_METHOD: &str = "env";

fn authenticate(params: &Value) -> Result<Value, RpcError> {
    match params["methodId"].as_str() {
        Some(AUTH_METHOD) => Ok(json!({})),
        other => Err(
            RpcError::invalid_params(format!("unknown authentication method {other:?}"))
                .hint("tern's only method is `env`: set ANTHROPIC_API_KEY or OPENAI_API_KEY"),
        ),
    }
}
