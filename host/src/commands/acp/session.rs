//! One ACP session: one tern [`Engine`] in the session's `cwd`, with the editor's MCP servers
//! in its pool, the editor as its approver and [`Updates`] as its renderer. The ACP session id
//! is tern's session id, so `session/load` continues `$TERN_HOME/sessions/<id>.jsonl` like
//! `tern resume` does.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use serde_json::{Value, json};
use tern_config::{LoadOptions, PermissionMode};
use tern_gateway::Gateway;
use tern_protocol::RunStatus;
use tokio_util::sync::CancellationToken;

use super::{
    approver::AcpApprover,
    editor_fs::{ClientCaps, EditorFs},
    editor_terminal::{Cards, EditorTerminal},
    mcp_servers,
    rpc::{INVALID_REQUEST, Outbox, RpcError},
    updates::Updates,
};
use crate::{
    agent::{Engine, EngineOptions, Outputs},
    cli::RunFlags,
    workspace::Workspace,
};

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

/// The modes an editor may pick (ACP `SessionMode`s): tern's permission modes, without `yolo`
/// (which the command line can still set, and is then listed as the current one).
pub const MODES: &[(PermissionMode, &str, &str)] = &[
    (
        PermissionMode::Default,
        "Default",
        "ask before edits, commands and anything not read-only",
    ),
    (
        PermissionMode::AcceptEdits,
        "Accept edits",
        "file edits inside the workspace run without asking",
    ),
    (
        PermissionMode::ReadOnly,
        "Read-only",
        "every tool that is not read-only is denied",
    ),
    (
        PermissionMode::Plan,
        "Plan",
        "read-only tools and the todo list only; the agent ends with a plan (plan__exit) and writes nothing",
    ),
];

/// ACP `SessionModeState` for a session whose mode is `current`.
pub fn mode_state(current: PermissionMode) -> Value {
    let mut modes: Vec<Value> = MODES
        .iter()
        .map(|(m, name, description)| {
            json!({"id": m.to_string(), "name": name, "description": description})
        })
        .collect();
    if !MODES.iter().any(|(m, ..)| *m == current) {
        modes.push(json!({"id": current.to_string(), "name": current.to_string()}));
    }
    json!({"currentModeId": current.to_string(), "availableModes": modes})
}

/// The permission mode an ACP mode id names.
pub fn parse_mode(id: &str) -> Option<PermissionMode> {
    [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::ReadOnly,
        PermissionMode::Yolo,
        PermissionMode::Plan,
    ]
    .into_iter()
    .find(|m| m.to_string() == id)
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
    /// The editor-fs bridge the session's fs servers use, when the editor offers its files;
    /// its socket closes with the session.
    _editor_fs: Option<EditorFs>,
    /// The editor-terminal bridge the session's shell servers use, when the editor offers
    /// terminals.
    _editor_terminal: Option<EditorTerminal>,
}

