//! A session's commands: tern's own slash commands, the custom commands and the servers' MCP
//! prompts, as `available_commands_update` lists them and a prompt starting with `/` runs them.

use serde_json::{Value, json};

use super::Session;
use crate::commands::acp::rpc::{INVALID_REQUEST, RpcError};

/// What a tern slash command sent as a prompt came to.
pub enum SlashOutcome {
    /// Its output, for the editor as message chunks; the prompt ends there.
    Said(String),
    /// Text to send to the model instead (a custom command or an MCP prompt it expanded to).
    Send(String),
}

impl Session {
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
}
