//! The todo list: its items, the rules every new list must pass, and the checklist the model
//! reads.
//!
//! The rules follow what the agents that made this tool popular ask of their models, enforced
//! here rather than only asked for: Claude Code's TodoWrite and Amp's `todo_write` both replace
//! the whole list on each call and give each item a status (Claude Code's tool description asks
//! for exactly one item in progress at a time, its schema for non-empty content; Amp's schema
//! requires an `id`). Here ids are required and unique (so the host can show an item moving
//! from pending to done), at most one item is in progress, and the list, ids and texts have
//! upper bounds so a runaway model cannot grow the session file or the prompt without limit.

use std::collections::HashMap;
use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most items one list may hold.
pub const MAX_ITEMS: usize = 100;
/// Longest id, in characters.
pub const MAX_ID_CHARS: usize = 64;
/// Longest item text, in characters.
pub const MAX_TEXT_CHARS: usize = 500;

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started yet.
    Pending,
    /// Being worked on now (at most one item at a time).
    InProgress,
    /// Finished.
    Done,
    /// Dropped: no longer needed or no longer possible.
    Cancelled,
}

impl Status {
    /// The name on the wire (`in_progress`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Done => "done",
            Self::Cancelled => "cancelled",
        }
    }

    /// The checkbox of the checklist line.
    fn checkbox(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Done => "[x]",
            Self::Cancelled => "[-]",
        }
    }

    /// Words a reader needs besides the checkbox (`[>]` and `[-]` are not universal).
    fn suffix(self) -> &'static str {
        match self {
            Self::Pending | Self::Done => "",
            Self::InProgress => " (in progress)",
            Self::Cancelled => " (cancelled)",
        }
    }
}

/// One item of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// A short identifier, unique in the list (e.g. `1`, `2`, `tests`). Keep an item's id when
    /// you change its status, so the user sees that item move.
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// What to do, in one line (e.g. `Add a test for the empty input`).
    #[schemars(length(min = 1, max = 500))]
    pub text: String,
    /// `pending`, `in_progress` (at most one item), `done` or `cancelled`.
    pub status: Status,
}

/// How many items have each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Counts {
    /// Items not started.
    pub pending: usize,
    /// Items being worked on (0 or 1).
    pub in_progress: usize,
    /// Items finished.
    pub done: usize,
    /// Items dropped.
    pub cancelled: usize,
}

/// A list that passed every rule: what the server keeps, persists and returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoList {
    items: Vec<Item>,
}

/// Why a list was refused: every rule it broke, each a sentence naming the item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct Invalid(pub Vec<String>);

