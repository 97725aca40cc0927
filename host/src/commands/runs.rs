//! `tern runs` and `tern trace RUN_ID`: reading back `runs/<run_id>/events.jsonl` as typed
//! events.

use std::{collections::HashMap, io::Write, path::Path};

use anyhow::Context as _;
use tern_protocol::{Envelope, Event};

use crate::{
    render::{format_cost, format_tokens, sanitize},
    workspace::Workspace,
};

/// Loads a run's events; every line must be an event.
pub fn load_events(path: &Path) -> anyhow::Result<Vec<Envelope>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_events(&text, path)
}

/// Parses the text of an events file (`path` names it in errors); every line must be an event.
pub fn parse_events(text: &str, path: &Path) -> anyhow::Result<Vec<Envelope>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a tern event", path.display(), i + 1))
        })
        .collect()
}

/// `tern runs`: the most recent runs, newest first.
pub fn list(ws: &Workspace, limit: usize, out: &mut dyn Write) -> anyhow::Result<i32> {
    let dir = ws.paths.runs_dir();
    let mut ids: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join("events.jsonl").is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    if ids.is_empty() {
        writeln!(out, "no runs yet in {}", dir.display())?;
        return Ok(0);
    }
    ids.sort();
    ids.reverse();
    writeln!(
        out,
        "{:<22}  {:<9}  {:>5}  {:>7}  {:>8}  GOAL",
        "RUN", "STATUS", "STEPS", "TIME", "COST"
    )?;
    for id in ids.into_iter().take(limit) {
        let events = load_events(&dir.join(&id).join("events.jsonl")).unwrap_or_default();
        let goal = one_line(&goal_of(&events), 60);
        let finished = events.iter().rev().find_map(|e| match &e.event {
            Event::RunFinished {
                status,
                steps,
                duration_ms,
                cost_usd,
                ..
            } => Some((*status, *steps, *duration_ms, *cost_usd)),
            _ => None,
        });
        let (status, steps, time, cost) = match finished {
            Some((status, steps, ms, cost)) => (
                status.as_str().to_string(),
                steps.to_string(),
                format!("{:.1} s", ms as f64 / 1000.0),
                cost.map(format_cost).unwrap_or_else(|| "-".into()),
            ),
            None => ("unfinished".into(), "-".into(), "-".into(), "-".into()),
        };
        writeln!(
            out,
            "{id:<22}  {status:<9}  {steps:>5}  {time:>7}  {cost:>8}  {goal}"
        )?;
    }
    Ok(0)
}

/// What a run was asked: its `run_started` goal, or for a REPL run (whose goal is
/// `(interactive)`) the first message the person typed, when there was one.
fn goal_of(events: &[Envelope]) -> String {
    let goal = events.iter().find_map(|e| match &e.event {
        Event::RunStarted { goal, .. } => Some(goal.clone()),
        _ => None,
    });
    let first = || {
        events.iter().find_map(|e| match &e.event {
            Event::UserMessage { text } => Some(text.clone()),
            _ => None,
        })
    };
    match goal {
        Some(g) if g == INTERACTIVE => first().unwrap_or(g),
        Some(g) => g,
        None => first().unwrap_or_default(),
    }
}

/// The goal the REPL's runs start with (their messages come later, one per turn).
pub const INTERACTIVE: &str = "(interactive)";

/// Milliseconds since the epoch of an event's `ts` (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
fn ts_ms(ts: &str) -> Option<i64> {
    let n = |r: std::ops::Range<usize>| ts.get(r).and_then(|s| s.parse::<i64>().ok());
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, s, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

/// One line, at most `max` characters, with foreign escapes made visible.
fn one_line(s: &str, max: usize) -> String {
    let s = sanitize(&s.replace('\n', "⏎"));
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max).collect::<String>())
    } else {
        s
    }
}

fn tokens_in(input: u64, cache_read: u64, cache_creation: u64) -> String {
    format_tokens(input + cache_read + cache_creation)
}

