//! One ACP session: one tern [`Engine`] in the session's `cwd`, with the editor's MCP servers
//! in its pool, the editor as its approver and [`Updates`] as its renderer. The ACP session id
//! is tern's session id, so `session/load` continues `$TERN_HOME/sessions/<id>.jsonl` like
//! `tern resume` does.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use serde_json::Value;
use tern_config::{LoadOptions, PermissionMode};
use tern_gateway::Gateway;
use tern_protocol::RunStatus;
use tokio_util::sync::CancellationToken;

use super::{
    approver::AcpApprover,
    editor_fs::{ClientCaps, EditorFs},
    editor_terminal::{Cards, EditorTerminal},
    mcp_servers, plan,
    rpc::{INVALID_REQUEST, Outbox, RpcError},
    updates::{self, Updates},
};
use crate::{
    agent::{Engine, EngineOptions, Outputs},
    cli::RunFlags,
    workspace::Workspace,
};

mod slash;

pub use slash::SlashOutcome;

/// What every session starts from: the command line of `tern acp`.
pub struct Base {
    pub load: LoadOptions,
    pub flags: RunFlags,
}

impl Base {
    /// Whether the model `tern acp` was started with takes images (`promptCapabilities.image`):
    /// the config of the directory it runs in, with its flags; a model tern knows nothing about
    /// counts as taking them (its server judges). No model configured: no.
    pub fn takes_images(&self) -> bool {
        let Ok(here) = std::env::current_dir() else {
            return false;
        };
        let Ok(mut ws) = Workspace::load(Some(&here), &self.load) else {
            return false;
        };
        let _ = self.flags.apply(&mut ws.config);
        tern_model::ResolvedModelConfig::resolve(&ws.config.model, &|k| ws.var(k)).is_ok_and(|r| {
            !matches!(
                r.image_support().takes,
                tern_model::vision::Takes::No { .. }
            )
        })
    }

    /// `$TERN_HOME` and its folders, as this process resolves them (the same for every `cwd`).
    pub fn paths(&self) -> Option<tern_config::ConfigPaths> {
        let here = std::env::current_dir().ok()?;
        tern_config::ConfigPaths::resolve(&here, &|k: &str| std::env::var(k).ok()).ok()
    }
}

/// A running session.
pub struct Session {
    pub id: String,
    pub cwd: PathBuf,
    /// `$TERN_HOME/sessions/` of this session's workspace.
    pub sessions_dir: PathBuf,
    /// `None` once finished.
    engine: tokio::sync::Mutex<Option<Engine>>,
    gateway: Arc<Gateway>,
    /// The turn running now, to cancel it.
    turn: Mutex<Option<CancellationToken>>,
    /// The loosest mode this session may have (`--mode` of a parent run's ceiling).
    ceiling: Option<PermissionMode>,
    /// Each model call's usage, for `/cost`.
    costs: Arc<std::sync::Mutex<Vec<(u32, tern_protocol::Usage)>>>,
    /// How to reach the editor (to ask it to approve a plan).
    out: Outbox,
    /// The plan the running turn proposed, if it did (plan mode's `plan__exit`).
    proposed: Arc<Mutex<Option<plan::Proposed>>>,
    /// The editor-fs bridge the session's fs servers use, when the editor offers its files;
    /// its socket closes with the session.
    _editor_fs: Option<EditorFs>,
    /// The editor-terminal bridge the session's shell servers use, when the editor offers
    /// terminals.
    _editor_terminal: Option<EditorTerminal>,
}

/// Points every built-in fs server of `config` at the editor-fs bridge on `socket`: same
/// tools, same roots and deny rules, text through the editor.
fn through_editor(config: &mut tern_config::Config, socket: &Path) {
    for server in config.mcp_servers.values_mut() {
        if server.builtin() != Some(tern_config::Builtin::Fs) {
            continue;
        }
        if let tern_config::Transport::Stdio { args, .. } = &mut server.transport {
            args.push("--editor-socket".into());
            args.push(socket.to_string_lossy().into_owned());
        }
    }
}

