//! The engine's events as ACP `session/update` notifications: streamed text becomes
//! `agent_message_chunk`, each tool call a `tool_call` (pending) and `tool_call_update`s
//! (in progress once the gateway allows it, then completed or failed with its content), the
//! end of a turn a `usage_update`. The engine emits the same events to the events file and the
//! audit; this is one more renderer.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use serde_json::{Value, json};
use tern_gateway::Gateway;
use tern_protocol::{Decision, Envelope, Event, meta};

use super::{editor_fs::Written, editor_terminal::Cards, rpc::Outbox, tool_view};
use crate::agent::Subscriber;

/// Sends one `session/update`.
pub fn send(out: &Outbox, session_id: &str, update: Value) {
    out.notify(
        "session/update",
        json!({"sessionId": session_id, "update": update}),
    );
}

/// A text chunk of the agent (`agent_message_chunk`) or the user (`user_message_chunk`, in a
/// replayed history).
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// One of tern's notices as an `agent_message_chunk` (marked `_meta["tern/notice"]`).
pub fn notice(message: &str) -> Value {
    json!({
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": format!("\n(tern: {message})\n")},
        "_meta": {(meta::ACP_NOTICE): true},
    })
}

/// The ACP `plan` update showing a todo list (tern-todo's `_meta["tern/todo"]` items: `id`,
/// `text`, `status` `pending`/`in_progress`/`done`/`cancelled`). Cancelled items are left out
/// (ACP has no such status); every entry has priority `medium` (tern's list has none).
/// Sent for every `Event::TodoUpdated`, so the editor's plan view follows the model's list.
pub fn plan_update(todos: &Value) -> Value {
    let entries: Vec<Value> = todos
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            let status = match t["status"].as_str()? {
                "pending" => "pending",
                "in_progress" => "in_progress",
                "done" => "completed",
                _ => return None,
            };
            Some(json!({"content": t["text"].as_str()?, "priority": "medium", "status": status}))
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// What a started call needs when it finishes.
struct Started {
    tool: String,
    arguments: Value,
    /// The editor terminal its command runs in, once its server said so.
    terminal: Option<String>,
}

/// ACP tool call content embedding the editor's terminal `id`.
fn terminal_content(id: &str) -> Value {
    json!({"type": "terminal", "terminalId": id})
}

/// The subscriber of one session's engine.
pub struct Updates {
    out: Outbox,
    /// Set once the engine is up (its events before that, servers starting, are not shown).
    session_id: Arc<OnceLock<String>>,
    cwd: PathBuf,
    /// The run's gateway, set once the engine is up: its tool table says what each tool is.
    gateway: Arc<OnceLock<Arc<Gateway>>>,
    calls: HashMap<String, Started>,
    /// What was written through the editor (when its files are used): the text after an
    /// edit, which the disk may not have yet.
    written: Option<Written>,
    /// Told when a call's final update naming its terminal is queued (the bridge releases the
    /// terminal only then).
    cards: Cards,
}

impl Updates {
    pub fn new(
        out: Outbox,
        session_id: Arc<OnceLock<String>>,
        cwd: PathBuf,
        gateway: Arc<OnceLock<Arc<Gateway>>>,
        written: Option<Written>,
    ) -> Self {
        Self {
            out,
            session_id,
            cwd,
            gateway,
            calls: HashMap::new(),
            written,
            cards: Cards::default(),
        }
    }

    /// Shares `cards` with the session's editor-terminal bridge.
    pub fn with_cards(mut self, cards: Cards) -> Self {
        self.cards = cards;
        self
    }

    fn send(&self, update: Value) {
        if let Some(id) = self.session_id.get() {
            send(&self.out, id, update);
        }
    }

    fn entry(&self, tool: &str) -> Option<tern_mcp::ToolEntry> {
        self.gateway.get()?.table().get(tool).cloned()
    }

    /// The `tool_call_update` ending a call. An edit's file as it is now: the text just written
    /// through the editor when its files are used, else the disk's.
    fn finished(
        &self,
        call_id: &str,
        entry: Option<&tern_mcp::ToolEntry>,
        arguments: &Value,
        output: &str,
        diff: Option<&str>,
        is_error: bool,
    ) -> Value {
        let now = |path: &std::path::Path| {
            let written = self.written.as_ref().and_then(|w| w.take(path));
            written.or_else(|| std::fs::read_to_string(path).ok())
        };
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": if is_error { "failed" } else { "completed" },
            "content": tool_view::content(&self.cwd, entry, arguments, output, diff, is_error, &now),
        })
    }
}

/// The `tool_call` update announcing a call.
pub fn tool_call(
    cwd: &std::path::Path,
    call_id: &str,
    tool: &str,
    entry: Option<&tern_mcp::ToolEntry>,
    arguments: &Value,
    status: &str,
) -> Value {
    let locations: Vec<Value> = tool_view::locations(cwd, entry, arguments)
        .into_iter()
        .map(|p| json!({"path": p.display().to_string()}))
        .collect();
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": tool_view::title(tool, entry, arguments),
        "kind": tool_view::kind(entry),
        "status": status,
        "locations": locations,
        "rawInput": arguments,
        "_meta": {(meta::ACP_TOOL): tool},
    })
}

