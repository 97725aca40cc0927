//! The MCP face of the agent server: the `run` tool, its description (built from the profiles),
//! its honest annotations (from the permission mode), progress, and the result contract.
//! The only file of the host crate that serves MCP; the sub-run itself is in [`super::subrun`].

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

use rmcp::{
    Peer, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::schema_for_output, wrapper::Parameters},
    model::{
        CallToolResult, ContentBlock, MetaObject, ProgressNotificationParam, RequestMetaObject,
        ServerCapabilities, ServerConfig, ToolAnnotations,
    },
    tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tern_config::{AgentProfile, PermissionMode};
use tokio_util::sync::CancellationToken;

use super::{
    Settings,
    report::RunReport,
    roots,
    subrun::{self, Call},
};
use crate::agent::delegated::{ReportedUsage, USAGE_META};

/// How long the client may take to answer `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);
/// The first revision without server-to-client requests (so without `roots/list`).
const STATELESS_REVISION: &str = "2026-07-28";
/// How long progress still queued when a run ends may take to go out.
const PROGRESS_FLUSH: Duration = Duration::from_secs(2);

/// Parameters of `run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct RunParams {
    /// What the sub-agent should do or find out. It sees nothing of your conversation: include
    /// everything it needs (names, paths, what a good answer looks like).
    pub goal: String,
    /// The directory it works in: relative to the first root, or an absolute path inside a
    /// root. Default: the first root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The profile to run with (see the tool's description). Default: no profile — every
    /// tool, no extra instructions.
    #[serde(default)]
    pub profile: Option<String>,
    /// The most model turns it may take (capped by the profile's or the config's max_steps).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_steps: Option<u32>,
}

/// The agent server. Cheap to clone (rmcp clones the handler).
#[derive(Clone)]
pub struct AgentServer {
    settings: Arc<Settings>,
    /// Built once, with the description and annotations of this server's `run`.
    tool_router: ToolRouter<AgentServer>,
}

#[tool_router]
impl AgentServer {
    /// A server whose `run` offers `profiles`.
    pub(crate) fn new(settings: Arc<Settings>, profiles: &BTreeMap<String, AgentProfile>) -> Self {
        let mut tool_router = Self::tool_router();
        if let Some(route) = tool_router.map.get_mut("run") {
            route.attr.description = Some(describe(&settings, profiles).into());
            route.attr.annotations = Some(annotations(settings.mode));
            let mut schema = (*route.attr.input_schema).clone();
            if !profiles.is_empty()
                && let Some(profile) = schema
                    .get_mut("properties")
                    .and_then(|p| p.get_mut("profile"))
                    .and_then(Value::as_object_mut)
            {
                profile.insert("enum".into(), json!(profiles.keys().collect::<Vec<_>>()));
            }
            route.attr.input_schema = Arc::new(schema);
        }
        Self {
            settings,
            tool_router,
        }
    }

    #[tool(
        name = "run",
        description = "Delegate a goal to a sub-agent (described when the server starts).",
        output_schema = schema_for_output::<RunReport>()
    )]
    async fn run(
        &self,
        Parameters(p): Parameters<RunParams>,
        cancel: CancellationToken,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> CallToolResult {
        let s = &self.settings;
        if s.depth > s.max_depth {
            return failure(format!(
                "Not available: this run is already a sub-agent at the deepest level allowed \
                 (max depth {}), so it cannot delegate again. Do the work yourself.",
                s.max_depth
            ));
        }
        if p.goal.trim().is_empty() {
            return failure("`goal` is empty: say what the sub-agent should do".into());
        }
        let roots = match self.roots(&peer, &meta).await {
            Ok(roots) => roots,
            Err(e) => return failure(e),
        };
        let cwd = match roots::working_dir(&roots, p.cwd.as_deref()) {
            Ok(cwd) => cwd,
            Err(e) => return failure(e.to_string()),
        };
        let call = Call {
            goal: p.goal,
            cwd,
            profile: p.profile.filter(|name| !name.trim().is_empty()),
            max_steps: p.max_steps,
        };

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let token = meta.get_progress_token();
        let forward = tokio::spawn(async move {
            let mut n = 0.0;
            while let Some(message) = rx.recv().await {
                n += 1.0;
                if let Some(token) = &token {
                    let param =
                        ProgressNotificationParam::new(token.clone(), n).with_message(message);
                    let _ = peer.notify_progress(param).await;
                }
            }
        });
        let active = s.enter();
        let outcome = subrun::run(s, call, &cancel, tx).await;
        drop(active);
        // The run's last event dropped the sender: what is queued goes out before the result.
        let _ = tokio::time::timeout(PROGRESS_FLUSH, forward).await;

        match outcome {
            Ok(report) => result(&report),
            Err(message) => failure(message),
        }
    }
}

