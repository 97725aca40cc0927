//! The run API of an [`Engine`]: turns, compaction, what the run has (tools, servers, prompts,
//! resources, usage) and its end. Everything a driver (REPL, `tern run`, `tern acp`) calls
//! besides [`Engine::start`] and the session's history.

use std::sync::Arc;

use tern_gateway::Gateway;
use tern_mcp::{PromptInfo, ServerState, ServerStatus, ToolTable};
use tern_protocol::{Event, Image, RunStatus, Usage};
use tokio_util::sync::CancellationToken;

use super::{Engine, attach::Attachment, hook_points};
use crate::agent::{
    bus::Subscriber,
    context::budget::Breakdown,
    conversation::{Ask, Reason},
    delegated::Delegated,
    run_loop::TurnOutcome,
    servers::{point_todo_at, todo_state_path},
    session,
};

impl Engine {
    /// The run's gateway, for a driver that must reach it while a turn holds the engine: `tern
    /// acp` switches the permission mode from the editor and reads the tool table to show each
    /// call.
    pub fn gateway(&self) -> Arc<Gateway> {
        self.gateway.clone()
    }

    /// Adds a subscriber to the run's events.
    pub fn subscribe(&self, subscriber: Box<dyn Subscriber>) {
        self.bus.subscribe(subscriber);
    }

    /// This run's id (`runs/<run_id>/`).
    pub fn run_id(&self) -> &str {
        self.bus.run_id()
    }

    /// Where events from outside the engine go (a replay's comparisons with its recording).
    pub fn sink(&self) -> tern_protocol::EventSink {
        self.bus.sink()
    }

    /// Reports an error the run itself did not produce (e.g. a required server that failed).
    pub fn report_error(&self, message: String) {
        self.bus.emit(Event::Error { message });
    }

    /// A required server that failed, described with its stderr tail: the run must not start.
    pub fn required_failure(&self) -> Option<String> {
        self.pool.required_failure().map(|s| {
            let reason = match &s.state {
                ServerState::Failed { reason } => reason.clone(),
                _ => "failed".into(),
            };
            let mut msg = format!("required server `{}` failed: {reason}", s.name);
            for l in &s.stderr_tail {
                msg.push_str(&format!("\n  {l}"));
            }
            msg
        })
    }

    /// Runs one user input to its end (an answer, `max_steps`, an error or `cancel`) and saves
    /// the new messages to the session.
    pub async fn submit(&mut self, input: &str, cancel: &CancellationToken) -> TurnOutcome {
        self.submit_with_images(input, Vec::new(), cancel).await
    }

    /// [`Self::submit`] with images the person attached. A model that takes no images (or an
    /// image over its limit) fails the turn before anything is sent, with a hint.
    pub async fn submit_with_images(
        &mut self,
        input: &str,
        images: Vec<Attachment>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        if let Err(message) = self.check_images(&images) {
            return self.refuse_turn(message);
        }
        let images: Vec<Image> = images.into_iter().map(|a| a.image).collect();
        // The workspace is recorded while the first request goes out; the first tool call waits
        // for it ([`checkpoints::Gate`]). The message is redacted, like the transcript.
        self.gate
            .start(
                self.checkpointer.clone(),
                self.session_id.clone(),
                self.redactor.redact(input),
            )
            .await;
        self.bus.emit(Event::UserMessage {
            text: self.redactor.redact(input),
        });
        let before = self.conv.transcript.len();
        let delegated_before = self.delegated.total();
        let outcome = self.hooked_turn(input, images, cancel).await;
        // A command's rules and the skills loaded in this turn end with it.
        self.gateway.end_turn();
        self.gate.wait().await;
        self.usage.add(&outcome.usage);
        self.steps += outcome.steps;
        // Sub-agents' tokens count in the turn that delegated to them.
        let delegated = self.delegated.total().since(&delegated_before);
        let usage = delegated.add_usage(&outcome.usage);
        self.bus.emit(Event::TurnFinished {
            status: outcome.status,
            steps: outcome.steps,
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_tokens: usage.cache_read,
            cache_creation_tokens: usage.cache_creation,
            cost_usd: delegated.add_cost(self.cost(&outcome.usage)),
            context_tokens: outcome.context_tokens,
            context_window: self.conv.budget.limits().window,
            model: Some(self.model_name().to_string()),
            mode: Some(self.gateway.mode().to_string()),
        });
        self.save(before);
        let cost = delegated.add_cost(self.cost(&outcome.usage));
        if let Err(e) = session::note_turn(&self.sessions_dir, &self.session_id, cost) {
            tracing::warn!("turn not noted in the session's meta file: {e}");
        }
        outcome
    }

