//! The result of a tool call as the rest of tern sees it (no rmcp types).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde::Serialize;
use tern_protocol::Image;

/// The MIME type of a unified diff in a resource block: rendered as a diff by tern.
pub const DIFF_MIME: &str = "text/x-diff";

/// What a server returned for `tools/call`.
#[derive(Debug, Clone, Serialize)]
pub struct ToolOutput {
    /// The server flagged the result as an error (`isError: true`).
    pub is_error: bool,
    /// The content for the model as text: text blocks as they are, text resources with a header
    /// naming them, other blocks as a one-line description.
    pub text: String,
    /// Image blocks, passed on to the model as images.
    pub images: Vec<Image>,
    /// The text of the first `text/x-diff` resource, for display.
    pub diff: Option<String>,
    /// `structuredContent`, when the server gave one.
    pub structured: Option<serde_json::Value>,
    /// The whole result as JSON, for the audit hash and the trace.
    pub raw: serde_json::Value,
}

impl From<CallToolResult> for ToolOutput {
    fn from(result: CallToolResult) -> Self {
        let mut text = String::new();
        let mut images = Vec::new();
        let mut diff = None;
        for block in &result.content {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            match block {
                ContentBlock::Text(t) => text.push_str(&t.text),
                ContentBlock::Image(i) => {
                    text.push_str(&format!("[image: {}]", i.mime_type));
                    images.push(Image {
                        mime_type: i.mime_type.clone(),
                        data: i.data.clone(),
                    });
                }
                ContentBlock::Audio(a) => text.push_str(&format!(
                    "[audio: {}, {} base64 chars]",
                    a.mime_type,
                    a.data.len()
                )),
                ContentBlock::Resource(r) => match &r.resource {
                    ResourceContents::TextResourceContents {
                        uri,
                        mime_type,
                        text: body,
                        ..
                    } => {
                        if mime_type.as_deref() == Some(DIFF_MIME) {
                            diff.get_or_insert_with(|| body.clone());
                            text.push_str(body);
                        } else {
                            let kind = mime_type.as_deref().unwrap_or("text");
                            text.push_str(&format!("[resource {uri} ({kind})]\n{body}"));
                        }
                    }
                    ResourceContents::BlobResourceContents {
                        uri,
                        mime_type,
                        blob,
                        ..
                    } => match mime_type.as_deref() {
                        // An embedded image is an image the model can look at.
                        Some(m) if m.starts_with("image/") => {
                            text.push_str(&format!("[resource {uri} ({m})]"));
                            images.push(Image {
                                mime_type: m.to_string(),
                                data: blob.clone(),
                            });
                        }
                        other => text.push_str(&format!(
                            "[resource {uri} ({}), {} base64 chars]",
                            other.unwrap_or("binary"),
                            blob.len()
                        )),
                    },
                    other => {
                        let json = serde_json::to_string(other).unwrap_or_default();
                        text.push_str(&format!("[resource] {json}"));
                    }
                },
                ContentBlock::ResourceLink(l) => text.push_str(&resource_link(l)),
                // Content kinds newer than this rmcp: show them as JSON rather than drop them.
                other => {
                    let json = serde_json::to_string(other).unwrap_or_default();
                    text.push_str(&json);
                }
            }
        }
        if let Some(s) = &result.structured_content {
            if text.is_empty() {
                text = s.to_string();
            } else if adds_data(&Stated::new(&text), s) {
                // MCP says the text should mirror the structured result, but servers differ:
                // many put the data in `structuredContent` and a summary in the text. What the
                // text does not say would otherwise never reach the model (issue 23).
                text.push_str(STRUCTURED_HEADER);
                text.push_str(&s.to_string());
            }
        }
        let raw = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
        ToolOutput {
            is_error: result.is_error.unwrap_or(false),
            text,
            images,
            diff,
            structured: result.structured_content,
            raw,
        }
    }
}

/// Put between a result's text and its `structuredContent` when the latter adds data.
pub const STRUCTURED_HEADER: &str = "\n\n[structuredContent]\n";

/// A result's text, and the same in lower case, for finding what it states.
struct Stated<'a> {
    text: &'a str,
    lower: String,
}

