//! The engine's hook points (issue 19, item 1): `SessionStart` when the run is assembled,
//! `UserPromptSubmit` before the input reaches the model, `Stop` (`SubagentStop` in a
//! sub-agent's run) when the model answers, `PreCompact` before `/compact`, `SessionEnd` when the
//! run finishes. The tool hooks are the gateway's. Each hook run is its own event and audit line
//! (written by [`Hooks`]); what a hook says for the person becomes a notice.

use serde_json::{Map, Value, json};
use tern_config::HookEvent;
use tern_gateway::hooks::{Effect, HookInput, Hooks};
use tern_protocol::{Event, RunStatus};
use tokio_util::sync::CancellationToken;

use super::{Engine, TurnOutcome};

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
        let effect = hooks
            .run(
                event,
                HookInput {
                    session_id: self.session_id.clone(),
                    tool: None,
                    fields,
                },
            )
            .await;
        for message in &effect.messages {
            self.bus.emit(Event::Notice {
                message: format!("{event} hook: {}", self.redactor.redact(message)),
            });
        }
        effect
    }

    /// `SessionStart`: what the hooks print becomes part of the system prompt.
    pub(super) async fn session_start(&mut self, resumed: bool) {
        let Some(hooks) = self.hooks_wanting(HookEvent::SessionStart) else {
            return;
        };
        let source = if resumed { "resume" } else { "startup" };
        let effect = self
            .run_hooks(
                &hooks,
                HookEvent::SessionStart,
                fields([("source", json!(source))]),
            )
            .await;
        if !effect.context.is_empty() {
            self.agent.settings.system.push(effect.context.join("\n\n"));
        }
    }

    /// One user input through `UserPromptSubmit`, the loop, and `Stop`.
    pub(super) async fn hooked_turn(
        &mut self,
        input: &str,
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
        let mut outcome = self.agent.run_turn(&mut self.conv, &input, cancel).await;
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

    /// `SessionEnd` as the run finishes.
    pub(super) async fn session_end(&self) {
        if let Some(hooks) = self.hooks_wanting(HookEvent::SessionEnd) {
            self.run_hooks(
                &hooks,
                HookEvent::SessionEnd,
                fields([("reason", json!("other"))]),
            )
            .await;
        }
    }
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