impl AgentServer {
    /// The roots of this call: `--root`, else the client's (`roots/list`), else the directory
    /// the server runs in. Canonical.
    ///
    /// `roots/list` is a request to the client, which the 2026-07-28 revision no longer allows
    /// (roots are deprecated there, SEP-2577, hence the `allow`): a session of that revision
    /// gets the working directory, where its client started the server (tern starts it in the
    /// run's directory).
    #[allow(deprecated)]
    async fn roots(
        &self,
        peer: &Peer<RoleServer>,
        meta: &RequestMetaObject,
    ) -> Result<Vec<PathBuf>, String> {
        if !self.settings.roots.is_empty() {
            return Ok(self.settings.roots.clone());
        }
        let info = peer.peer_info();
        let stateless = meta
            .protocol_version()
            .or_else(|| info.as_ref().map(|i| i.protocol_version.clone()))
            .is_some_and(|v| v.to_string().as_str() >= STATELESS_REVISION);
        let offers_roots = info.is_some_and(|i| i.capabilities.roots.is_some());
        if stateless || !offers_roots {
            return roots::canonical(std::slice::from_ref(&self.settings.here))
                .map_err(|e| e.to_string());
        }
        let listed = tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots())
            .await
            .map_err(|_| format!("the client did not answer roots/list in {ROOTS_TIMEOUT:?}"))?
            .map_err(|e| format!("roots/list failed: {e}"))?;
        let mut paths = Vec::new();
        for root in &listed.roots {
            match roots::from_uri(&root.uri) {
                Ok(path) => paths.push(path),
                Err(e) => tracing::warn!("ignoring root: {e}"),
            }
        }
        roots::canonical(&paths).map_err(|e| e.to_string())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AgentServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                "tern-agent",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "tern as a tool: `run` hands a goal to a tern sub-agent, which works in its own \
                 context inside this server's roots and returns its final answer."
                    .to_string(),
            )
    }
}

/// The description the calling model reads: what delegating is for, what sub-agents may do
/// here, and the profiles. The same at every depth: clients pin a tool's definition (tern
/// does), and an agent server one level down must not look like a changed tool — the depth
/// limit is an error of the call instead.
fn describe(settings: &Settings, profiles: &BTreeMap<String, AgentProfile>) -> String {
    let mut text = String::from(
        "Delegate a goal to a sub-agent: a separate agent run with its own fresh context, \
         which works until it can answer and returns only its final answer (with its run id, \
         steps, tokens and cost). Use it for self-contained work whose intermediate steps you \
         do not need to see — searching a large code base, reading many files, reviewing a \
         change — to keep your own context small. It sees nothing of this conversation: put \
         everything it needs in `goal`. Independent goals can be delegated in parallel: make \
         several calls in one turn.\n\n",
    );
    text.push_str(&match settings.mode {
        PermissionMode::ReadOnly => "Sub-agents here are read-only: they can read and search, \
             not change files or run commands."
            .to_string(),
        mode => format!(
            "Sub-agents here work in permission mode `{mode}`; whatever would need approval \
             is denied."
        ),
    });
    if profiles.is_empty() {
        text.push_str("\n\nNo profiles are configured: a sub-agent has every tool.");
    } else {
        text.push_str("\n\nProfiles (`profile`):");
        for (name, profile) in profiles {
            text.push_str(&format!("\n- {name}: {}", profile.description.trim()));
        }
        text.push_str("\nWithout a profile, a sub-agent has every tool.");
    }
    text
}

/// Read-only exactly when every sub-run is (the permission mode is a property of the server,
/// not of a call, so the annotation can be honest): then the caller may run several at once
/// and allow them without asking.
fn annotations(mode: PermissionMode) -> ToolAnnotations {
    let read_only = mode == PermissionMode::ReadOnly;
    ToolAnnotations::from_raw(
        Some("Run a sub-agent".into()),
        Some(read_only),
        Some(!read_only),
        Some(false),
        Some(true),
    )
}

/// A run's result: its text, its report as structured content, its tokens in `_meta`.
fn result(report: &RunReport) -> CallToolResult {
    let content = vec![ContentBlock::text(report.text())];
    let mut result = if report.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = serde_json::to_value(report).ok();
    let usage = ReportedUsage::new(&report.usage(), report.cost_usd);
    let mut meta = MetaObject::new();
    meta.insert(
        USAGE_META.into(),
        serde_json::to_value(usage).unwrap_or(Value::Null),
    );
    result.meta = Some(meta);
    result
}

/// A call that started no run: an error the calling model can act on.
fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