impl TodoList {
    /// Checks `items` against the rules (see the module docs); lists every problem at once so
    /// the model can fix them in one go.
    pub fn new(items: Vec<Item>) -> Result<Self, Invalid> {
        let mut problems = Vec::new();
        if items.len() > MAX_ITEMS {
            problems.push(format!(
                "the list has {} items; at most {MAX_ITEMS} are allowed (merge small steps, or drop \
                 finished ones)",
                items.len()
            ));
        }
        let mut first_with_id: HashMap<&str, usize> = HashMap::new();
        let mut in_progress = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let n = i + 1;
            let id = item.id.as_str();
            if id.trim().is_empty() {
                problems.push(format!("item {n} has an empty id"));
            } else if id.chars().count() > MAX_ID_CHARS {
                problems.push(format!(
                    "item {n}: the id is {} characters long; at most {MAX_ID_CHARS} are allowed",
                    id.chars().count()
                ));
            } else if id.chars().any(char::is_control) {
                problems.push(format!("item {n}: the id contains a control character"));
            } else if let Some(first) = first_with_id.get(id) {
                problems.push(format!(
                    "item {n}: the id `{id}` is already used by item {first}; ids must be unique"
                ));
            } else {
                first_with_id.insert(id, n);
            }
            let text = item.text.as_str();
            if text.trim().is_empty() {
                problems.push(format!("item {n} (id `{id}`) has an empty text"));
            } else if text.chars().count() > MAX_TEXT_CHARS {
                problems.push(format!(
                    "item {n} (id `{id}`): the text is {} characters long; at most \
                     {MAX_TEXT_CHARS} are allowed",
                    text.chars().count()
                ));
            } else if text.contains(['\n', '\r']) {
                problems.push(format!(
                    "item {n} (id `{id}`): the text spans several lines; give each step its own item"
                ));
            } else if text.chars().any(char::is_control) {
                problems.push(format!(
                    "item {n} (id `{id}`): the text contains a control character"
                ));
            }
            if item.status == Status::InProgress {
                in_progress.push(format!("`{id}`"));
            }
        }
        if in_progress.len() > 1 {
            problems.push(format!(
                "{} items are in_progress ({}); at most one item may be in progress at a time — \
                 mark the others pending or done",
                in_progress.len(),
                in_progress.join(", ")
            ));
        }
        if problems.is_empty() {
            Ok(Self { items })
        } else {
            Err(Invalid(problems))
        }
    }

    /// The items, in the order the model gave them.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// True when the list has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many items have each status.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for item in &self.items {
            match item.status {
                Status::Pending => c.pending += 1,
                Status::InProgress => c.in_progress += 1,
                Status::Done => c.done += 1,
                Status::Cancelled => c.cancelled += 1,
            }
        }
        c
    }

    /// The list as the model reads it: a heading with the counts and one checklist line per
    /// item, carrying every field of the item (id, status, text), so the text says all that
    /// `structuredContent` does.
    pub fn checklist(&self) -> String {
        if self.items.is_empty() {
            return "The todo list is empty.".to_string();
        }
        let c = self.counts();
        let parts: Vec<String> = [
            (c.done, "done"),
            (c.in_progress, "in progress"),
            (c.pending, "pending"),
            (c.cancelled, "cancelled"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        let noun = if self.items.len() == 1 {
            "item"
        } else {
            "items"
        };
        let mut out = format!(
            "Todo list: {} {noun} ({}).",
            self.items.len(),
            parts.join(", ")
        );
        for item in &self.items {
            let _ = write!(
                out,
                "\n- {} {}: {}{}",
                item.status.checkbox(),
                item.id,
                item.text,
                item.status.suffix()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn item(id: &str, text: &str, status: Status) -> Item {
        Item {
            id: id.into(),
            text: text.into(),
            status,
        }
    }

    #[test]
    fn a_good_list_renders_as_a_checklist_with_every_field() {
        let list = TodoList::new(vec![
            item("1", "Read the parser", Status::Done),
            item("2", "Write the tests", Status::InProgress),
            item("3", "Run the suite", Status::Pending),
            item("docs", "Update the docs", Status::Cancelled),
        ])
        .unwrap();
        assert_eq!(
            list.checklist(),
            "Todo list: 4 items (1 done, 1 in progress, 1 pending, 1 cancelled).\n\
             - [x] 1: Read the parser\n\
             - [>] 2: Write the tests (in progress)\n\
             - [ ] 3: Run the suite\n\
             - [-] docs: Update the docs (cancelled)"
        );
        assert_eq!(
            list.counts(),
            Counts {
                pending: 1,
                in_progress: 1,
                done: 1,
                cancelled: 1
            }
        );
        assert_eq!(TodoList::default().checklist(), "The todo list is empty.");
    }

    #[test]
    fn every_broken_rule_is_reported_at_once() {
        let err = TodoList::new(vec![
            item("a", "one", Status::InProgress),
            item("a", "two", Status::Pending),
            item("", "three", Status::Pending),
            item("c", "  ", Status::Pending),
            item("d", "two\nlines", Status::InProgress),
            item(&"x".repeat(65), "long id", Status::Pending),
            item("e", &"y".repeat(501), Status::Pending),
        ])
        .unwrap_err();
        let all = err.to_string();
        for want in [
            "item 2: the id `a` is already used by item 1",
            "item 3 has an empty id",
            "item 4 (id `c`) has an empty text",
            "item 5 (id `d`): the text spans several lines",
            "item 6: the id is 65 characters long",
            "item 7 (id `e`): the text is 501 characters long",
            "2 items are in_progress (`a`, `d`)",
        ] {
            assert!(all.contains(want), "missing `{want}` in: {all}");
        }
        assert_eq!(err.0.len(), 7, "{all}");
    }

    #[test]
    fn limits_count_characters_not_bytes() {
        let list = TodoList::new(vec![item(&"é".repeat(64), &"ü".repeat(500), Status::Done)]);
        assert!(list.is_ok(), "{list:?}");
        let many: Vec<Item> = (0..=MAX_ITEMS)
            .map(|i| item(&i.to_string(), "step", Status::Pending))
            .collect();
        let err = TodoList::new(many).unwrap_err();
        assert!(err.to_string().contains("101 items"), "{err}");
    }
}
