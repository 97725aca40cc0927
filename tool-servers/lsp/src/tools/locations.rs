//! `definition`, `references` and `hover`: questions about the symbol at a position.

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_types::{GotoDefinitionResponse, Hover, Location, Url};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::{Lsp, Opened, PositionParams, failure, success};
use crate::render;
use crate::session;
use crate::text;

/// Characters of hover text returned at most.
const MAX_HOVER_CHARS: usize = 6_000;

impl Lsp {
    /// `definition` and `references`: locations.
    pub async fn locations(
        &self,
        p: &PositionParams,
        method: &str,
        include_declaration: bool,
        max: usize,
    ) -> CallToolResult {
        let opened = match self.open(&p.path).await {
            Ok(o) => o,
            Err(result) => return result,
        };
        let position = match lsp_position(&opened.text, p) {
            Ok(pos) => pos,
            Err(e) => return failure(&p.path, "bad_position", e),
        };
        let mut params = json!({
            "textDocument": {"uri": opened.uri.as_str()},
            "position": position,
        });
        if method == "textDocument/references" {
            params["context"] = json!({"includeDeclaration": include_declaration});
        }
        let capability = if method == "textDocument/definition" {
            "definitionProvider"
        } else {
            "referencesProvider"
        };
        let answer = match opened.session.request(method, capability, params).await {
            Ok(v) => v,
            Err(e) => return failure(&p.path, "server_failed", e),
        };
        let locations: Vec<(Url, lsp_types::Range)> = if answer.is_null() {
            Vec::new()
        } else if method == "textDocument/definition" {
            match serde_json::from_value::<GotoDefinitionResponse>(answer) {
                Ok(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range)],
                Ok(GotoDefinitionResponse::Array(ls)) => {
                    ls.into_iter().map(|l| (l.uri, l.range)).collect()
                }
                Ok(GotoDefinitionResponse::Link(ls)) => ls
                    .into_iter()
                    .map(|l| (l.target_uri, l.target_selection_range))
                    .collect(),
                Err(e) => return failure(&p.path, "server_failed", e),
            }
        } else {
            match serde_json::from_value::<Vec<Location>>(answer) {
                Ok(ls) => ls.into_iter().map(|l| (l.uri, l.range)).collect(),
                Err(e) => return failure(&p.path, "server_failed", e),
            }
        };
        let what = if method == "textDocument/definition" {
            "definition"
        } else {
            "references"
        };
        self.render_locations(&opened, &p.path, what, locations, max)
    }

    fn render_locations(
        &self,
        opened: &Opened,
        asked: &str,
        what: &str,
        locations: Vec<(Url, lsp_types::Range)>,
        max: usize,
    ) -> CallToolResult {
        let total = locations.len();
        let mut texts: HashMap<PathBuf, Option<String>> = HashMap::new();
        texts.insert(opened.real.clone(), Some(opened.text.clone()));
        let mut lines = Vec::new();
        let mut structured = Vec::new();
        for (uri, range) in locations.into_iter().take(max) {
            let Some(path) = session::path_of(&uri) else {
                lines.push(format!("{uri} (not a file)"));
                continue;
            };
            let text = texts
                .entry(path.clone())
                .or_insert_with(|| self.ws.read_inside(&path))
                .clone();
            let (line, column) = match &text {
                Some(t) => render::position(t, range.start.line, range.start.character),
                None => (
                    range.start.line as usize + 1,
                    range.start.character as usize + 1,
                ),
            };
            let source_line = text
                .as_deref()
                .and_then(|t| text::line(t, line - 1))
                .map(|l| l.trim().to_string());
            let shown = self.ws.shown(&path);
            match &source_line {
                Some(l) => lines.push(format!("{shown}:{line}:{column}: {l}")),
                None => lines.push(format!("{shown}:{line}:{column} (outside the root)")),
            }
            structured.push(json!({
                "path": shown,
                "line": line,
                "column": column,
                "text": source_line,
                "inside_root": path.starts_with(self.ws.root()),
            }));
        }
        let mut out = if total == 0 {
            format!("no {what} found for that position in {asked}\n")
        } else {
            format!("{total} {what}:\n{}\n", lines.join("\n"))
        };
        if total > max {
            out.push_str(&format!("… and {} more\n", total - max));
        }
        success(
            out,
            json!({"path": asked, "locations": structured, "total": total}),
        )
    }

    /// `hover`.
    pub async fn hover(&self, p: &PositionParams) -> CallToolResult {
        let opened = match self.open(&p.path).await {
            Ok(o) => o,
            Err(result) => return result,
        };
        let position = match lsp_position(&opened.text, p) {
            Ok(pos) => pos,
            Err(e) => return failure(&p.path, "bad_position", e),
        };
        let params = json!({"textDocument": {"uri": opened.uri.as_str()}, "position": position});
        let answer = match opened
            .session
            .request("textDocument/hover", "hoverProvider", params)
            .await
        {
            Ok(v) => v,
            Err(e) => return failure(&p.path, "server_failed", e),
        };
        if answer.is_null() {
            return success(
                format!("nothing to show for that position in {}\n", p.path),
                json!({"path": p.path, "hover": null}),
            );
        }
        let hover: Hover = match serde_json::from_value(answer) {
            Ok(h) => h,
            Err(e) => return failure(&p.path, "server_failed", e),
        };
        let mut text = render::hover(&hover.contents);
        if text.chars().count() > MAX_HOVER_CHARS {
            text = text.chars().take(MAX_HOVER_CHARS).collect::<String>() + "\n[… cut]";
        }
        success(text.clone(), json!({"path": p.path, "hover": text}))
    }
}

