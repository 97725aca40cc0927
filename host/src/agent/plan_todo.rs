//! An approved plan seeds the todo list (issue 20: "the approved plan is saved in the session
//! and seeds the todo list").
//!
//! The plan's top-level list items (numbered or bulleted lines) become the list's pending
//! items, written with the built-in todo server's `write` tool through the gateway and the
//! agent's tool executor — the same permission-checked, audited MCP call the model makes, which
//! also brings the `todo_updated` event the terminal draws. The host never writes the server's
//! state file: the server stays the one owner of the list. A plan with no list items seeds
//! nothing, and the model is asked to record the steps itself.
//!
//! [`Engine::keep_approved_plan`] is what the REPL and `tern acp` both do once a person said
//! yes (each asks in its own way and switches the mode itself).

use tern_protocol::{ToolCall, todo::TodoList};
use tokio_util::sync::CancellationToken;

use super::{Engine, session};

/// The todo server refuses more items, and longer texts (its `write` schema).
const MAX_ITEMS: usize = 100;
const MAX_TEXT: usize = 500;

/// The plan's steps: the text of each list item at the outermost list level (`1. …`, `2) …`,
/// `- …`, `* …`, `+ …`, with a task box `[ ]` dropped), outside code fences, in order. Nested
/// items are details of their step, not steps of their own.
pub fn plan_steps(plan: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut items: Vec<(usize, String)> = Vec::new();
    for line in plan.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if let Some(text) = list_item(trimmed) {
            items.push((indent, text));
        }
    }
    let Some(outer) = items.iter().map(|(indent, _)| *indent).min() else {
        return Vec::new();
    };
    items
        .into_iter()
        .filter(|(indent, _)| *indent == outer)
        .map(|(_, text)| text)
        .take(MAX_ITEMS)
        .collect()
}

/// The text of a list item line (its marker removed), `None` for any other line.
fn list_item(line: &str) -> Option<String> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let rest = if digits > 0 {
        line[digits..]
            .strip_prefix('.')
            .or_else(|| line[digits..].strip_prefix(')'))?
    } else {
        line.strip_prefix(['-', '*', '+'])?
    };
    // A marker is followed by white space (`-x` and `1.5` are not items).
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut text = rest.trim();
    for task in ["[ ] ", "[x] ", "[X] "] {
        if let Some(t) = text.strip_prefix(task) {
            text = t.trim_start();
        }
    }
    if text.is_empty() {
        return None;
    }
    Some(text.chars().take(MAX_TEXT).collect())
}

impl Engine {
    /// Keeps an approved plan: saves it beside the session's transcript
    /// (`sessions/<id>.plan.md`), seeds the todo list with its steps, and returns the text the
    /// next turn starts with (saying `mode`, which the caller has switched to) and what went
    /// wrong on the way — a plan not saved or a list not seeded does not stop the work.
    pub async fn keep_approved_plan(
        &self,
        plan: &str,
        mode: tern_config::PermissionMode,
    ) -> (String, Vec<String>) {
        let mut problems = Vec::new();
        let path = self
            .sessions_dir
            .join(format!("{}.plan.md", self.session_id()));
        if let Err(e) = std::fs::create_dir_all(&self.sessions_dir)
            .and_then(|()| tern_protocol::files::write(&path, plan.as_bytes()))
        {
            problems.push(format!(
                "could not save the plan to {}: {e}",
                path.display()
            ));
        }
        let steps = plan_steps(plan);
        let seeded = if steps.is_empty() {
            None
        } else {
            match self.seed_todo(&steps).await {
                Ok(list) => Some(list.todos.len()),
                Err(e) => {
                    problems.push(format!("could not seed the todo list: {e}"));
                    None
                }
            }
        };
        let todo = match seeded {
            Some(n) => format!(
                "Its {n} steps are your todo list now (ids 1 to {n}, all pending): as you carry \
                 the plan out, mark each step in_progress when you start it and done when it is \
                 finished, with todo__write."
            ),
            None => "First record the plan's steps with todo__write, then carry it out.".into(),
        };
        let text = format!(
            "The user approved your plan. The session is now in {mode} mode: you may change \
             files. {todo}\n\nThe approved plan:\n\n{plan}"
        );
        (text, problems)
    }

    /// Replaces the session's todo list with `steps`, all pending (ids `1`, `2`, …), through
    /// the built-in todo server's `write` tool. `Err` says why not: no todo server running, or
    /// what the gateway or the server answered.
    pub async fn seed_todo(&self, steps: &[String]) -> Result<TodoList, String> {
        let Some(name) = self
            .gateway
            .builtin_tool(tern_config::Builtin::Todo, "write")
        else {
            return Err("no todo server is running ([mcp_servers.todo] is off)".into());
        };
        let todos: Vec<serde_json::Value> = steps
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::json!({"id": (i + 1).to_string(), "text": text, "status": "pending"})
            })
            .collect();
        let call = ToolCall {
            id: format!("user-plan-{}", session::random_hex(4)),
            name,
            arguments: serde_json::json!({ "todos": todos }),
        };
        let result = self.agent.tools.call(&call, CancellationToken::new()).await;
        if result.is_error {
            return Err(result.content);
        }
        self.agent
            .tools
            .todo()
            .ok_or_else(|| "the todo server returned no list".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_list_items_are_the_steps_and_details_fences_and_prose_are_not() {
        let plan = "# Plan\n\nFirst some prose.\n\n\
                    1. Read `src/lib.rs`\n   - look at `add`\n   - and `sub`\n\
                    2) Add a **test** for overflow\n\
                    ```sh\n- not a step\n3. nor this\n```\n\
                    3. [ ] Use `checked_add`\n\
                    4.5 is a number, not an item\n-dash without a space\n";
        assert_eq!(
            plan_steps(plan),
            [
                "Read `src/lib.rs`",
                "Add a **test** for overflow",
                "Use `checked_add`"
            ]
        );
        // Bullets at the outermost level count the same; nested ones only when alone.
        assert_eq!(plan_steps("- a\n* b\n+ c"), ["a", "b", "c"]);
        assert_eq!(
            plan_steps("  - only nested\n  - items"),
            ["only nested", "items"]
        );
        assert!(plan_steps("Just do it.\n").is_empty());
    }

    #[test]
    fn the_todo_servers_limits_are_kept() {
        let long = format!("- {}", "x".repeat(800));
        assert_eq!(plan_steps(&long)[0].chars().count(), MAX_TEXT);
        let many: String = (0..150).map(|i| format!("- step {i}\n")).collect();
        assert_eq!(plan_steps(&many).len(), MAX_ITEMS);
    }
}
