//! `tern mcp list | doctor | import | approve`.

use std::io::Write;

use anyhow::Context as _;
use serde::Serialize;
use tern_mcp::{HeldKind, ServerState, ServerStatus, pins::PinStore};

use crate::agent::servers::{PoolHooks, StartedPool, specs, start_pool};
use crate::{error::ConfigFailure, workspace::Workspace};

/// Starts the configured servers (or only `only`) and waits until each is ready or failed.
pub async fn start_and_settle(ws: &Workspace, only: Option<&str>) -> anyhow::Result<StartedPool> {
    start_pool_of(ws, &ws.config, only).await
}

/// [`start_and_settle`] for the servers of `config`.
pub async fn start_pool_of(
    ws: &Workspace,
    config: &tern_config::Config,
    only: Option<&str>,
) -> anyhow::Result<StartedPool> {
    let specs = specs(config, &ws.tern_exe, &ws.env, only)?;
    if let Some(name) = only
        && specs.is_empty()
    {
        if let Some(reason) = config.blocked_servers.get(name) {
            anyhow::bail!(
                "server `{name}` is not started: {reason}\nhint: the administrator's policy \
                 decides which servers may run; `tern mcp list` shows what it blocks"
            );
        }
        anyhow::bail!("no enabled server named `{name}` in the config");
    }
    let started = start_pool(
        specs,
        &ws.config,
        &ws.paths,
        &ws.cwd,
        ws.env.clone(),
        PoolHooks::default(),
    )?;
    started.pool.wait_settled().await;
    Ok(started)
}

/// Writes `text` through the run's redactor: what servers print (a crashed one's stderr, an
/// error naming its command line) may hold a key from the environment, and must not show it.
/// JSON is redacted value by value, so it stays valid JSON.
fn write_redacted(
    ws: &Workspace,
    json: bool,
    text: &[u8],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let redactor = crate::agent::redactor_for(ws);
    if json {
        let value: serde_json::Value = serde_json::from_slice(text)?;
        serde_json::to_writer_pretty(&mut *out, &redactor.redact_json(&value))?;
        writeln!(out)?;
    } else {
        out.write_all(redactor.redact(&String::from_utf8_lossy(text)).as_bytes())?;
    }
    Ok(())
}

/// `tern mcp list`.
pub async fn list(ws: &Workspace, json: bool, out: &mut dyn Write) -> anyhow::Result<i32> {
    let mut shown = Vec::new();
    let code = list_into(ws, json, &mut shown).await?;
    write_redacted(ws, json, &shown, out)?;
    Ok(code)
}

async fn list_into(ws: &Workspace, json: bool, out: &mut dyn Write) -> anyhow::Result<i32> {
    let started = start_and_settle(ws, None).await?;
    let statuses = started.pool.statuses();
    started.pool.shutdown().await;
    let blocked = blocked_servers(&ws.config);
    if json {
        // Each status (with `"source": "plugin: NAME"` for a plugin's server), then the blocked
        // servers in the same shape where they share it.
        let mut value = serde_json::to_value(&statuses)?;
        for entry in value.as_array_mut().into_iter().flatten() {
            let source = entry["name"]
                .as_str()
                .and_then(|name| plugin_source(ws, name));
            if let (Some(source), Some(map)) = (source, entry.as_object_mut()) {
                map.insert("source".into(), source.into());
            }
        }
        if let Some(list) = value.as_array_mut() {
            list.extend(
                blocked
                    .iter()
                    .map(|b| serde_json::to_value(b).unwrap_or_default()),
            );
        }
        serde_json::to_writer_pretty(&mut *out, &value)?;
        writeln!(out)?;
        return Ok(0);
    }
    let width = statuses
        .iter()
        .map(|s| s.name.len())
        .chain(blocked.iter().map(|b| b.name.len()))
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:width$}  {:<10}  {:<9}  {:<10}  {:>7}  {:>5}  {:>8}",
        "NAME", "STATUS", "TRANSPORT", "PROTOCOL", "PID", "TOOLS", "STARTUP"
    )?;
    for s in &statuses {
        let (status, protocol, pid, startup) = match &s.state {
            ServerState::Ready {
                pid,
                startup_ms,
                protocol_version,
                ..
            } => (
                "ready",
                protocol_version.as_str(),
                pid.map_or("-".to_string(), |p| p.to_string()),
                format!("{startup_ms} ms"),
            ),
            other => (other.label(), "-", "-".to_string(), "-".to_string()),
        };
        writeln!(
            out,
            "{:width$}  {:<10}  {:<9}  {:<10}  {:>7}  {:>5}  {:>8}",
            s.name, status, s.transport, protocol, pid, s.tools, startup
        )?;
        // A plugin's server says so: removing the plugin is how it goes away.
        if let Some(source) = plugin_source(ws, &s.name) {
            writeln!(out, "    source: {source}")?;
        }
        describe_problems(s, out)?;
    }
    for b in &blocked {
        writeln!(
            out,
            "{:width$}  {:<10}  {:<9}  {:<10}  {:>7}  {:>5}  {:>8}",
            b.name, "blocked", b.transport, "-", "-", "-", "-"
        )?;
        writeln!(out, "    {}", b.reason)?;
    }
    Ok(0)
}

