//! The engine's hook points (issue 19, item 1): `SessionStart` when the run is assembled,
//! `UserPromptSubmit` before the input reaches the model, `Stop` (`SubagentStop` in a
//! sub-agent's run) when the model answers, `PreCompact` before `/compact` (trigger `manual`)
//! and before the loop compacts by itself (trigger `auto`), `SessionEnd` when the run finishes
//! (reason `prompt_input_exit` when the REPL's input ends, else `other`); `/clear` is a
//! `SessionEnd` (reason `clear`) then a `SessionStart` (source `clear`). The tool hooks are the gateway's. Each hook run is its own event and audit line
//! (written by [`Hooks`]); what a hook says for the person becomes a notice.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tern_config::HookEvent;
use tern_gateway::Redactor;
use tern_gateway::hooks::{Effect, HookInput, Hooks};
use tern_protocol::{Event, RunStatus};
use tokio_util::sync::CancellationToken;

use super::{Engine, TurnOutcome};
use crate::agent::EventBus;
use crate::agent::run_loop::BeforeCompact;

/// Why a session started, as `SessionStart` hooks are told (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSource {
    /// A new run.
    Startup,
    /// `--continue`, `tern resume`.
    Resume,
    /// `/clear` started a new session.
    Clear,
}

impl StartSource {
    fn name(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Resume => "resume",
            Self::Clear => "clear",
        }
    }
}

/// Why a session ended, as `SessionEnd` hooks are told (`reason`, Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `/clear`.
    Clear,
    /// The person ended the REPL's input (Ctrl-D, `/exit`).
    PromptInputExit,
    /// Anything else: a headless run's end, an editor closing the session.
    Other,
}

impl EndReason {
    fn name(self) -> &'static str {
        match self {
            Self::Clear => "clear",
            Self::PromptInputExit => "prompt_input_exit",
            Self::Other => "other",
        }
    }
}

/// Runs `event`'s hooks and turns what they say for the person into notices.
async fn run_reported(
    hooks: &Hooks,
    bus: &EventBus,
    redactor: &Redactor,
    session_id: String,
    event: HookEvent,
    fields: Map<String, Value>,
) -> Effect {
    let effect = hooks
        .run(
            event,
            HookInput {
                session_id,
                tool: None,
                fields,
            },
        )
        .await;
    for message in &effect.messages {
        bus.emit(Event::Notice {
            message: format!("{event} hook: {}", redactor.redact(message)),
        });
    }
    effect
}

/// The loop's hook before it compacts by itself: `PreCompact` with trigger `auto`, in the
/// session `session` names when it runs (`/clear` changes it).
pub(super) fn auto_compact_hook(
    hooks: Arc<Hooks>,
    session: Arc<Mutex<String>>,
    bus: EventBus,
    redactor: Arc<Redactor>,
) -> BeforeCompact {
    Arc::new(move || {
        let (hooks, bus, redactor) = (hooks.clone(), bus.clone(), redactor.clone());
        let session_id = session.lock().map(|s| s.clone()).unwrap_or_default();
        Box::pin(async move {
            run_reported(
                &hooks,
                &bus,
                &redactor,
                session_id,
                HookEvent::PreCompact,
                fields([
                    ("trigger", json!("auto")),
                    ("custom_instructions", json!("")),
                ]),
            )
            .await;
        })
    })
}

/// How many times in a row `Stop` hooks may send the model back to work in one turn: a hook
/// that always blocks must not hold the run forever (the hook sees `stop_hook_active` from
/// the second time on, as in Claude Code, and should let it stop then).
const MAX_STOP_BLOCKS: usize = 3;

impl Engine {
    fn hooks_wanting(&self, event: HookEvent) -> Option<std::sync::Arc<Hooks>> {
        self.hooks
            .as_ref()
            .filter(|h| h.wants(event, None))
            .cloned()
    }

