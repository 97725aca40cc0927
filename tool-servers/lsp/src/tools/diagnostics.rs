//! `diagnostics`: what the language server says is wrong with a file, waited for within a
//! bound, optionally only what is new since the previous call.

use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::json;

use super::{DEFAULT_MAX_DIAGNOSTICS, Lsp, success};
use crate::render::{self, Item, Severity};

/// Longest wait a call may ask for.
const MAX_WAIT_MS: u64 = 60_000;

impl Lsp {
    /// `diagnostics`.
    pub async fn diagnostics(
        &self,
        path: &str,
        severity: Option<Severity>,
        new_only: bool,
        wait_ms: Option<u64>,
        max: Option<usize>,
    ) -> CallToolResult {
        let opened = match self.open(path).await {
            Ok(o) => o,
            Err(result) => return result,
        };
        let bound = wait_ms
            .map(|ms| Duration::from_millis(ms.min(MAX_WAIT_MS)))
            .unwrap_or(self.default_wait);
        let found = opened.session.diagnostics(&opened.uri, bound).await;
        let mut items: Vec<Item> = found
            .items
            .iter()
            .map(|d| Item::from_lsp(d, &opened.text))
            .collect();
        items.sort_by_key(|i| (i.severity, i.line, i.column));
        let before = self
            .baselines
            .lock()
            .ok()
            .and_then(|mut b| b.insert(opened.real.clone(), items.clone()));
        if new_only {
            items = render::new_since(items, before.as_deref().unwrap_or_default());
        }
        if let Some(min) = severity {
            items.retain(|i| i.severity <= min);
        }
        let max = max.unwrap_or(DEFAULT_MAX_DIAGNOSTICS).max(1);
        let omitted = items.len().saturating_sub(max);
        items.truncate(max);

        let shown = self.ws.shown(&opened.real);
        let server = opened.session.name().to_string();
        let what = match (new_only, severity) {
            (true, Some(Severity::Error)) => "new errors",
            (true, _) => "new diagnostics",
            (false, Some(Severity::Error)) => "errors",
            (false, _) => "diagnostics",
        };
        let mut text = if items.is_empty() {
            format!("{shown}: no {what} ({server})\n")
        } else {
            format!(
                "{shown}: {} ({what}, from {server})\n{}",
                render::summary(&items),
                render::diagnostics(&shown, &items)
            )
        };
        if omitted > 0 {
            text.push_str(&format!("… and {omitted} more (raise `max` to see them)\n"));
        }
        if !found.settled {
            text.push_str(&format!(
                "(the language server had not finished within {} ms: this may be incomplete; \
                 call again with a larger wait_ms)\n",
                bound.as_millis()
            ));
        }
        success(
            text,
            json!({
                "path": shown,
                "language": opened.session.language.name(),
                "server": server,
                "settled": found.settled,
                "diagnostics": items,
                "counts": render::counts(&items),
                "omitted": omitted,
            }),
        )
    }
}