/// `plugin: NAME` when the server `name` comes from an enabled plugin's layer.
fn plugin_source(ws: &Workspace, name: &str) -> Option<String> {
    let file = ws
        .config
        .mcp_servers
        .get(name)?
        .defined_at
        .file
        .to_string_lossy()
        .into_owned();
    file.starts_with(tern_config::PLUGIN_SOURCE_PREFIX)
        .then_some(file)
}

/// A configured server the managed policy keeps from starting.
#[derive(Debug, Serialize)]
struct Blocked<'a> {
    name: &'a str,
    transport: &'static str,
    state: &'static str,
    reason: &'a str,
}

/// The servers the managed policy blocked, by name (they are never started, so the pool does
/// not know them).
fn blocked_servers(config: &tern_config::Config) -> Vec<Blocked<'_>> {
    config
        .blocked_servers
        .iter()
        .map(|(name, reason)| Blocked {
            name,
            transport: match config.mcp_servers.get(name).map(|s| &s.transport) {
                Some(tern_config::Transport::Http { .. }) => "http",
                _ => "stdio",
            },
            state: "blocked",
            reason,
        })
        .collect()
}

fn describe_problems(s: &ServerStatus, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(e) = &s.last_error {
        writeln!(out, "    error: {e}")?;
    }
    if !s.stderr_tail.is_empty() {
        writeln!(out, "    stderr (last {} lines):", s.stderr_tail.len())?;
        for line in &s.stderr_tail {
            writeln!(out, "      {}", crate::render::sanitize(line))?;
        }
    }
    for h in &s.held {
        let what = match h.kind {
            HeldKind::New => "is new since the server's tools were approved",
            HeldKind::Changed => "changed since approved",
        };
        writeln!(
            out,
            "    held: tool `{}` {what}; run `tern mcp approve {}`",
            h.tool, s.name
        )?;
        for line in h.diff.lines() {
            writeln!(out, "      {line}")?;
        }
    }
    Ok(())
}

/// One server's lint report.
#[derive(Debug, Serialize)]
struct DoctorReport {
    server: String,
    ok: bool,
    status: ServerStatus,
    tools: usize,
    tokens: usize,
    findings: Vec<Finding>,
}

#[derive(Debug, Serialize)]
struct Finding {
    level: &'static str,
    tool: Option<String>,
    message: String,
}

/// `tern mcp doctor [NAME]`.
pub async fn doctor(
    ws: &Workspace,
    name: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let mut shown = Vec::new();
    let code = doctor_into(ws, name, json, &mut shown).await?;
    write_redacted(ws, json, &shown, out)?;
    Ok(code)
}