/// Points every built-in shell server of `config` at the editor-terminal bridge on `socket`:
/// same tool and policy, each command shown in a terminal of the editor.
fn through_editor_terminal(config: &mut tern_config::Config, socket: &Path) {
    for server in config.mcp_servers.values_mut() {
        if server.builtin() != Some(tern_config::Builtin::Shell) {
            continue;
        }
        if let tern_config::Transport::Stdio { args, .. } = &mut server.transport {
            args.push("--editor-socket".into());
            args.push(socket.to_string_lossy().into_owned());
        }
    }
}

/// Fails unless `cwd` is an absolute directory (ACP requires absolute paths).
fn check_cwd(cwd: &str) -> Result<PathBuf, RpcError> {
    let path = PathBuf::from(cwd);
    if !path.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "`cwd` must be an absolute path, got `{cwd}`"
        )));
    }
    if !path.is_dir() {
        return Err(
            RpcError::invalid_params(format!("`cwd` is not a directory: {cwd}"))
                .hint("open a folder (a project) in the editor first"),
        );
    }
    Ok(path)
}

/// Session ids name files: only what tern's own ids are made of.
pub fn check_id(id: &str) -> Result<(), RpcError> {
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(RpcError::invalid_params(format!(
            "`sessionId` `{id}` is not a tern session id"
        ))
        .hint("use an id from session/list or session/new"));
    }
    Ok(())
}

impl Session {
    /// Starts a session in `cwd` with the editor's `mcp_servers`; continues session `resume`
    /// when given.
    pub async fn start(
        out: &Outbox,
        base: &Base,
        caps: ClientCaps,
        cwd: &str,
        mcp: &[Value],
        resume: Option<String>,
    ) -> Result<Arc<Session>, RpcError> {
        let cwd = check_cwd(cwd)?;
        let failed = |e: anyhow::Error| {
            let mut msg = format!("{e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!("\ncaused by: {cause}"));
            }
            RpcError::internal(msg)
        };
        // The configured servers first, so the editor's are named clear of them.
        let ws = Workspace::load(Some(&cwd), &base.load).map_err(failed)?;
        let taken = ws.config.mcp_servers.keys().cloned().collect();
        let (overrides, _names) = mcp_servers::overrides(mcp, taken)?;
        let mut ws = if overrides.is_empty() {
            ws
        } else {
            let mut load = base.load.clone();
            load.overrides.extend(overrides);
            Workspace::load(Some(&cwd), &load).map_err(failed)?
        };
        // Bound by the managed policy either way; the notice has no place over ACP.
        let _ = base.flags.apply(&mut ws.config);
        // No key: ACP's "authentication required", which editors answer by showing the auth
        // methods (tern's says which variables to set).
        if let Err(
            e @ (tern_model::ConfigError::NoProvider | tern_model::ConfigError::MissingKey { .. }),
        ) = tern_model::ResolvedModelConfig::resolve(&ws.config.model, &|k| ws.var(k))
        {
            return Err(
                RpcError::new(super::rpc::AUTH_REQUIRED, e.to_string()).hint(
                    "set the key in the environment the editor starts `tern acp` with (Zed: \
                 agent_servers.tern.env), then restart the agent",
                ),
            );
        }
        if let Some(id) = &resume {
            check_id(id)?;
            crate::agent::session::load(&ws.paths.sessions_dir(), id)
                .map_err(|e| RpcError::new(super::rpc::RESOURCE_NOT_FOUND, e.to_string()))?;
        }

        let link: Arc<OnceLock<Arc<Gateway>>> = Arc::default();
        let session_id = Arc::new(OnceLock::<String>::new());
        // The editor's files, when it offers them: the same fs servers, their text through it.
        let editor_fs = if caps.fs {
            let bridge = EditorFs::start(out.clone(), session_id.clone()).map_err(|e| {
                RpcError::internal(format!("cannot open the editor-fs socket: {e}"))
                    .hint("tern needs a writable temporary directory ($TMPDIR)")
            })?;
            through_editor(&mut ws.config, bridge.socket());
            Some(bridge)
        } else {
            None
        };
        // The editor's terminals, when it offers them: the same shell servers, each command
        // shown in one (and still run under tern's sandbox, by tern-shell's runner).
        let cards = Cards::default();
        let editor_terminal = if caps.terminal {
            let bridge = EditorTerminal::start(out.clone(), session_id.clone(), cards.clone())
                .map_err(|e| {
                    RpcError::internal(format!("cannot open the editor-terminal socket: {e}"))
                        .hint("tern needs a writable temporary directory ($TMPDIR)")
                })?;
            through_editor_terminal(&mut ws.config, bridge.socket());
            Some(bridge)
        } else {
            None
        };
        let updates = Updates::new(
            out.clone(),
            session_id.clone(),
            ws.cwd.clone(),
            link.clone(),
            editor_fs.as_ref().map(EditorFs::written),
        )
        .with_cards(cards);
        let approver = Arc::new(AcpApprover::new(out.clone(), session_id.clone()));
        let options = EngineOptions {
            goal: "(acp)".into(),
            session: resume,
            clear_in_place: true,
            ..EngineOptions::default()
        };
        let outputs =
            Outputs::for_workspace(&ws, Box::new(updates)).map_err(|e| failed(e.into()))?;
        let engine = Engine::start(&ws, options, outputs, approver)
            .await
            .map_err(failed)?;
        if let Some(msg) = engine.required_failure() {
            engine.report_error(msg.clone());
            engine.finish(RunStatus::Error, None).await;
            return Err(RpcError::internal(msg));
        }
        let costs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let proposed = Arc::default();
        engine.subscribe(Box::new(plan::PlanCatcher(Arc::clone(&proposed))));
        engine.subscribe(Box::new(crate::commands::repl::slash::CostMeter(
            costs.clone(),
        )));
        let gateway = engine.gateway();
        let _ = link.set(gateway.clone());
        let _ = session_id.set(engine.session_id().to_string());
        Ok(Arc::new(Session {
            id: engine.session_id().to_string(),
            cwd: ws.cwd.clone(),
            sessions_dir: ws.paths.sessions_dir(),
            engine: tokio::sync::Mutex::new(Some(engine)),
            gateway,
            turn: Mutex::default(),
            // A parent's ceiling and the managed policy's bound (no yolo), the tighter.
            ceiling: match (
                ws.cli.ceiling.as_ref().map(|c| c.mode),
                ws.config.managed.as_ref().map(|m| m.max_mode()),
            ) {
                (Some(a), Some(b)) => Some(a.at_most(b)),
                (a, b) => a.or(b),
            },
            costs,
            out: out.clone(),
            proposed,
            _editor_fs: editor_fs,
            _editor_terminal: editor_terminal,
        }))
    }