impl<'a> Stated<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            lower: text.to_lowercase(),
        }
    }

    /// Whether the text states `s`: as it is, or as words (`in_progress` written "in
    /// progress", `Error` written "error": enum values a rendering spells for people).
    fn states(&self, s: &str) -> bool {
        self.text.contains(s) || {
            let words = s.to_lowercase().replace('_', " ");
            self.lower.contains(&words)
        }
    }
}

/// Whether `structured` holds a string the text does not state. Only strings count: the
/// numbers and flags of a structured result are mostly sizes, counts, durations and states
/// that a text rendering states in words or leaves out as derivable (tern's own servers
/// mirror every string and keep such numbers for programs), and appending the whole JSON
/// for one of them would double most results.
fn adds_data(text: &Stated<'_>, structured: &serde_json::Value) -> bool {
    use serde_json::Value;
    match structured {
        Value::String(s) => {
            let s = s.trim();
            !s.is_empty() && !text.states(s)
        }
        Value::Array(items) => items.iter().any(|v| adds_data(text, v)),
        Value::Object(o) => o.values().any(|v| adds_data(text, v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// A resource link as the model reads it: the URI first (what names it), then what the
/// server says it is.
fn resource_link(l: &rmcp::model::Resource) -> String {
    let mut out = format!("[resource link: {}", l.uri);
    if let Some(m) = &l.mime_type {
        out.push_str(&format!(" ({m})"));
    }
    out.push_str(&format!(
        " \u{2014} {}",
        l.title.as_deref().unwrap_or(&l.name)
    ));
    if let Some(d) = l.description.as_deref().filter(|d| !d.is_empty()) {
        out.push_str(&format!(": {d}"));
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use rmcp::model::{EmbeddedResource, Resource};

    use super::*;

    #[test]
    fn structured_content_reaches_the_model_only_when_it_adds_data() {
        let with = |text: &str, structured: serde_json::Value| {
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(structured);
            ToolOutput::from(r).text
        };
        // A summary in the text, the data in structuredContent: both reach the model.
        let out = with(
            "Found 2 results.",
            serde_json::json!({"results": [{"title": "Rust book", "score": 0.9}]}),
        );
        let (text, json) = out.split_once(STRUCTURED_HEADER).unwrap();
        assert_eq!(text, "Found 2 results.");
        let json: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(json["results"][0]["title"], "Rust book");
        // Text that mirrors it (the JSON itself, or a rendering with every string) is enough.
        let mirrored = serde_json::json!({"path": "/w/a.txt", "bytes": 12, "created": true});
        assert_eq!(
            with(&mirrored.to_string(), mirrored.clone()),
            mirrored.to_string()
        );
        assert_eq!(
            with("wrote 12 bytes to `/w/a.txt` (created)", mirrored),
            "wrote 12 bytes to `/w/a.txt` (created)"
        );
        // Enum values spelled as words count as stated.
        assert_eq!(
            with(
                "- [>] 2: Fix the bug (in progress)",
                serde_json::json!({"todos": [{"id": "2", "text": "Fix the bug", "status": "in_progress"}]})
            ),
            "- [>] 2: Fix the bug (in progress)"
        );
        // No text at all: the structured result is the text.
        let r = CallToolResult::structured(serde_json::json!({"n": 1}));
        assert!(ToolOutput::from(r).text.contains("\"n\":1"));
    }

    #[test]
    fn links_and_embedded_resources_reach_the_model() {
        let mut link = Resource::new("demo://resource/dynamic/text/1", "Text 1");
        link.mime_type = Some("text/plain".into());
        link.description = Some("a dynamic text".into());
        let result = CallToolResult::success(vec![
            ContentBlock::text("Here:"),
            ContentBlock::ResourceLink(link),
            ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::text("the body", "demo://doc").with_mime_type("text/markdown"),
            )),
            ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::blob("iVBORw0KGgo=", "demo://logo").with_mime_type("image/png"),
            )),
        ]);
        let out = ToolOutput::from(result);
        assert_eq!(
            out.text,
            "Here:\n[resource link: demo://resource/dynamic/text/1 (text/plain) \u{2014} Text 1: a \
             dynamic text]\n[resource demo://doc (text/markdown)]\nthe body\n[resource demo://logo \
             (image/png)]"
        );
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].mime_type, "image/png");
    }
}
