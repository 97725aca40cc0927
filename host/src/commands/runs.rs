//! `tern runs` and `tern trace RUN_ID`: reading back `runs/<run_id>/events.jsonl`.

use std::{io::Write, path::Path};

use anyhow::Context as _;
use serde_json::Value;

use crate::render::format_tokens;
use crate::workspace::Workspace;

/// Loads a run's events; every line must be JSON.
pub fn load_events(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a JSON event", path.display(), i + 1))
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
        "{:<22}  {:<9}  {:>5}  {:>7}  GOAL",
        "RUN", "STATUS", "STEPS", "TIME"
    )?;
    for id in ids.into_iter().take(limit) {
        let events = load_events(&dir.join(&id).join("events.jsonl")).unwrap_or_default();
        let goal = events
            .iter()
            .find(|e| e["type"] == "run_started")
            .and_then(|e| e["goal"].as_str())
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>();
        let fin = events.iter().rev().find(|e| e["type"] == "run_finished");
        let (status, steps, time) = match fin {
            Some(f) => (
                f["status"].as_str().unwrap_or("?").to_string(),
                f["steps"].to_string(),
                format!("{:.1} s", f["duration_ms"].as_f64().unwrap_or(0.0) / 1000.0),
            ),
            None => ("unfinished".to_string(), "-".into(), "-".into()),
        };
        writeln!(out, "{id:<22}  {status:<9}  {steps:>5}  {time:>7}  {goal}")?;
    }
    Ok(0)
}

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

fn one_line(s: &str, max: usize) -> String {
    let s = s.replace('\n', "⏎");
    if s.chars().count() > max {
        format!("{}…", s.chars().take(max).collect::<String>())
    } else {
        s
    }
}

/// Renders a run as a readable timeline.
pub fn render_trace(events: &[Value]) -> String {
    let mut out = String::new();
    let t0 = events
        .first()
        .and_then(|e| e["ts"].as_str())
        .and_then(ts_ms)
        .unwrap_or(0);
    let at = |e: &Value| {
        let t = e["ts"].as_str().and_then(ts_ms).unwrap_or(t0);
        format!("+{:>7.3}s", (t - t0) as f64 / 1000.0)
    };
    let mut decisions: std::collections::HashMap<String, String> = Default::default();
    for e in events {
        if e["type"] == "permission_decided" {
            decisions.insert(
                e["call_id"].as_str().unwrap_or("").to_string(),
                format!(
                    "{} by {}",
                    e["decision"].as_str().unwrap_or("?"),
                    e["rule"].as_str().unwrap_or("?")
                ),
            );
        }
    }
    // Servers start concurrently, so their ready order is noise: consecutive
    // `server_ready` events are shown as one line, by name.
    let mut ready: Vec<(String, String)> = Vec::new();
    let mut ready_at = String::new();
    for e in events {
        if e["type"] == "server_ready" {
            if ready.is_empty() {
                ready_at = at(e);
            }
            ready.push((
                e["server"].as_str().unwrap_or("?").to_string(),
                format!(
                    "{} ({} tools, {} ms)",
                    e["server"].as_str().unwrap_or("?"),
                    e["tools"],
                    e["startup_ms"]
                ),
            ));
            continue;
        }
        if !ready.is_empty() {
            ready.sort();
            let list: Vec<String> = ready.drain(..).map(|(_, s)| s).collect();
            out.push_str(&format!("{ready_at} servers ready: {}\n", list.join(", ")));
        }
        let line = match e["type"].as_str().unwrap_or("") {
            "run_started" => {
                out.push_str(&format!(
                    "run {} · session {}\nmodel {} ({}) · cwd {}\ngoal: {}\n",
                    e["run_id"].as_str().unwrap_or("?"),
                    e["session_id"].as_str().unwrap_or("?"),
                    e["model"].as_str().unwrap_or("?"),
                    e["provider"].as_str().unwrap_or("?"),
                    e["cwd"].as_str().unwrap_or("?"),
                    one_line(e["goal"].as_str().unwrap_or(""), 200),
                ));
                None
            }
            "server_failed" => Some(format!(
                "server {} FAILED: {}",
                e["server"].as_str().unwrap_or("?"),
                one_line(e["reason"].as_str().unwrap_or(""), 160)
            )),
            "model_response" => Some(format!(
                "step {} · model: {} · {} tool call(s) · {} in ({} cached) / {} out · {} ms{}",
                e["step"],
                e["stop_reason"].as_str().unwrap_or("?"),
                e["tool_calls"],
                format_tokens(
                    e["input_tokens"].as_u64().unwrap_or(0)
                        + e["cache_read_tokens"].as_u64().unwrap_or(0)
                        + e["cache_creation_tokens"].as_u64().unwrap_or(0)
                ),
                format_tokens(e["cache_read_tokens"].as_u64().unwrap_or(0)),
                format_tokens(e["output_tokens"].as_u64().unwrap_or(0)),
                e["latency_ms"],
                match e["text"].as_str() {
                    Some(t) if !t.trim().is_empty() =>
                        format!("\n            \"{}\"", one_line(t, 120)),
                    _ => String::new(),
                }
            )),
            "model_retry" => Some(format!(
                "  retry {} in {} ms: {}",
                e["attempt"],
                e["delay_ms"],
                one_line(e["reason"].as_str().unwrap_or(""), 120)
            )),
            "tool_call_finished" => {
                let id = e["call_id"].as_str().unwrap_or("");
                Some(format!(
                    "  ⏺ {} · {} · {} ms · {}{}",
                    e["tool"].as_str().unwrap_or("?"),
                    decisions.get(id).map_or("not run", String::as_str),
                    e["duration_ms"],
                    if e["is_error"] == true {
                        format!("ERROR ({})", e["error_type"].as_str().unwrap_or("?"))
                    } else {
                        "ok".to_string()
                    },
                    match e["summary"].as_str() {
                        Some(s) if !s.is_empty() => format!("\n            {}", one_line(s, 120)),
                        _ => String::new(),
                    }
                ))
            }
            "error" => Some(format!(
                "ERROR {}",
                one_line(e["message"].as_str().unwrap_or(""), 200)
            )),
            "run_finished" => Some(format!(
                "run_finished · {} · {} steps · {:.1} s · {} in ({} cached) / {} out{}",
                e["status"].as_str().unwrap_or("?"),
                e["steps"],
                e["duration_ms"].as_f64().unwrap_or(0.0) / 1000.0,
                format_tokens(
                    e["input_tokens"].as_u64().unwrap_or(0)
                        + e["cache_read_tokens"].as_u64().unwrap_or(0)
                        + e["cache_creation_tokens"].as_u64().unwrap_or(0)
                ),
                format_tokens(e["cache_read_tokens"].as_u64().unwrap_or(0)),
                format_tokens(e["output_tokens"].as_u64().unwrap_or(0)),
                match e["error"].as_str() {
                    Some(err) => format!("\n            {}", one_line(err, 200)),
                    None => String::new(),
                }
            )),
            _ => None,
        };
        if let Some(line) = line {
            out.push_str(&format!("{} {line}\n", at(e)));
        }
    }
    out
}

/// `tern trace RUN_ID` (a unique prefix is enough).
pub fn trace(ws: &Workspace, run_id: &str, out: &mut dyn Write) -> anyhow::Result<i32> {
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
    let events = load_events(&dir.join(&id).join("events.jsonl"))?;
    write!(out, "{}", render_trace(&events))?;
    Ok(0)
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
