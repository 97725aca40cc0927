//! The result of a tool call as the rest of tern sees it (no rmcp types).

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

/// What a server returned for `tools/call`.
#[derive(Debug, Clone, Serialize)]
pub struct ToolOutput {
    /// The server flagged the result as an error (`isError: true`).
    pub is_error: bool,
    /// The content rendered as text for the model: text blocks as they are, other
    /// blocks as a one-line description.
    pub text: String,
    /// `structuredContent`, when the server gave one.
    pub structured: Option<serde_json::Value>,
    /// The whole result as JSON, for the audit hash and the trace.
    pub raw: serde_json::Value,
}

impl From<CallToolResult> for ToolOutput {
    fn from(result: CallToolResult) -> Self {
        let mut text = String::new();
        for block in &result.content {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            match block {
                ContentBlock::Text(t) => text.push_str(&t.text),
                ContentBlock::Image(i) => text.push_str(&format!(
                    "[image: {}, {} base64 chars]",
                    i.mime_type,
                    i.data.len()
                )),
                ContentBlock::Audio(a) => text.push_str(&format!(
                    "[audio: {}, {} base64 chars]",
                    a.mime_type,
                    a.data.len()
                )),
                ContentBlock::Resource(r) => {
                    let json = serde_json::to_string(&r.resource).unwrap_or_default();
                    text.push_str(&format!("[resource] {json}"));
                }
                ContentBlock::ResourceLink(l) => {
                    text.push_str(&format!("[resource link: {} {}]", l.name, l.uri))
                }
                // Content kinds newer than this rmcp: show them as JSON rather than drop them.
                other => {
                    let json = serde_json::to_string(other).unwrap_or_default();
                    text.push_str(&json);
                }
            }
        }
        if text.is_empty()
            && let Some(s) = &result.structured_content
        {
            text = s.to_string();
        }
        let raw = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
        ToolOutput {
            is_error: result.is_error.unwrap_or(false),
            text,
            structured: result.structured_content,
            raw,
        }
    }
}