/// Renders a run as a readable timeline.
pub fn render_trace(events: &[Envelope]) -> String {
    render(events, &|_| None)
}

/// How deep `tern trace` follows sub-agent runs (each level is indented further).
const MAX_TREE_DEPTH: usize = 8;

/// Renders a run and, under each tool call whose result names a sub-agent run of it (the
/// agent server's `[sub-agent run ID …]` line), that run's own trace, indented — recursively.
/// Sub-runs no call names (a call cancelled before its result) follow at the end.
pub fn render_tree(runs_dir: &Path, events: &[Envelope]) -> String {
    let mut seen = std::collections::HashSet::new();
    tree(runs_dir, events, 0, &mut seen)
}

fn tree(
    runs_dir: &Path,
    events: &[Envelope],
    depth: usize,
    seen: &mut std::collections::HashSet<String>,
) -> String {
    let Some(run_id) = events.first().map(|e| e.run_id.clone()) else {
        return String::new();
    };
    seen.insert(run_id.clone());
    let mut children = if depth < MAX_TREE_DEPTH {
        child_runs(runs_dir, &run_id)
    } else {
        Vec::new()
    };
    children.retain(|(id, _)| !seen.contains(id));
    let rendered: Vec<(String, String)> = children
        .iter()
        .map(|(id, child)| (id.clone(), tree(runs_dir, child, depth + 1, seen)))
        .collect();
    let used = std::cell::RefCell::new(std::collections::HashSet::new());
    let mut out = render(events, &|output: &str| {
        let blocks: Vec<String> = rendered
            .iter()
            .filter(|(id, _)| output.contains(&format!("sub-agent run {id}")))
            .map(|(id, text)| {
                used.borrow_mut().insert(id.clone());
                indent(text)
            })
            .collect();
        (!blocks.is_empty()).then(|| blocks.concat())
    });
    let used = used.into_inner();
    let orphans: Vec<&(String, String)> = rendered
        .iter()
        .filter(|(id, _)| !used.contains(id))
        .collect();
    if !orphans.is_empty() {
        out.push_str("sub-agent runs no call result names (cancelled or failed calls):\n");
        for (_, text) in orphans {
            out.push_str(&indent(text));
        }
    }
    out
}

