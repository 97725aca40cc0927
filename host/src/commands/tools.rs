//! `tern tools`: the merged tool table as the model sees it.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;
use tern_mcp::{ToolAnnotations, ToolEntry};

use super::mcp::start_and_settle;
use crate::workspace::Workspace;

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
    let started = start_and_settle(ws, None).await?;
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
    if json {
        let rows: Vec<ToolRow> = table.entries().iter().map(ToolRow::from).collect();
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
        let desc = e.def.description.lines().next().unwrap_or("");
        let desc: String = desc.chars().take(80).collect();
        writeln!(
            out,
            "{:width$}  {:>6}  {:<5}  {desc}",
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
