//! Turning the accumulated argument text of a tool call into an executable call, or not.

use serde_json::Value;

use crate::types::ModelEvent;

/// Parses the concatenated `partial_json` of a finished tool_use block. Empty input means `{}`.
pub fn parse_tool_input(id: String, name: String, json: &str) -> ModelEvent {
    if json.trim().is_empty() {
        return ModelEvent::ToolCallComplete {
            id,
            name,
            arguments: Value::Object(Default::default()),
        };
    }
    match serde_json::from_str::<Value>(json) {
        Ok(arguments @ Value::Object(_)) => ModelEvent::ToolCallComplete {
            id,
            name,
            arguments,
        },
        Ok(_) => ModelEvent::ToolCallIncomplete {
            id,
            name,
            reason: format!("the tool arguments are not a JSON object: {json}"),
        },
        Err(e) => ModelEvent::ToolCallIncomplete {
            id,
            name,
            reason: format!("the tool arguments are not valid JSON ({e}): {json}"),
        },
    }
}