async fn doctor_into(
    ws: &Workspace,
    name: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let started = start_and_settle(ws, name).await?;
    let (table, dropped) = started.pool.table();
    let statuses = started.pool.statuses();
    let skills = super::mcp_skills::problems(&ws.config, &started.pool).await;
    started.pool.shutdown().await;

    let mut reports = Vec::new();
    for status in statuses {
        let mut findings = Vec::new();
        let ok = !matches!(status.state, ServerState::Failed { .. });
        if let ServerState::Failed { reason } = &status.state {
            findings.push(Finding {
                level: "error",
                tool: None,
                message: format!("failed to start: {reason}"),
            });
        }
        let entries: Vec<_> = table
            .entries()
            .iter()
            .filter(|e| e.server == status.name)
            .collect();
        for d in dropped.iter().filter(|d| d.server == status.name) {
            findings.push(Finding {
                level: "error",
                tool: Some(d.tool.clone()),
                message: format!("left out of the table: {}", d.reason),
            });
        }
        for h in &status.held {
            let what = match h.kind {
                HeldKind::New => "new since the server's tools were approved",
                HeldKind::Changed => "definition changed since approved",
            };
            findings.push(Finding {
                level: "warning",
                tool: Some(h.tool.clone()),
                message: format!("{what}; held out (`tern mcp approve {}`)", status.name),
            });
        }
        if let Some(stray) = &status.stray_stdout {
            findings.push(Finding {
                level: "warning",
                tool: None,
                message: format!(
                    "printed {} line{} on stdout that {} not MCP messages (first: `{}`); tern \
                     skips them, but stdout is the protocol and stricter clients fail on them: \
                     the server should log to stderr",
                    stray.lines,
                    if stray.lines == 1 { "" } else { "s" },
                    if stray.lines == 1 { "is" } else { "are" },
                    stray.first
                ),
            });
        }
        for dir in &status.narrowed_by_roots {
            findings.push(Finding {
                level: "warning",
                tool: None,
                message: format!(
                    "its arguments name {}, which the roots it is offered ({}) do not cover; a \
                     server that narrows its directories to its roots will not serve it \
                     (set `roots = false` or list the directory in `roots`)",
                    dir.display(),
                    status
                        .roots
                        .iter()
                        .flatten()
                        .map(|r| r.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        // A server that is up but offers nothing (tern-lsp without a language server) says
        // why in its instructions.
        if entries.is_empty()
            && matches!(status.state, ServerState::Ready { .. })
            && let Some(why) = status
                .instructions
                .as_deref()
                .filter(|i| !i.trim().is_empty())
        {
            findings.push(Finding {
                level: "note",
                tool: None,
                message: format!("offers no tools: {}", why.trim()),
            });
        }
        for e in &entries {
            if e.def.description.trim().is_empty() {
                findings.push(Finding {
                    level: "warning",
                    tool: Some(e.tool.clone()),
                    message: "no description: the model has to guess what it does".into(),
                });
            }
            let plain = format!("{}__{}", e.server, e.tool);
            if e.name != plain {
                let why = if plain.len() > tern_mcp::table::MAX_NAME_LEN {
                    "too long for providers (64 characters max)"
                } else {
                    "not a valid provider name or collides with another tool"
                };
                findings.push(Finding {
                    level: "warning",
                    tool: Some(e.tool.clone()),
                    message: format!("exposed as `{}`: `{plain}` is {why}", e.name),
                });
            }
            let tokens = e.def.estimated_tokens();
            if tokens > 1000 {
                findings.push(Finding {
                    level: "warning",
                    tool: Some(e.tool.clone()),
                    message: format!("definition costs ~{tokens} tokens on every request"),
                });
            }
        }
        // A broken SKILL.md: the skill is skipped, the server is still fine.
        for (_, problems) in skills.iter().filter(|(server, _)| *server == status.name) {
            for p in problems {
                findings.push(Finding {
                    level: if p.severity == "warning" {
                        "warning"
                    } else {
                        "error"
                    },
                    tool: None,
                    message: format!("skill {}", p.message),
                });
            }
        }
        reports.push(DoctorReport {
            server: status.name.clone(),
            ok,
            tools: entries.len(),
            tokens: entries.iter().map(|e| e.def.estimated_tokens()).sum(),
            status,
            findings,
        });
    }
    let failed = reports.iter().any(|r| !r.ok);
    let blocked: Vec<_> = blocked_servers(&ws.config)
        .into_iter()
        .filter(|b| name.is_none_or(|n| n == b.name))
        .collect();
    if json {
        let mut all = serde_json::to_value(&reports)?;
        if let Some(list) = all.as_array_mut() {
            list.extend(
                blocked.iter().map(
                    |b| serde_json::json!({"server": b.name, "ok": true, "blocked": b.reason}),
                ),
            );
        }
        serde_json::to_writer_pretty(&mut *out, &all)?;
        writeln!(out)?;
    } else {
        for r in &reports {
            let mark = if r.ok { "ok" } else { "FAILED" };
            writeln!(
                out,
                "{} [{mark}] {} tools, ~{} tokens of definitions",
                r.server, r.tools, r.tokens
            )?;
            for f in &r.findings {
                match &f.tool {
                    Some(t) => writeln!(out, "  {}: {t}: {}", f.level, f.message)?,
                    None => writeln!(out, "  {}: {}", f.level, f.message)?,
                }
            }
            if !r.ok && !r.status.stderr_tail.is_empty() {
                writeln!(out, "  stderr (last {} lines):", r.status.stderr_tail.len())?;
                for line in &r.status.stderr_tail {
                    writeln!(out, "    {}", crate::render::sanitize(line))?;
                }
            }
        }
        for b in &blocked {
            writeln!(out, "{} [blocked] not started", b.name)?;
            writeln!(out, "  note: {}", b.reason)?;
        }
        sandbox_report(ws, out)?;
    }
    Ok(if failed { 1 } else { 0 })
}

/// What the OS sandbox of the built-in shell can enforce on this machine, one line per layer
/// (each probed by starting a process under it), and the policy the config asks for.
fn sandbox_report(ws: &Workspace, out: &mut dyn Write) -> std::io::Result<()> {
    let support = tern_sandbox::Support::detect();
    let config = &ws.config.sandbox;
    writeln!(
        out,
        "sandbox: {} with network {} ([sandbox] in config.toml); this machine can enforce:",
        config.mode, config.network
    )?;
    if let Some(policy) = &ws.config.managed {
        let bound = policy
            .sandbox
            .as_ref()
            .map_or("any".to_string(), |b| format!("at most {}", b.value));
        writeln!(
            out,
            "  managed policy {}: sandbox {bound}; yolo {}",
            policy.path.display(),
            if policy.max_mode() == tern_config::PermissionMode::Yolo {
                "allowed"
            } else {
                "refused"
            }
        )?;
    }
    for line in support.to_string().lines() {
        writeln!(out, "  {line}")?;
    }
    if !support.is_complete() {
        writeln!(
            out,
            "  missing layers fall back to the strongest remaining ones (tool-servers/shell/README.md, \
             \"When the kernel lacks a layer\")"
        )?;
    }
    Ok(())
}

/// `tern mcp import FILE`.
pub fn import(ws: &Workspace, file: &std::path::Path, out: &mut dyn Write) -> anyhow::Result<i32> {
    let json =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let target = &ws.paths.user_config;
    let current = match std::fs::read_to_string(target) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", target.display())),
    };
    let report = tern_config::import_mcp_json(&json, &current).map_err(ConfigFailure)?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(target, &report.config_text)
        .with_context(|| format!("cannot write {}", target.display()))?;
    for w in &report.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "imported {} server(s) into {}: {}",
        report.imported.len(),
        target.display(),
        report.imported.join(", ")
    )?;
    Ok(0)
}

/// `tern mcp approve NAME`.
pub async fn approve(ws: &Workspace, name: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
    let started = start_and_settle(ws, Some(name)).await?;
    let listed = started.pool.listed_tools(name);
    let status = started.pool.statuses().pop();
    started.pool.shutdown().await;
    if let Some(ServerStatus {
        state: ServerState::Failed { reason },
        ..
    }) = &status
    {
        anyhow::bail!("server `{name}` failed to start, nothing to approve: {reason}");
    }
    let tools = listed.unwrap_or_default();
    let mut pins = PinStore::load(&ws.paths.pins_file())?;
    pins.approve(name, &tools);
    pins.save()?;
    writeln!(
        out,
        "approved the current definitions of {} tool(s) of `{name}`",
        tools.len()
    )?;
    Ok(0)
}
