//! `symbols`: a file's outline, or a search of the workspace by name.

use std::path::Path;

use lsp_types::{DocumentSymbolResponse, SymbolInformation, Url, WorkspaceSymbolResponse};
use rmcp::model::CallToolResult;
use serde_json::json;

use super::{Lsp, failure, success};
use crate::detect::Language;
use crate::render;
use crate::session;

/// Symbols listed at most.
const MAX_SYMBOLS: usize = 100;

/// One symbol a workspace search found.
struct Found {
    name: String,
    kind: &'static str,
    container: Option<String>,
    uri: Url,
    /// 0-based.
    line: Option<u32>,
}

impl Lsp {
    /// `symbols`: a file's outline, or a search of the workspace.
    pub async fn symbols(
        &self,
        path: Option<&str>,
        query: Option<&str>,
        language: Option<Language>,
    ) -> CallToolResult {
        match (path, query) {
            (Some(path), None) => self.outline(path).await,
            (path, Some(query)) => {
                let language = match (language, path) {
                    (Some(l), _) => Some(l),
                    (None, Some(p)) => Language::of_path(Path::new(p)).map(|(l, _)| l),
                    (None, None) => None,
                };
                self.search(query, language).await
            }
            (None, None) => failure(
                "",
                "bad_arguments",
                "give `path` (a file's outline) or `query` (a search of the workspace)",
            ),
        }
    }

    async fn outline(&self, path: &str) -> CallToolResult {
        let opened = match self.open(path).await {
            Ok(o) => o,
            Err(result) => return result,
        };
        let params = json!({"textDocument": {"uri": opened.uri.as_str()}});
        let answer = match opened
            .session
            .request(
                "textDocument/documentSymbol",
                "documentSymbolProvider",
                params,
            )
            .await
        {
            Ok(v) => v,
            Err(e) => return failure(path, "server_failed", e),
        };
        let mut outline = Vec::new();
        match serde_json::from_value::<Option<DocumentSymbolResponse>>(answer) {
            Ok(Some(DocumentSymbolResponse::Nested(symbols))) => {
                render::outline(&symbols, 0, &mut outline);
            }
            Ok(Some(DocumentSymbolResponse::Flat(symbols))) => {
                outline.extend(symbols.iter().map(|s| flat(s, 0)));
            }
            Ok(None) => {}
            Err(e) => return failure(path, "server_failed", e),
        }
        let shown = self.ws.shown(&opened.real);
        let total = outline.len();
        outline.truncate(MAX_SYMBOLS * 5);
        let mut text = format!("{shown}: {total} symbols\n");
        for s in &outline {
            text.push_str(&format!(
                "{}{} {} (line {}{})\n",
                "  ".repeat(s.depth),
                s.kind,
                s.name,
                s.line,
                if s.end_line > s.line {
                    format!("-{}", s.end_line)
                } else {
                    String::new()
                }
            ));
        }
        success(
            text,
            json!({"path": shown, "symbols": outline, "total": total}),
        )
    }

    async fn search(&self, query: &str, language: Option<Language>) -> CallToolResult {
        let languages: Vec<Language> = match language {
            Some(l) => vec![l],
            None => self.detected.servers.iter().map(|s| s.language).collect(),
        };
        let mut lines = Vec::new();
        let mut structured = Vec::new();
        let mut errors = Vec::new();
        for language in languages {
            let session = match self.session(language).await {
                Ok(s) => s,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let answer = session
                .request(
                    "workspace/symbol",
                    "workspaceSymbolProvider",
                    json!({"query": query}),
                )
                .await;
            let found: Vec<Found> =
                match answer.map(serde_json::from_value::<Option<WorkspaceSymbolResponse>>) {
                    Ok(Ok(Some(WorkspaceSymbolResponse::Flat(symbols)))) => symbols
                        .into_iter()
                        .map(|s| Found {
                            name: s.name,
                            kind: render::kind(s.kind),
                            container: s.container_name,
                            line: Some(s.location.range.start.line),
                            uri: s.location.uri,
                        })
                        .collect(),
                    Ok(Ok(Some(WorkspaceSymbolResponse::Nested(symbols)))) => symbols
                        .into_iter()
                        .map(|s| {
                            let (uri, line) = match s.location {
                                lsp_types::OneOf::Left(l) => (l.uri, Some(l.range.start.line)),
                                lsp_types::OneOf::Right(w) => (w.uri, None),
                            };
                            Found {
                                name: s.name,
                                kind: render::kind(s.kind),
                                container: s.container_name,
                                uri,
                                line,
                            }
                        })
                        .collect(),
                    Ok(Ok(None)) => Vec::new(),
                    Ok(Err(e)) => {
                        errors.push(format!("{}: {e}", session.name()));
                        continue;
                    }
                    Err(e) => {
                        errors.push(e.to_string());
                        continue;
                    }
                };
            for f in found {
                let Some(path) = session::path_of(&f.uri) else {
                    continue;
                };
                let shown = self.ws.shown(&path);
                let at = f.line.map_or(String::new(), |l| format!(":{}", l + 1));
                let inside = f.container.map_or(String::new(), |c| format!(" in {c}"));
                lines.push(format!("{} {}{inside} — {shown}{at}", f.kind, f.name));
                structured.push(json!({
                    "name": f.name, "kind": f.kind, "path": shown,
                    "line": f.line.map(|l| l + 1),
                }));
            }
        }
        if lines.is_empty() && !errors.is_empty() {
            return failure("", "server_failed", errors.join("; "));
        }
        let total = lines.len();
        lines.truncate(MAX_SYMBOLS);
        let mut text = format!("{total} symbols matching `{query}`\n{}\n", lines.join("\n"));
        if total > MAX_SYMBOLS {
            text.push_str(&format!("… and {} more\n", total - MAX_SYMBOLS));
        }
        structured.truncate(MAX_SYMBOLS);
        success(
            text,
            json!({"query": query, "symbols": structured, "total": total}),
        )
    }
}

fn flat(s: &SymbolInformation, depth: usize) -> render::Outline {
    render::Outline {
        name: s.name.clone(),
        kind: render::kind(s.kind),
        line: s.location.range.start.line as usize + 1,
        end_line: s.location.range.end.line as usize + 1,
        depth,
        detail: s.container_name.clone(),
    }
}