    /// The mode calls are decided under now.
    pub fn mode(&self) -> PermissionMode {
        self.gateway.mode()
    }

    /// Switches the permission mode for the next calls (never past the ceiling).
    pub fn set_mode(&self, mode: PermissionMode) -> Result<(), RpcError> {
        if let Some(ceiling) = self.ceiling
            && mode.at_most(ceiling) != mode
        {
            return Err(RpcError::invalid_params(format!(
                "mode `{mode}` is looser than `{ceiling}`, the most this run may use"
            )));
        }
        self.gateway.set_mode(mode);
        Ok(())
    }

    /// Whether this session's model takes images (its project's config may differ from the
    /// directory `tern acp` started in, which `initialize` answered for).
    pub async fn takes_images(&self) -> bool {
        // A running turn holds the engine: then the prompt is refused as "already running"
        // anyway, and nothing need wait for the turn here.
        let Ok(engine) = self.engine.try_lock() else {
            return true;
        };
        engine.as_ref().is_some_and(|e| {
            !matches!(
                e.image_support().takes,
                tern_model::vision::Takes::No { .. }
            )
        })
    }

    /// Runs one prompt (with the images the editor sent) to its end; the ACP stop reason, or
    /// an error for a failed turn. Images the model cannot take are invalid params: nothing is
    /// sent.
    pub async fn prompt(
        &self,
        text: &str,
        images: Vec<crate::agent::attach::Attachment>,
    ) -> Result<&'static str, RpcError> {
        self.turn(text, None, images).await
    }

    /// Runs a custom command's turn (its model and allowed-tools for that turn only).
    pub async fn prompt_command(
        &self,
        invocation: &crate::custom_commands::Invocation,
    ) -> Result<&'static str, RpcError> {
        self.turn(&invocation.text, Some(invocation), Vec::new())
            .await
    }

    async fn turn(
        &self,
        text: &str,
        invocation: Option<&crate::custom_commands::Invocation>,
        images: Vec<crate::agent::attach::Attachment>,
    ) -> Result<&'static str, RpcError> {
        let cancel = {
            let mut turn = self.turn.lock().map_err(|_| RpcError::internal("lock"))?;
            if turn.is_some() {
                return Err(RpcError::new(
                    INVALID_REQUEST,
                    format!("session {} is already running a prompt", self.id),
                )
                .hint("wait for its response, or send session/cancel first"));
            }
            let token = CancellationToken::new();
            *turn = Some(token.clone());
            token
        };
        if let Ok(mut proposed) = self.proposed.lock() {
            *proposed = None;
        }
        let outcome = {
            let mut engine = self.engine.lock().await;
            match engine.as_mut() {
                Some(engine) => match engine.check_images(&images) {
                    Ok(()) => {
                        let mut outcome = match invocation {
                            Some(invocation) => {
                                engine.submit_with(invocation, images, &cancel).await
                            }
                            None => engine.submit_with_images(text, images, &cancel).await,
                        };
                        // A plan-mode turn ended with a plan: approved in the editor, the
                        // work starts at once, in this prompt.
                        while matches!(outcome.status, RunStatus::Success)
                            && !cancel.is_cancelled()
                            && let Some(next) = self.approve_plan(engine, &cancel).await
                        {
                            outcome = engine.submit_with_images(&next, Vec::new(), &cancel).await;
                        }
                        Ok(Some(outcome))
                    }
                    Err(refused) => Err(refused),
                },
                None => Ok(None),
            }
        };
        if let Ok(mut turn) = self.turn.lock() {
            *turn = None;
        }
        let outcome = outcome.map_err(|refused| {
            let (message, hint) = refused.split_once("\nhint: ").unwrap_or((&refused, ""));
            RpcError::invalid_params(message).hint(hint)
        })?;
        let Some(outcome) = outcome else {
            return Err(RpcError::internal("the session has ended"));
        };
        if cancel.is_cancelled() {
            return Ok("cancelled");
        }
        match outcome.status {
            RunStatus::Success => Ok("end_turn"),
            RunStatus::MaxSteps => Ok("max_turn_requests"),
            // The answer was cut by the model's output limit: ACP's own stop reason for it.
            RunStatus::Truncated => Ok("max_tokens"),
            RunStatus::Cancelled => Ok("cancelled"),
            RunStatus::Error => Err(RpcError::internal(
                outcome.error.unwrap_or_else(|| "the turn failed".into()),
            )),
        }
    }

    /// When the turn just ended proposed a plan, asks the editor to approve it
    /// ([`plan`]): on a yes, switches the mode (telling the editor), saves the plan and
    /// returns the text the next turn starts with; `None` keeps planning.
    async fn approve_plan(&self, engine: &Engine, cancel: &CancellationToken) -> Option<String> {
        let proposed = self.proposed.lock().ok()?.take()?;
        let allowed = |m: PermissionMode| self.ceiling.is_none_or(|c| m.at_most(c) == m);
        let mode = tokio::select! {
            mode = plan::ask(&self.out, &self.id, &proposed, &allowed) => mode?,
            () = cancel.cancelled() => return None,
        };
        self.set_mode(mode).ok()?;
        updates::send(
            &self.out,
            &self.id,
            serde_json::json!({"sessionUpdate": "current_mode_update",
                "currentModeId": mode.to_string()}),
        );
        let (text, problems) = engine.keep_approved_plan(&proposed.plan, mode).await;
        for problem in problems {
            tracing::warn!("{problem}");
            updates::send(&self.out, &self.id, updates::notice(&problem));
        }
        Some(text)
    }

    /// Cancels the running turn and its calls, if any (ACP `session/cancel`).
    pub fn cancel(&self) {
        if let Ok(turn) = self.turn.lock()
            && let Some(t) = turn.as_ref()
        {
            t.cancel();
        }
    }

    /// Cancels what runs, then writes `run_finished` and stops the session's servers.
    pub async fn finish(&self) {
        self.cancel();
        let engine = self.engine.lock().await.take();
        if let Some(engine) = engine {
            engine.finish(RunStatus::Success, None).await;
        }
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}