/// What a tern slash command sent as a prompt came to.
pub enum SlashOutcome {
    /// Its output, for the editor as message chunks; the prompt ends there.
    Said(String),
    /// Text to send to the model instead (a custom command or an MCP prompt it expanded to).
    Send(String),
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
        let outcome = {
            let mut engine = self.engine.lock().await;
            match engine.as_mut() {
                Some(engine) => match engine.check_images(&images) {
                    Ok(()) => Ok(Some(match invocation {
                        Some(invocation) => engine.submit_with(invocation, images, &cancel).await,
                        None => engine.submit_with_images(text, images, &cancel).await,
                    })),
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

    /// Runs tern's own slash command `/name arg` (one [`SlashCommand::over_acp`] offers) the
    /// way the REPL does, its output captured for the editor instead of a terminal. `None` when
    /// `name` is not one of them (a server's prompt or text for the model).
    ///
    /// [`SlashCommand::over_acp`]: crate::slash_commands::SlashCommand::over_acp
    pub async fn slash(&self, name: &str, arg: &str) -> Option<Result<SlashOutcome, RpcError>> {
        let spec = crate::slash_commands::lookup(name).filter(|s| s.command.over_acp())?;
        let mut engine = self.engine.lock().await;
        let Some(engine) = engine.as_mut() else {
            return Some(Err(RpcError::internal("the session has finished")));
        };
        // No terminal: a screen over nothing (only `/expand` reads it, and it is not offered).
        let screen = crate::render::Screen::new(
            Box::new(std::io::sink()),
            Box::new(std::io::sink()),
            false,
            100,
        );
        let mut out: Vec<u8> = Vec::new();
        let next = crate::commands::repl::slash::Slash {
            engine,
            screen: &screen,
            costs: &self.costs,
            out: &mut out,
        }
        .run(spec.name, arg)
        .await;
        use crate::commands::repl::slash::Next;
        Some(match next {
            Ok(Next::Send(text)) => Ok(SlashOutcome::Send(text)),
            // Only the table's commands come here; custom ones go through `custom`.
            Ok(Next::Run(invocation)) => Ok(SlashOutcome::Send(invocation.text)),
            Ok(Next::Prompt | Next::Exit) => Ok(SlashOutcome::Said(
                String::from_utf8_lossy(&out).into_owned(),
            )),
            Err(e) => Err(RpcError::internal(format!("/{name} failed: {e}"))),
        })
    }

    /// `/name arg` when `name` is a custom command: the turn to run, or why its frontmatter
    /// cannot be applied; `None` for any other name.
    pub async fn custom(
        &self,
        name: &str,
        arg: &str,
    ) -> Option<Result<crate::custom_commands::Invocation, RpcError>> {
        let engine = self.engine.lock().await;
        let command = engine
            .as_ref()?
            .custom_commands()
            .into_iter()
            .find(|c| c.name == name)?;
        Some(
            command
                .invoke(arg)
                .map_err(|e| RpcError::invalid_params(format!("/{name}: {e}"))),
        )
    }

    /// `available_commands_update`'s list: tern's own slash commands that work without a
    /// terminal, the custom commands, then the servers' prompts as `server:prompt` (the REPL's `/SERVER:PROMPT`),
    /// expanded by tern when a prompt starts with `/` and one.
    pub async fn commands(&self) -> Vec<Value> {
        let mut own: Vec<Value> = crate::slash_commands::SLASH_COMMANDS
            .iter()
            .filter(|s| s.command.over_acp())
            .map(|s| {
                let mut c = json!({"name": s.name, "description": s.help});
                if !s.args.is_empty() {
                    c["input"] = json!({"hint": s.args});
                }
                c
            })
            .collect();
        let engine = self.engine.lock().await;
        let Some(engine) = engine.as_ref() else {
            return own;
        };
        // The custom commands (`.claude/commands/NAME.md`, …), as the REPL's /help lists them.
        own.extend(engine.custom_commands().into_iter().map(|c| {
            let mut v = json!({"name": c.name, "description": c.description});
            if !c.argument_hint.is_empty() {
                v["input"] = json!({"hint": c.argument_hint});
            }
            v
        }));
        let prompts: Vec<Value> = engine
            .prompts()
            .await
            .into_iter()
            .map(|p| {
                let mut c = json!({
                    "name": format!("{}:{}", p.server, p.name),
                    "description": p.description,
                });
                if !p.arguments.is_empty() {
                    let names: Vec<&str> = p.arguments.iter().map(|(n, _)| n.as_str()).collect();
                    c["input"] = json!({"hint": names.join(" ")});
                }
                c
            })
            .collect();
        own.extend(prompts);
        own
    }

    /// `text` with a leading `/server:prompt args` expanded into the prompt's messages; other
    /// text as it is.
    pub async fn expand_command(&self, text: &str) -> Result<String, RpcError> {
        let Some(command) = text.trim_start().strip_prefix('/') else {
            return Ok(text.to_string());
        };
        let (name, arg) = command
            .split_once(char::is_whitespace)
            .unwrap_or((command, ""));
        let Some((server, prompt)) = name.split_once(':') else {
            return Ok(text.to_string());
        };
        if self.turn.lock().is_ok_and(|t| t.is_some()) {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!("session {} is already running a prompt", self.id),
            )
            .hint("wait for its response, or send session/cancel first"));
        }
        let engine = self.engine.lock().await;
        let Some(engine) = engine.as_ref() else {
            return Err(RpcError::internal("the session has ended"));
        };
        let prompts = engine.prompts().await;
        let info = prompts
            .iter()
            .find(|p| p.server == server && p.name == prompt)
            .ok_or_else(|| {
                RpcError::invalid_params(format!("no prompt `{prompt}` on server `{server}`"))
                    .hint("the editor's command list (available_commands_update) has them")
            })?;
        let args = crate::commands::repl::prompt_arguments(&info.arguments, arg)
            .map_err(|e| RpcError::invalid_params(format!("/{name}: {e}")))?;
        engine
            .expand_prompt(server, prompt, args)
            .await
            .map_err(|e| RpcError::internal(format!("/{name} failed: {e}")))
    }

    /// The working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}