    /// Runs a custom command's turn (with any images attached to it, `tern run --image`):
    /// [`Self::submit_with_images`] with its `model` for this turn only (the session's model is
    /// back for the next) and its `allowed-tools` as allow rules that end with the turn. A model
    /// that cannot be used fails the turn before anything is sent.
    pub async fn submit_with(
        &mut self,
        invocation: &crate::custom_commands::Invocation,
        images: Vec<Attachment>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let scope = &invocation.scope;
        for note in &scope.notes {
            self.bus.emit(Event::Notice {
                message: note.clone(),
            });
        }
        if let Err(e) = self.gateway.begin_turn(&scope.allow) {
            return self.refuse_turn(format!("the command's allowed-tools: {e}"));
        }
        let previous = match &scope.model {
            Some(model) => {
                let snapshot = self.model_snapshot();
                if let Err(e) = self.set_model(model) {
                    self.gateway.end_turn();
                    return self.refuse_turn(format!("the command's model: {e}"));
                }
                Some(snapshot)
            }
            None => None,
        };
        let outcome = self
            .submit_with_images(&invocation.text, images, cancel)
            .await;
        if let Some(snapshot) = previous {
            self.restore_model(snapshot);
        }
        outcome
    }

    fn refuse_turn(&self, message: String) -> TurnOutcome {
        self.bus.emit(Event::Error {
            message: message.clone(),
        });
        TurnOutcome::failed(message)
    }

    /// Compacts the conversation now (`/compact [focus]`): older tool output elided and older
    /// turns summarized, with `focus` given to the summary.
    pub async fn compact(&mut self, focus: Option<&str>) -> Breakdown {
        let tools = self.agent.tools.tools();
        let mut usage = Usage::default();
        let cancel = CancellationToken::new();
        self.pre_compact(focus).await;
        self.agent
            .compact(
                &mut self.conv,
                &tools,
                Ask {
                    focus,
                    ..Ask::new(Reason::Manual)
                },
                &mut usage,
                &cancel,
            )
            .await;
        self.usage.add(&usage);
        self.save(self.conv.transcript.len());
        self.context()
    }

    /// Where the next request's tokens would go.
    pub fn context(&mut self) -> Breakdown {
        let tools = self.agent.tools.tools();
        self.conv
            .budget
            .breakdown(&self.agent.settings.system, &tools, &self.conv.transcript)
    }

    /// The model's context window and the answer's reserve, when known.
    pub fn window(&self) -> (Option<u64>, u64) {
        let limits = self.conv.budget.limits();
        (limits.window, limits.reserve)
    }

    /// The tool table as the model sees it now.
    pub fn tools(&self) -> Arc<ToolTable> {
        self.gateway.refresh_table()
    }

