//! `tern tools`: the merged tool table as the model sees it.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;
use tern_mcp::{ToolAnnotations, ToolEntry};

use super::mcp::start_pool_of;
use crate::{
    agent::context::defer::{self, with_tool_search},
    workspace::Workspace,
};

/// One row of `tern tools --json` (a stable shape for scripts).
#[derive(Debug, Serialize)]
pub struct ToolRow<'a> {
    pub name: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    pub description: &'a str,
    pub annotations: &'a ToolAnnotations,
    pub input_schema: &'a Value,
    pub estimated_tokens: usize,
    /// Kept out of the model's table, findable with `tern__tool_search`.
    pub deferred: bool,
}

impl<'a> From<&'a ToolEntry> for ToolRow<'a> {
    fn from(e: &'a ToolEntry) -> Self {
        ToolRow {
            name: &e.name,
            server: &e.server,
            tool: &e.tool,
            description: &e.def.description,
            annotations: &e.def.annotations,
            input_schema: &e.def.input_schema,
            estimated_tokens: e.def.estimated_tokens(),
            deferred: false,
        }
    }
}

/// Runs `tern tools`.
pub async fn run(
    ws: &Workspace,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<i32> {
    // The table as a run would have it: with tern's tool search when tools may be deferred.
    let catalog = std::env::temp_dir().join(format!("tern-tools-{}.json", std::process::id()));
    let config = with_tool_search(&ws.config, &catalog).map_err(anyhow::Error::msg)?;
    let started = start_pool_of(ws, &config, None).await;
    let _ = std::fs::remove_file(&catalog);
    let started = started?;
    let (table, dropped) = started.pool.table();
    let statuses = started.pool.statuses();
    started.pool.shutdown().await;
    for d in &dropped {
        writeln!(
            err,
            "warning: {}: tool `{}` left out: {}",
            d.server, d.tool, d.reason
        )?;
    }
    for s in &statuses {
        if let tern_mcp::ServerState::Failed { reason } = &s.state {
            writeln!(
                err,
                "warning: server `{}` failed: {reason} (see `tern mcp list`)",
                s.name
            )?;
        }
        for h in &s.held {
            let what = match h.kind {
                tern_mcp::HeldKind::New => "is new since the server's tools were approved",
                tern_mcp::HeldKind::Changed => "changed since approved",
            };
            writeln!(
                err,
                "warning: {}: tool `{}` {what} and is held out; `tern mcp approve {}`",
                s.name, h.tool, s.name
            )?;
        }
    }
    let window = ws.config.model.context_window.map(u64::from).or_else(|| {
        let name = ws.config.model.name.as_deref()?;
        tern_model::catalog::lookup(name).map(|k| u64::from(k.context_window))
    });
    let plan = defer::plan(
        table.entries(),
        &config.mcp_servers,
        &config.context,
        window,
        &Default::default(),
        |e| e.def.estimated_tokens() as u64,
    );
    let is_deferred = |name: &str| plan.deferred.iter().any(|d| d.name == name);
    if json {
        let rows: Vec<ToolRow> = table
            .entries()
            .iter()
            .map(|e| ToolRow {
                deferred: is_deferred(&e.name),
                ..ToolRow::from(e)
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(0);
    }
    let width = table
        .entries()
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:width$}  {:>6}  {:<5}  DESCRIPTION",
        "NAME", "TOKENS", "HINTS"
    )?;
    for e in table.entries() {
        let desc = crate::render::sanitize(e.def.description.lines().next().unwrap_or(""));
        let desc: String = desc.chars().take(80).collect();
        let mark = if is_deferred(&e.name) {
            "(deferred) "
        } else {
            ""
        };
        writeln!(
            out,
            "{:width$}  {:>6}  {:<5}  {mark}{desc}",
            e.name,
            e.def.estimated_tokens(),
            hints(&e.def.annotations)
        )?;
    }
    let total: usize = table
        .entries()
        .iter()
        .map(|e| e.def.estimated_tokens())
        .sum();
    writeln!(out, "{} tools, ~{total} tokens of definitions", table.len())?;
    if !plan.deferred.is_empty() {
        let saved = plan.full_tokens.saturating_sub(plan.offered_tokens);
        writeln!(
            out,
            "{} deferred behind {}: the model is offered {} tools, ~{} tokens ({} saved, {:.0}%)",
            plan.deferred.len(),
            defer::SEARCH_TOOL,
            plan.offered.len(),
            plan.offered_tokens,
            saved,
            saved as f64 * 100.0 / plan.full_tokens.max(1) as f64
        )?;
    }
    Ok(0)
}

/// `r` read-only, `d` destructive, `i` idempotent, `o` open-world; `-` when unset/false.
pub fn hints(a: &ToolAnnotations) -> String {
    let flag = |v: Option<bool>, c: char| if v == Some(true) { c } else { '-' };
    [
        flag(a.read_only, 'r'),
        flag(a.destructive, 'd'),
        flag(a.idempotent, 'i'),
        flag(a.open_world, 'o'),
    ]
    .iter()
    .collect()
}