/// A sub-run's trace under its call: indented, with a marker on its first line.
fn indent(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        out.push_str(if i == 0 {
            "            ↳ "
        } else {
            "              "
        });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The runs whose `run_started` names `parent` as their parent, oldest first.
pub(crate) fn child_runs(runs_dir: &Path, parent: &str) -> Vec<(String, Vec<Envelope>)> {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids.into_iter()
        .filter_map(|id| {
            let path = runs_dir.join(&id).join("events.jsonl");
            let first = std::fs::read_to_string(&path).ok()?;
            let first: Envelope = serde_json::from_str(first.lines().next()?).ok()?;
            match &first.event {
                Event::RunStarted {
                    parent_run_id: Some(p),
                    ..
                } if p == parent => Some((id, load_events(&path).ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// [`render_trace`], with `nested(output)` giving what to show under a tool call's line.
fn render(events: &[Envelope], nested: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let t0 = events.first().and_then(|e| ts_ms(&e.ts)).unwrap_or(0);
    let at = |e: &Envelope| {
        let t = ts_ms(&e.ts).unwrap_or(t0);
        format!("+{:>7.3}s", (t - t0) as f64 / 1000.0)
    };
    let decisions: HashMap<&str, String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::PermissionDecided {
                call_id,
                decision,
                rule,
                ..
            } => Some((call_id.as_str(), format!("{} by {rule}", decision.as_str()))),
            _ => None,
        })
        .collect();
    let mut goal_pending: Option<String> = events.iter().find_map(|e| match &e.event {
        Event::RunStarted { goal, .. } => Some(goal.clone()),
        _ => None,
    });
    // Servers start concurrently, so their ready order is noise: consecutive `server_ready`
    // events are shown as one line, by name.
    let mut ready: Vec<String> = Vec::new();
    let mut ready_at = String::new();
    for e in events {
        if let Event::ServerReady {
            server,
            tools,
            startup_ms,
            ..
        } = &e.event
        {
            if ready.is_empty() {
                ready_at = at(e);
            }
            ready.push(format!("{server} ({tools} tools, {startup_ms} ms)"));
            continue;
        }
        let line = match &e.event {
            Event::RunStarted {
                goal,
                model,
                provider,
                cwd,
                ..
            } => {
                out.push_str(&format!(
                    "run {} · session {}\nmodel {model} ({provider}) · cwd {cwd}\ngoal: {}\n",
                    e.run_id,
                    e.session_id,
                    one_line(goal, 200),
                ));
                None
            }
            // A headless run's message is its goal, already shown above.
            Event::UserMessage { text } => {
                if goal_pending.as_deref() == Some(text.as_str()) {
                    goal_pending = None;
                    None
                } else {
                    Some(format!("user: \"{}\"", one_line(text, 160)))
                }
            }
            Event::ServerFailed { server, reason, .. } => {
                Some(format!("server {server} FAILED: {}", one_line(reason, 160)))
            }
            Event::ModelResponse {
                step,
                stop_reason,
                tool_calls,
                input_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                output_tokens,
                latency_ms,
                text,
                ..
            } => Some(format!(
                "step {step} · model: {stop_reason} · {tool_calls} tool call(s) · {} in ({} cached) / {} out · {latency_ms} ms{}",
                tokens_in(*input_tokens, *cache_read_tokens, *cache_creation_tokens),
                format_tokens(*cache_read_tokens),
                format_tokens(*output_tokens),
                if text.trim().is_empty() {
                    String::new()
                } else {
                    format!("\n            \"{}\"", one_line(text, 120))
                }
            )),
            Event::ModelRetry {
                attempt,
                delay_ms,
                reason,
                ..
            } => Some(format!(
                "  retry {attempt} in {delay_ms} ms: {}",
                one_line(reason, 120)
            )),
            Event::Compaction {
                reason,
                stage,
                before_tokens,
                after_tokens,
                elided_results,
                summarized_messages,
                ..
            } => Some(format!(
                "  context {reason} · {stage} · {} → {} tokens · {} elided, {} summarized",
                format_tokens(*before_tokens),
                format_tokens(*after_tokens),
                elided_results,
                summarized_messages
            )),
            Event::TodoUpdated { todos, counts } => {
                let list = tern_protocol::todo::TodoList {
                    todos: todos.clone(),
                    counts: *counts,
                    changed: true,
                };
                let now = list
                    .in_progress()
                    .map(|t| format!(" · now: {}", one_line(&t.text, 80)))
                    .unwrap_or_default();
                Some(format!(
                    "  todo · {} item(s) · {}{now}",
                    todos.len(),
                    list.progress()
                ))
            }
            Event::ToolCallFinished {
                call_id,
                tool,
                duration_ms,
                is_error,
                error_type,
                summary,
                ..
            } => Some(format!(
                "  ⏺ {tool} · {} · {duration_ms} ms · {}{}",
                decisions
                    .get(call_id.as_str())
                    .map_or("not run", String::as_str),
                if *is_error {
                    format!("ERROR ({})", error_type.map_or("tool", |k| k.as_str()))
                } else {
                    "ok".to_string()
                },
                if summary.is_empty() {
                    String::new()
                } else {
                    format!("\n            {}", one_line(summary, 120))
                }
            )),
            Event::ReplayCompared {
                tool,
                call_id,
                verdict,
                differences,
                ..
            } if *verdict != tern_protocol::ReplayVerdict::Identical => Some(format!(
                "  ↺ {tool} ({call_id}) {verdict:?} from the recording: {}",
                one_line(&differences.join("; "), 160)
            )),
            Event::ReplaySummary {
                recorded_run_id,
                calls,
                identical,
                diverged,
                missing,
                ..
            } => Some(format!(
                "replay of {recorded_run_id}: {calls} call(s), {identical} identical, {diverged} \
                 diverged, {missing} missing"
            )),
            Event::Error { message } => Some(format!("ERROR {}", one_line(message, 200))),
            Event::RunFinished {
                status,
                steps,
                duration_ms,
                input_tokens,
                cache_read_tokens,
                cache_creation_tokens,
                output_tokens,
                cost_usd,
                error,
                ..
            } => Some(format!(
                "run_finished · {} · {steps} steps · {:.1} s · {} in ({} cached) / {} out{}{}",
                status.as_str(),
                *duration_ms as f64 / 1000.0,
                tokens_in(*input_tokens, *cache_read_tokens, *cache_creation_tokens),
                format_tokens(*cache_read_tokens),
                format_tokens(*output_tokens),
                cost_usd
                    .map(|c| format!(" · {}", format_cost(c)))
                    .unwrap_or_default(),
                match error {
                    Some(err) => format!("\n            {}", one_line(err, 200)),
                    None => String::new(),
                }
            )),
            _ => None,
        };
        if let Some(line) = line {
            // Events nobody reads (state, logs) may come between two `server_ready`s: the
            // servers are shown as one line up to the next line that is shown.
            if !ready.is_empty() {
                ready.sort();
                out.push_str(&format!("{ready_at} servers ready: {}\n", ready.join(", ")));
                ready.clear();
            }
            out.push_str(&format!("{} {line}\n", at(e)));
        }
        if let Event::ToolCallFinished { output, .. } = &e.event
            && let Some(block) = nested(output)
        {
            out.push_str(&block);
        }
    }
    if !ready.is_empty() {
        ready.sort();
        out.push_str(&format!("{ready_at} servers ready: {}\n", ready.join(", ")));
    }
    out
}

/// The events file of the run `run_id` names (a unique prefix is enough).
pub fn find_run(ws: &Workspace, run_id: &str) -> anyhow::Result<std::path::PathBuf> {
    let dir = ws.paths.runs_dir();
    let mut matches: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("no runs in {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(run_id))
        .collect();
    matches.sort();
    let id = match matches.as_slice() {
        [one] => one.clone(),
        [] => anyhow::bail!("no run {run_id} in {} (see `tern runs`)", dir.display()),
        many => anyhow::bail!("{run_id} matches {} runs: {}", many.len(), many.join(", ")),
    };
    Ok(dir.join(&id).join("events.jsonl"))
}

/// `tern trace RUN_ID` (a unique prefix is enough): the run, with the runs of its sub-agents
/// nested under the calls that made them.
///
/// With `atif`, the run as an ATIF trajectory (JSON, Harbor's Agent Trajectory Interchange
/// Format), its sub-agents' runs embedded.
pub fn trace(
    ws: &Workspace,
    run_id: &str,
    format: TraceFormat,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let events = load_events(&find_run(ws, run_id)?)?;
    match format {
        TraceFormat::Text => write!(out, "{}", render_tree(&ws.paths.runs_dir(), &events))?,
        TraceFormat::Atif => {
            let trajectory = crate::atif::from_run(&ws.paths.runs_dir(), &events);
            writeln!(out, "{}", serde_json::to_string_pretty(&trajectory)?)?;
        }
    }
    Ok(0)
}

/// `tern trace --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TraceFormat {
    /// A timeline for people.
    #[default]
    Text,
    /// An ATIF trajectory (JSON), as Harbor reads agents' histories.
    Atif,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_epoch_ms() {
        assert_eq!(ts_ms("1970-01-01T00:00:01.500Z"), Some(1500));
        assert_eq!(ts_ms("2026-11-30T09:30:00.000Z"), Some(1_796_031_000_000));
        assert_eq!(ts_ms("garbage"), None);
    }
}