    /// Every server and its state.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.pool.statuses()
    }

    /// The prompts the servers offer (`/SERVER:PROMPT` in the REPL).
    pub async fn prompts(&self) -> Vec<PromptInfo> {
        self.pool.prompts().await
    }

    /// Expands one server prompt into text to send as user input.
    pub async fn expand_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, tern_mcp::CallError> {
        self.pool.get_prompt(server, prompt, arguments).await
    }

    /// The resources the servers offer (`@SERVER:URI` in the REPL, `/mcp`).
    pub async fn resources(&self) -> Vec<tern_mcp::ResourceInfo> {
        self.pool.resources().await
    }

    /// [`Self::resources`] as a task of its own (it holds the pool, not the engine), so the REPL
    /// can refresh its completions while it waits for input.
    pub fn resources_later(
        &self,
    ) -> impl std::future::Future<Output = Vec<tern_mcp::ResourceInfo>> + Send + 'static {
        let pool = self.pool.clone();
        async move { pool.resources().await }
    }

    /// Reads a server's resource for the user's next message; the read is an event, and the
    /// text passes the redactor before it is attached.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<tern_mcp::ResourceText, tern_mcp::CallError> {
        let mut read = self.pool.read_resource(server, uri).await?;
        read.text = self.gateway.redactor().redact(&read.text);
        self.bus.emit(Event::ResourceAttached {
            server: server.to_string(),
            uri: uri.to_string(),
            mime_type: read.mime_type.clone(),
            chars: read.text.chars().count(),
        });
        Ok(read)
    }

    /// Allows calls matching `rule` for the rest of this run.
    pub fn allow(&self, rule: &str) -> Result<(), String> {
        self.gateway
            .allow_for_session(rule)
            .map_err(|e| e.to_string())
    }

    /// Starts a fresh conversation (a new session); returns its id. The hooks see the old
    /// session end (`SessionEnd`, reason `clear`) and the new one start (`SessionStart`,
    /// source `clear`), as in Claude Code.
    ///
    /// With [`EngineOptions::clear_in_place`] (ACP) the id stays: the session file gets an
    /// empty snapshot line, so loading it gives the cleared conversation (what a rewind of the
    /// conversation does), and the session's todo list is emptied.
    ///
    /// [`EngineOptions::clear_in_place`]: super::EngineOptions::clear_in_place
    pub async fn clear(&mut self) -> &str {
        self.session_end(hook_points::EndReason::Clear).await;
        self.conv.transcript.clear();
        self.conv.budget.forget_from(0);
        self.conv.compacted = false;
        if self.clear_in_place {
            self.clear_session_file();
        } else {
            self.session_id = session::new_session_id();
            self.bus.set_session_id(&self.session_id);
            // The todo list follows the session: the running todo server reads the new file
            // (none yet: an empty list) from its next call, and the old session keeps its own.
            let state = todo_state_path(&self.sessions_dir, &self.session_id);
            if let Err(e) = point_todo_at(&self.todo_pointer, &state) {
                self.bus.emit(Event::Notice {
                    message: format!("the todo list still shows the old session's: {e}"),
                });
            }
        }
        self.agent.tools.forget_todo();
        if let Ok(mut id) = self.hook_session.lock() {
            id.clone_from(&self.session_id);
        }
        self.session_start(hook_points::StartSource::Clear).await;
        &self.session_id
    }

    /// `/clear` in place: an empty snapshot ends the session's old conversation, and its todo
    /// file goes (a missing file is an empty list to the todo server, from its next call).
    fn clear_session_file(&mut self) {
        let redactor = self.redactor.clone();
        let redact = |line: &str| redactor.redact(line);
        if let Err(e) = session::append_snapshot(&self.sessions_dir, &self.session_id, &[], &redact)
        {
            self.bus.emit(Event::Error {
                message: format!("session not saved: {e}"),
            });
        }
        let state = todo_state_path(&self.sessions_dir, &self.session_id);
        match std::fs::remove_file(&state) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.bus.emit(Event::Notice {
                message: format!("the todo list still shows the cleared conversation's: {e}"),
            }),
        }
    }

    /// Says why the session ends, for the `SessionEnd` hooks (default `other`): the REPL's
    /// end of input is `prompt_input_exit`.
    pub fn ending_because(&mut self, reason: hook_points::EndReason) {
        self.end_reason = reason;
    }

    /// The session's todo list as the tools last reported it (`/todo`); `None` before any.
    pub fn todo(&self) -> Option<tern_protocol::todo::TodoList> {
        self.agent.tools.todo()
    }

    /// The session this run appends to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The custom slash commands (`.tern/commands/NAME.md`, …), read now: a file added
    /// during the session is there the next time.
    pub fn custom_commands(&self) -> Vec<crate::custom_commands::CustomCommand> {
        crate::custom_commands::discover(&self.extension_dirs).0
    }

    /// `/skills`: the skills servers' own report (each skill with its source, and what was
    /// skipped and why), through the gateway like any call: `list` is a read-only tool.
    pub async fn list_skills(&self) -> String {
        let table = self.gateway.refresh_table();
        let names: Vec<String> = table
            .entries()
            .iter()
            .filter(|e| e.tool == "list" && self.skills_servers.contains(&e.server))
            .map(|e| e.name.clone())
            .collect();
        if names.is_empty() {
            return "no Agent Skills found (searched ~/.agents/skills, $TERN_HOME/skills,                     ~/.claude/skills and, in a trusted project, .agents/skills, .tern/skills,                     .claude/skills)"
                .to_string();
        }
        let mut out = Vec::new();
        for name in names {
            let call = tern_protocol::ToolCall {
                id: format!("user-skills-{}", session::random_hex(4)),
                name,
                arguments: serde_json::json!({}),
            };
            let ctx = tern_gateway::CallContext {
                run_id: self.run_id().to_string(),
                session_id: self.session_id.clone(),
                ..Default::default()
            };
            out.push(self.gateway.call(call, ctx).await.result.content);
        }
        out.join("\n")
    }

    /// Tokens used by every model call of this run so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// What sub-agents spent for this run (tool results reporting `tern/usage`); not part of
    /// [`Engine::usage`], which is this run's own model calls.
    pub fn delegated(&self) -> Delegated {
        self.delegated.total()
    }

    /// What `usage` costs with this model, in US dollars, when its price is known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        self.price.map(|p| p.cost(usage))
    }

    /// Writes `run_finished` with `status` (and the answer or error of the last turn), closes
    /// the event stream and stops the servers. Its tokens and cost include the sub-agents'.
    pub async fn finish(self, status: RunStatus, last: Option<&TurnOutcome>) {
        self.session_end(self.end_reason).await;
        let delegated = self.delegated.total();
        let usage = delegated.add_usage(&self.usage);
        self.bus.emit(Event::RunFinished {
            status,
            steps: self.steps,
            duration_ms: self.started.elapsed().as_millis() as u64,
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_tokens: usage.cache_read,
            cache_creation_tokens: usage.cache_creation,
            cost_usd: delegated.add_cost(self.cost(&self.usage)),
            answer: last.and_then(|l| l.answer.clone()),
            error: last.and_then(|l| l.error.clone()),
        });
        self.bus.close();
        self.pool.shutdown().await;
    }
}
