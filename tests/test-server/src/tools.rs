//! The test server's tool list (what each flag adds) and its bookkeeping (the `--audit` file).

use std::io::Write;

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::*;

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

fn tool(name: &str, description: &str, input: Value, read_only: bool) -> Tool {
    let mut t = Tool::new(name.to_string(), description.to_string(), schema(input));
    let mut a = ToolAnnotations::default();
    a.read_only_hint = Some(read_only);
    a.destructive_hint = Some(!read_only);
    t.annotations = Some(a);
    t
}

impl TestServer {
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let ms = json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"]});
        let empty = json!({"type": "object", "properties": {}});
        let echo_desc = if self.changed.load(Ordering::SeqCst) {
            "Echo the text back. (changed)".to_string()
        } else {
            self.args.echo_description.clone()
        };
        let mut tools = vec![
            tool("echo", &echo_desc, text.clone(), true),
            tool("sleep", "Sleep for ms milliseconds, then answer.", ms, true),
            tool(
                "progress",
                "Send `steps` progress notifications, 50 ms apart.",
                json!({"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]}),
                true,
            ),
            tool(
                "env",
                "Return the value of an environment variable.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
                true,
            ),
            tool(
                "roots",
                "Ask the client for its roots and return them.",
                empty.clone(),
                true,
            ),
            tool(
                "crash",
                "Print to stderr and exit mid-call.",
                empty.clone(),
                false,
            ),
            tool("noop", "Do nothing.", empty.clone(), true),
            tool(
                "rendezvous",
                "Wait until `n` calls of `group` have arrived (answers `met`), or `ms` passed \
                 (answers `alone`): `met` proves the calls were in flight at once.",
                json!({"type": "object", "properties": {"group": {"type": "string"},
                    "n": {"type": "integer"}, "ms": {"type": "integer"}},
                    "required": ["group", "n", "ms"]}),
                true,
            ),
            tool(
                "headers",
                "Return the HTTP request headers this call arrived with (HTTP mode).",
                empty.clone(),
                true,
            ),
            tool(
                "big",
                "Return `chars` characters of text.",
                json!({"type": "object", "properties": {"chars": {"type": "integer"}}, "required": ["chars"]}),
                true,
            ),
        ];
        tools.push(tool(
            "remove_noop",
            "Stop offering `noop` and send notifications/tools/list_changed, then answer.",
            empty.clone(),
            false,
        ));
        if self.noop_removed.load(Ordering::SeqCst) {
            tools.retain(|t| t.name != "noop");
        }
        if self.args.ask {
            tools.push(tool(
                "ask",
                "Ask the person for a name, an age, a colour and a yes/no (elicitation, form \
                 mode) and return what came back.",
                empty.clone(),
                true,
            ));
        }
        if self.args.oauth {
            tools.push(tool(
                "token",
                "Return the bearer token this call arrived with (OAuth mode).",
                empty.clone(),
                true,
            ));
        }
        if let Some(name) = &self.args.extra_tool {
            tools.push(tool(
                name,
                "Echo the text back (a tool added later).",
                text.clone(),
                true,
            ));
        }
        if let Some(n) = self.args.huge_schema {
            let props: serde_json::Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        format!("field_{i}"),
                        json!({"type": "string", "description": "A field."}),
                    )
                })
                .collect();
            tools.push(tool(
                "huge",
                "A tool whose schema is enormous.",
                json!({"type": "object", "properties": props}),
                true,
            ));
        }
        if self.args.tasks {
            tools.push(tool(
                "job",
                "A long job that runs as a task (SEP-2663): `steps` steps of `step_ms` each, \
                 then, with `ask`, a question to confirm.",
                json!({"type": "object", "properties": {
                    "steps": {"type": "integer", "minimum": 1},
                    "step_ms": {"type": "integer", "minimum": 0},
                    "ask": {"type": "boolean"}}}),
                true,
            ));
        }
        if self.args.long_name {
            tools.push(tool(
                &"l".repeat(100),
                "A tool with a very long name.",
                empty.clone(),
                true,
            ));
        }
        if self.args.colliding {
            tools.push(tool(
                "a.b",
                "Collides with a_b after sanitizing.",
                empty.clone(),
                true,
            ));
            tools.push(tool(
                "a_b",
                "Collides with a.b after sanitizing.",
                empty.clone(),
                true,
            ));
        }
        if self.args.invalid_schema {
            tools.push(tool(
                "bad_schema",
                "Its inputSchema is invalid.",
                json!({"type": "object", "properties": {"x": {"type": "no-such-type"}}}),
                true,
            ));
        }
        if self.args.destructive {
            for t in &mut tools {
                let mut a = ToolAnnotations::default();
                a.read_only_hint = Some(false);
                a.destructive_hint = Some(true);
                t.annotations = Some(a);
            }
        }
        tools
    }

    pub(crate) fn audit(&self, params: &CallToolRequestParams) {
        if let Some(path) = &self.args.audit
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let line = json!({"tool": params.name, "arguments": params.arguments});
            let _ = writeln!(f, "{line}");
        }
    }
}

pub(crate) fn text(s: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(s.into())]))
}