/// The LSP position a call means (see [`PositionParams`]).
fn lsp_position(text: &str, p: &PositionParams) -> Result<Value, String> {
    let lines = text.split('\n').count();
    let Some(index) = p.line.checked_sub(1) else {
        return Err("lines count from 1".into());
    };
    let Some(line) = text::line(text, index as usize) else {
        return Err(format!(
            "line {} is past the end of the file ({lines} lines)",
            p.line
        ));
    };
    let chars = match (p.column, p.symbol.as_deref()) {
        (Some(0), _) => return Err("columns count from 1".into()),
        (Some(c), _) => (c - 1) as usize,
        (None, Some(symbol)) => text::find_symbol(line, symbol).ok_or_else(|| {
            format!(
                "`{symbol}` does not occur on line {}: `{}`",
                p.line,
                line.trim()
            )
        })?,
        (None, None) => {
            return Err("give `column` or `symbol` to say where on the line".into());
        }
    };
    Ok(json!({"line": index, "character": text::utf16_of_char(line, chars)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, column: Option<u32>, symbol: Option<&str>) -> PositionParams {
        PositionParams {
            path: "x.py".into(),
            line,
            column,
            symbol: symbol.map(str::to_string),
        }
    }

    #[test]
    fn positions_come_from_a_column_or_a_symbol() {
        let text = "def add(a, b):\n    return ä + add(b)\n";
        assert_eq!(
            lsp_position(text, &at(2, None, Some("add"))).unwrap(),
            json!({"line": 1, "character": 15})
        );
        assert_eq!(
            lsp_position(text, &at(1, Some(5), None)).unwrap(),
            json!({"line": 0, "character": 4})
        );
        assert!(
            lsp_position(text, &at(9, Some(1), None))
                .unwrap_err()
                .contains("past the end")
        );
        assert!(
            lsp_position(text, &at(1, None, Some("zzz")))
                .unwrap_err()
                .contains("does not occur")
        );
        assert!(lsp_position(text, &at(1, None, None)).is_err());
        assert!(lsp_position(text, &at(0, Some(1), None)).is_err());
    }
}