    async fn run_hooks(
        &self,
        hooks: &Hooks,
        event: HookEvent,
        fields: Map<String, Value>,
    ) -> Effect {
        run_reported(
            hooks,
            &self.bus,
            &self.redactor,
            self.session_id.clone(),
            event,
            fields,
        )
        .await
    }

    /// `SessionStart`: what the hooks print becomes part of the system prompt (a new block
    /// for the session `/clear` starts replaces the one before).
    pub(super) async fn session_start(&mut self, source: StartSource) {
        let Some(hooks) = self.hooks_wanting(HookEvent::SessionStart) else {
            return;
        };
        let effect = self
            .run_hooks(
                &hooks,
                HookEvent::SessionStart,
                fields([("source", json!(source.name()))]),
            )
            .await;
        if let Some(old) = self.session_context.take() {
            self.agent.settings.system.retain(|block| *block != old);
        }
        if !effect.context.is_empty() {
            let block = effect.context.join("\n\n");
            self.agent.settings.system.push(block.clone());
            self.session_context = Some(block);
        }
    }

    /// One user input through `UserPromptSubmit`, the loop, and `Stop`.
    pub(super) async fn hooked_turn(
        &mut self,
        input: &str,
        images: Vec<tern_protocol::Image>,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let mut input = input.to_string();
        if let Some(hooks) = self.hooks_wanting(HookEvent::UserPromptSubmit) {
            let effect = self
                .run_hooks(
                    &hooks,
                    HookEvent::UserPromptSubmit,
                    fields([("prompt", json!(input))]),
                )
                .await;
            if let Some(reason) = effect.block.or(effect.stop) {
                // Blocked: the prompt never reaches the model or the session.
                let message = format!(
                    "the prompt was blocked by a UserPromptSubmit hook: {}",
                    self.redactor.redact(&reason)
                );
                self.bus.emit(Event::Error {
                    message: message.clone(),
                });
                return TurnOutcome::failed(message);
            }
            if !effect.context.is_empty() {
                input = format!("{input}\n\n{}", effect.context.join("\n\n"));
            }
        }
        let mut outcome = self
            .agent
            .run_turn_with_images(&mut self.conv, &input, images, cancel)
            .await;
        let event = if self.subagent {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        let Some(hooks) = self.hooks_wanting(event) else {
            return outcome;
        };
        let mut active = false;
        for _ in 0..MAX_STOP_BLOCKS {
            if outcome.status != RunStatus::Success || cancel.is_cancelled() {
                break;
            }
            let effect = self
                .run_hooks(&hooks, event, fields([("stop_hook_active", json!(active))]))
                .await;
            if effect.stop.is_some() {
                break;
            }
            let Some(reason) = effect.block else { break };
            active = true;
            let feedback = format!("{event} hook feedback:\n{reason}");
            let more = self.agent.run_turn(&mut self.conv, &feedback, cancel).await;
            outcome = TurnOutcome {
                steps: outcome.steps + more.steps,
                usage: {
                    let mut usage = outcome.usage;
                    usage.add(&more.usage);
                    usage
                },
                ..more
            };
        }
        outcome
    }

    /// `PreCompact` before a compaction the person asked for (`/compact`).
    pub(super) async fn pre_compact(&self, focus: Option<&str>) {
        if let Some(hooks) = self.hooks_wanting(HookEvent::PreCompact) {
            self.run_hooks(
                &hooks,
                HookEvent::PreCompact,
                fields([
                    ("trigger", json!("manual")),
                    ("custom_instructions", json!(focus.unwrap_or(""))),
                ]),
            )
            .await;
        }
    }

    /// `SessionEnd` as the run finishes or `/clear` ends the session.
    pub(super) async fn session_end(&self, reason: EndReason) {
        if let Some(hooks) = self.hooks_wanting(HookEvent::SessionEnd) {
            self.run_hooks(
                &hooks,
                HookEvent::SessionEnd,
                fields([("reason", json!(reason.name()))]),
            )
            .await;
        }
    }
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
