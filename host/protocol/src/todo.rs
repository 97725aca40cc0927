//! The session's todo list as the host sees it: the payload of a result's
//! `_meta["tern/todo"]` ([`crate::meta::TODO`]), which the built-in todo server (or any server
//! keeping such a list) attaches to every result, and of [`crate::Event::TodoUpdated`].
//!
//! The host never reads the server's state file: what it shows (the terminal's checklist,
//! `/todo`, the compaction summary) comes from these payloads, so the server stays the one
//! owner of the list.

use serde::{Deserialize, Serialize};

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Done,
    Cancelled,
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub id: String,
    pub text: String,
    pub status: TodoStatus,
}

/// How many items have each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoCounts {
    #[serde(default)]
    pub pending: usize,
    #[serde(default)]
    pub in_progress: usize,
    #[serde(default)]
    pub done: usize,
    #[serde(default)]
    pub cancelled: usize,
}

/// The list after a call, as `_meta["tern/todo"]` carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoList {
    /// The items, in order.
    pub todos: Vec<TodoItem>,
    #[serde(default)]
    pub counts: TodoCounts,
    /// Whether the call changed the list (a `write` with a different list).
    #[serde(default)]
    pub changed: bool,
}

impl TodoList {
    /// The list in a result's `_meta` object, when it has a well-formed one.
    pub fn from_result_meta(meta: Option<&serde_json::Value>) -> Option<Self> {
        let value = meta?.get(crate::meta::TODO)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// The list as plain checklist lines (`[x] Read the parser`), one per item, for a person
    /// or a summary. Empty for an empty list.
    pub fn checklist(&self) -> Vec<String> {
        self.todos
            .iter()
            .map(|item| {
                let (mark, note) = match item.status {
                    TodoStatus::Pending => ("[ ]", ""),
                    TodoStatus::InProgress => ("[>]", " (in progress)"),
                    TodoStatus::Done => ("[x]", ""),
                    TodoStatus::Cancelled => ("[-]", " (cancelled)"),
                };
                format!("{mark} {}{note}", one_line(&item.text))
            })
            .collect()
    }

    /// `2/5 done`, counting cancelled items as settled.
    pub fn progress(&self) -> String {
        let settled = self
            .todos
            .iter()
            .filter(|t| matches!(t.status, TodoStatus::Done | TodoStatus::Cancelled))
            .count();
        format!("{settled}/{} done", self.todos.len())
    }

    /// The item being worked on, if any.
    pub fn in_progress(&self) -> Option<&TodoItem> {
        self.todos
            .iter()
            .find(|t| t.status == TodoStatus::InProgress)
    }
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_read_from_result_meta_and_shown_as_a_checklist() {
        let meta = serde_json::json!({"tern/todo": {
            "todos": [
                {"id": "1", "text": "Read", "status": "done"},
                {"id": "2", "text": "Fix\nit", "status": "in_progress"},
                {"id": "3", "text": "Test", "status": "pending"}
            ],
            "counts": {"pending": 1, "in_progress": 1, "done": 1, "cancelled": 0},
            "changed": true,
            "later": 1
        }});
        let list = TodoList::from_result_meta(Some(&meta)).unwrap_or_default();
        assert!(list.changed);
        assert_eq!(
            list.checklist(),
            vec!["[x] Read", "[>] Fix it (in progress)", "[ ] Test"]
        );
        assert_eq!(list.progress(), "1/3 done");
        assert_eq!(list.in_progress().map(|t| t.id.as_str()), Some("2"));
        assert!(TodoList::from_result_meta(Some(&serde_json::json!({}))).is_none());
        let bad = serde_json::json!({"tern/todo": {"todos": [{"id": 1}]}});
        assert!(TodoList::from_result_meta(Some(&bad)).is_none());
    }
}