impl Subscriber for Updates {
    fn on_event(&mut self, envelope: &Envelope) {
        match &envelope.event {
            Event::TextDelta { text } => self.send(chunk("agent_message_chunk", text)),
            Event::ThinkingDelta { text } => self.send(chunk("agent_thought_chunk", text)),
            Event::ToolCallStarted {
                call_id,
                tool,
                arguments,
            } => {
                let entry = self.entry(tool);
                self.send(tool_call(
                    &self.cwd,
                    call_id,
                    tool,
                    entry.as_ref(),
                    arguments,
                    "pending",
                ));
                self.calls.insert(
                    call_id.clone(),
                    Started {
                        tool: tool.clone(),
                        arguments: arguments.clone(),
                        terminal: None,
                    },
                );
            }
            Event::PermissionDecided {
                call_id,
                decision: Decision::Allow,
                ..
            } => self.send(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "status": "in_progress",
            })),
            Event::ToolProgress {
                call_id,
                message: Some(m),
                ..
            } => self.send(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "_meta": {(meta::ACP_PROGRESS): m},
            })),
            Event::ToolTask {
                call_id,
                task_id,
                status,
                message,
            } => self.send(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "_meta": {(meta::ACP_TASK): {"taskId": task_id, "status": status,
                    "message": message}},
            })),
            Event::ToolTerminal {
                call_id,
                terminal_id,
            } => match self.calls.get_mut(call_id) {
                Some(started) => {
                    started.terminal = Some(terminal_id.clone());
                    self.send(json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "content": [terminal_content(terminal_id)],
                    }));
                }
                // The call already ended: the terminal will never be shown.
                None => self.cards.done(terminal_id),
            },
            Event::ToolCallFinished {
                call_id,
                is_error,
                output,
                diff,
                ..
            } => {
                let started = self.calls.remove(call_id);
                let (entry, args) = match &started {
                    Some(s) => (self.entry(&s.tool), s.arguments.clone()),
                    None => (None, Value::Null),
                };
                let mut update = self.finished(
                    call_id,
                    entry.as_ref(),
                    &args,
                    output,
                    diff.as_deref(),
                    *is_error,
                );
                // A diff's texts are read from the file after the event was redacted: they pass
                // the run's redactor here, like everything else tern shows.
                if let Some(gateway) = self.gateway.get()
                    && let Some(items) = update["content"].as_array_mut()
                {
                    let redactor = gateway.redactor();
                    for item in items.iter_mut().filter(|i| i["type"] == "diff") {
                        for key in ["oldText", "newText"] {
                            if let Some(text) = item[key].as_str() {
                                item[key] = Value::String(redactor.redact(text));
                            }
                        }
                    }
                }
                // A command shown in the editor's terminal: the terminal stays the call's content
                // (its output is there); a failure adds what the model was told.
                let terminal = started.and_then(|s| s.terminal);
                if let Some(id) = &terminal {
                    let mut content = vec![terminal_content(id)];
                    if *is_error && let Some(text) = update["content"].as_array() {
                        content.extend(text.iter().cloned());
                    }
                    update["content"] = Value::Array(content);
                }
                self.send(update);
                if let Some(id) = &terminal {
                    self.cards.done(id);
                }
            }
            Event::TurnFinished {
                context_tokens,
                context_window: Some(window),
                cost_usd,
                ..
            } => {
                let mut update = json!({
                    "sessionUpdate": "usage_update",
                    "used": context_tokens,
                    "size": window,
                });
                if let Some(cost) = cost_usd {
                    update["cost"] = json!({"amount": cost, "currency": "USD"});
                }
                self.send(update);
            }
            Event::TodoUpdated { todos, .. } => self.send(plan_update(
                &serde_json::to_value(todos).unwrap_or_default(),
            )),
            // The plan a plan-mode turn ended with: shown as the agent's message (the session
            // then asks the editor to approve it: `plan.rs`).
            Event::PlanProposed { plan, .. } => self.send(json!({
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": format!("\n{plan}\n")},
                "_meta": {(meta::ACP_PLAN): plan},
            })),
            Event::Notice { message } => self.send(notice(message)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_todo_list_is_a_plan() {
        let todos = json!([
            {"id": "1", "text": "Read the parser", "status": "done"},
            {"id": "2", "text": "Fix the bug", "status": "in_progress"},
            {"id": "3", "text": "Run the tests", "status": "pending"},
            {"id": "4", "text": "Old idea", "status": "cancelled"},
        ]);
        let plan = plan_update(&todos);
        assert_eq!(plan["sessionUpdate"], "plan");
        let statuses: Vec<&str> = plan["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["completed", "in_progress", "pending"]);
        assert_eq!(plan["entries"][1]["content"], "Fix the bug");
    }
}
