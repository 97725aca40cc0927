//! `tern hooks list` and `tern hooks import FILE` (issue 19, item 1).

use std::io::Write;

use anyhow::Context;

use crate::{error::ConfigFailure, workspace::Workspace};

/// `tern hooks list`: every hook in effect, by event, with its source.
pub fn list(ws: &Workspace, out: &mut dyn Write) -> anyhow::Result<i32> {
    let hooks = &ws.config.hooks;
    if hooks.is_empty() {
        writeln!(
            out,
            "no hooks configured\nhint: add [[hooks.PreToolUse]] tables to a config.toml, or \
             `tern hooks import .claude/settings.json`"
        )?;
        return Ok(0);
    }
    for event in tern_config::HookEvent::ALL {
        let of: Vec<_> = hooks.of(event).collect();
        if of.is_empty() {
            continue;
        }
        writeln!(out, "{event}")?;
        for hook in of {
            let matcher = hook
                .matcher
                .as_deref()
                .map(|m| format!(" [{m}]"))
                .unwrap_or_default();
            let closed = if hook.fail_closed {
                ", fail_closed"
            } else {
                ""
            };
            writeln!(
                out,
                "  {}{matcher} (timeout {} s{closed})\n    from {}",
                hook.command,
                hook.timeout.as_secs_f64(),
                hook.source()
            )?;
        }
    }
    Ok(0)
}

/// `tern hooks import FILE [--user]`.
pub fn import(
    ws: &Workspace,
    file: &std::path::Path,
    user: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let json =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let project = ws
        .paths
        .project_dir
        .clone()
        .unwrap_or_else(|| ws.cwd.clone());
    let inside_project = file.canonicalize().is_ok_and(|f| f.starts_with(&project));
    let target = if user || !inside_project {
        ws.paths.user_config.clone()
    } else {
        project.join(tern_config::PROJECT_CONFIG)
    };
    let current = match std::fs::read_to_string(&target) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", target.display())),
    };
    let report = tern_config::import_claude_hooks(&json, &current, &file.display().to_string())
        .map_err(ConfigFailure)?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&target, &report.config_text)
        .with_context(|| format!("cannot write {}", target.display()))?;
    for w in &report.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "imported {} hook(s) into {}:{}",
        report.imported,
        target.display(),
        report.added.trim_end()
    )?;
    if !user && inside_project {
        writeln!(
            out,
            "hint: the project config changed; review it, then run `tern trust` in {} so its \
             hooks run",
            project.display()
        )?;
    }
    Ok(0)
}
