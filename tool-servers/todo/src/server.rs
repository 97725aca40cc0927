//! The MCP face of tern-todo: the `write` and `read` tools.

use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::list::{Counts, Item, TodoList};
use crate::store::{Store, StoreError};

/// The result `_meta` key carrying the list after every call (see the crate docs).
pub const TODO_META: &str = tern_tool_common::meta::TODO;

/// Parameters of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct WriteParams {
    /// The whole new list, in order (at most 100 items). It replaces the old list: an item left
    /// out is removed.
    #[schemars(length(max = 100))]
    pub todos: Vec<Item>,
}

/// What both tools return as `structuredContent` (their declared output schema), and under
/// `_meta["tern/todo"]` with `changed` added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tern_tool_common::schema::portable)]
pub struct Snapshot {
    /// The items, in order.
    pub todos: Vec<Item>,
    /// How many items have each status.
    pub counts: Counts,
}

impl Snapshot {
    fn of(list: &TodoList) -> Self {
        Self {
            todos: list.items().to_vec(),
            counts: list.counts(),
        }
    }
}

/// The todo server. Cheap to clone (rmcp clones the handler per session); every clone shares
/// the one list.
#[derive(Clone)]
pub struct TodoServer {
    store: Arc<Mutex<Store>>,
    /// Built once: rebuilding the router per request costs ~50 µs (RMCP-NOTES.md).
    tool_router: ToolRouter<TodoServer>,
}

impl TodoServer {
    fn store(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave the list half-replaced (replace swaps a
        // whole value), so a poisoned lock is still a consistent list.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The result both tools answer with: the checklist as text, the same list as
/// `structuredContent`, and under `_meta["tern/todo"]` for the host.
fn list_result(list: &TodoList, changed: bool) -> CallToolResult {
    let snapshot = Snapshot::of(list);
    let text = if changed {
        format!("Updated. {}", list.checklist())
    } else {
        list.checklist()
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    let value = serde_json::to_value(&snapshot).unwrap_or_default();
    let mut meta_value = value.clone();
    if let Some(object) = meta_value.as_object_mut() {
        object.insert("changed".into(), serde_json::Value::Bool(changed));
    }
    let mut meta = MetaObject::new();
    meta.insert(TODO_META.into(), meta_value);
    result.structured_content = Some(value);
    result.meta = Some(meta);
    result
}

fn store_failure(e: &StoreError) -> CallToolResult {
    let hint = match e {
        StoreError::Write { .. } => "hint: the list was not changed; try again, or tell the user",
        StoreError::Read { .. }
        | StoreError::TooLarge { .. }
        | StoreError::Parse { .. }
        | StoreError::Version { .. }
        | StoreError::Invalid { .. } => {
            "hint: the file was left as it is; tell the user, who can fix or delete it"
        }
    };
    CallToolResult::error(vec![ContentBlock::text(format!("{e}\n{hint}"))])
}

#[tool_router]
impl TodoServer {
    /// A server keeping its list in `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store: Arc::new(Mutex::new(store)),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "write",
        description = "Replace this session's todo list with `todos` — the whole list: an item \
            left out is removed. Use it for work of three or more steps: first write the steps \
            as `pending` items, set one `in_progress` just before you start it, and set it \
            `done` as soon as it is finished (or `cancelled` when it no longer applies). At most \
            one item is `in_progress` at a time; keep each item's id when you change its status. \
            The user watches this list, and it is kept with the session. Skip it for a single \
            simple step.",
        output_schema = schema_for_output::<Snapshot>(),
        annotations(
            title = "Update the todo list",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn write(&self, Parameters(params): Parameters<WriteParams>) -> CallToolResult {
        let list = match TodoList::new(params.todos) {
            Ok(list) => list,
            Err(invalid) => {
                let lines: Vec<String> = invalid.0.iter().map(|p| format!("- {p}")).collect();
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "The todo list was not changed: the new list breaks these rules:\n{}\n\
                     hint: send the whole list again with these fixed.",
                    lines.join("\n")
                ))]);
            }
        };
        let mut store = self.store();
        let changed = match store.current() {
            Ok(old) => *old != list,
            Err(e) => return store_failure(&e),
        };
        if let Err(e) = store.replace(list) {
            tracing::warn!("{e}");
            return store_failure(&e);
        }
        match store.current() {
            Ok(list) => list_result(list, changed),
            Err(e) => store_failure(&e),
        }
    }

    #[tool(
        name = "read",
        description = "Return this session's todo list (ids, statuses, texts). The list you last \
            wrote is already in your context; read it after a long stretch of work or when \
            resuming.",
        output_schema = schema_for_output::<Snapshot>(),
        annotations(
            title = "Read the todo list",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn read(&self) -> CallToolResult {
        let mut store = self.store();
        match store.current() {
            Ok(list) => list_result(list, false),
            Err(e) => store_failure(&e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TodoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(tern_tool_common::implementation(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Keeps this session's todo list: `write` replaces the whole list (plan a task of \
                 several steps, then mark each step in_progress and done as you go); `read` \
                 returns it."
                    .to_string(),
            )
    }
}
