//! `@path` in a REPL line: the file is read for the person's message through the gateway, as
//! an `fs__read_file` call like any the model makes — permission-checked, audited, capped and
//! redacted — never by the host itself.

use tern_protocol::{Image, ToolCall};

use super::{Engine, session};

/// The tool a mentioned file is read with (the built-in fs server's).
pub const MENTION_READ_TOOL: &str = "fs__read_file";

/// What a mentioned file read gave: its text, and the image when the file is one (tern-fs
/// returns an image file as an MCP image block).
#[derive(Debug, Clone)]
pub struct Mentioned {
    /// The result's text (the numbered lines of a text file; a one-line note for an image).
    pub text: String,
    /// The image blocks of the result.
    pub images: Vec<Image>,
}

impl Engine {
    /// Reads `path` (relative to the workspace) with [`MENTION_READ_TOOL`]; `Err` carries what
    /// the tool or the gateway said (a denial, a missing server, an unreadable file).
    pub async fn read_mentioned_file(&self, path: &str) -> Result<Mentioned, String> {
        let call = ToolCall {
            id: format!("user-mention-{}", session::random_hex(4)),
            name: MENTION_READ_TOOL.to_string(),
            arguments: serde_json::json!({ "path": path }),
        };
        let ctx = tern_gateway::CallContext {
            run_id: self.run_id().to_string(),
            session_id: self.session_id.clone(),
            ..Default::default()
        };
        let outcome = self.gateway.call(call, ctx).await;
        if outcome.result.is_error {
            Err(outcome.result.content)
        } else {
            Ok(Mentioned {
                text: outcome.result.content,
                images: outcome.result.images,
            })
        }
    }
}
