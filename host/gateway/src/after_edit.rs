//! Stage 4b, after an edit: when a call that writes files (`edits_files`) succeeded and a
//! built-in `lsp` server is in the pool, the gateway asks it for the new error-level
//! diagnostics of the written file and appends them to the result, so the model sees a broken
//! build right after its edit (issue 20; `[lsp] after_edit = "errors" | "off"`).
//!
//! The request is an ordinary MCP `tools/call` of the lsp server's `diagnostics` tool through
//! [`dispatch`] — the host runs no language-server code itself — bounded by `after_edit_wait_ms`
//! and the turn's cancellation. Anything that goes wrong (no language server for the file, a
//! timeout) adds nothing: the edit's own result is never made worse.

use serde_json::{Map, Value, json};
use tern_config::{AfterEdit, Builtin};
use tern_mcp::ToolEntry;

use crate::call::CallContext;
use crate::dispatch::{Dispatch, dispatch};
use crate::gateway::Gateway;

/// Diagnostics appended after an edit, at most.
const MAX_DIAGNOSTICS: u64 = 10;

impl Gateway {
    /// The text to append to a successful edit's result: the file's new errors, or `None`.
    pub(crate) async fn diagnostics_after_edit(
        &self,
        args: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Option<String> {
        if self.settings.after_edit == AfterEdit::Off {
            return None;
        }
        let path = args.get("path").and_then(Value::as_str)?;
        let entry = self.lsp_diagnostics()?;
        let wait_ms = self.settings.after_edit_wait_ms;
        let mut limits = self.settings.policy(&entry).limits;
        limits.timeout = limits
            .timeout
            .min(std::time::Duration::from_millis(wait_ms + 5_000));
        let how = Dispatch {
            limits,
            deny_paths: Vec::new(),
        };
        let ctx = CallContext {
            progress: None,
            ..ctx.clone()
        };
        let arguments = json!({
            "path": path,
            "severity": "error",
            "new_only": true,
            "wait_ms": wait_ms,
            "max": MAX_DIAGNOSTICS,
        });
        let Value::Object(arguments) = arguments else {
            return None;
        };
        let out = dispatch(
            &self.pool,
            &entry.server,
            &entry.tool,
            arguments,
            &how,
            &ctx,
        )
        .await
        .map_err(|(kind, message)| tracing::debug!(%kind, "no diagnostics after edit: {message}"))
        .ok()?;
        let found = out
            .structured
            .as_ref()
            .and_then(|s| s.get("diagnostics"))
            .and_then(Value::as_array)
            .is_some_and(|d| !d.is_empty());
        if out.is_error || !found {
            return None;
        }
        let text = self.redactor.redact(out.text.trim_end());
        Some(format!(
            "\n\nThe language server reports new errors after this edit:\n{text}"
        ))
    }

    /// The `diagnostics` tool of a built-in lsp server in the table, when there is one.
    fn lsp_diagnostics(&self) -> Option<ToolEntry> {
        let table = self.table();
        table
            .entries()
            .iter()
            .find(|e| {
                e.tool == "diagnostics"
                    && self
                        .settings
                        .servers
                        .get(&e.server)
                        .is_some_and(|s| s.builtin() == Some(Builtin::Lsp))
            })
            .cloned()
    }
}
