//! `tern rewind [SESSION] [--to TURN] [--code|--conversation] [--undo]`: the headless face of
//! `/rewind` — the same [`crate::agent::checkpoints`] calls, no model and no servers.

use std::io::Write;

use anyhow::Context as _;

use crate::{
    agent::{
        checkpoints::{self, Rewind, Rewound, TurnInfo},
        session,
    },
    workspace::Workspace,
};

/// What `--code` / `--conversation` ask for (both when neither is given).
pub fn what(code: bool, conversation: bool) -> Rewind {
    match (code, conversation) {
        (true, false) => Rewind::Code,
        (false, true) => Rewind::Conversation,
        _ => Rewind::Both,
    }
}

/// Runs the command; see [`crate::cli::Command::Rewind`].
pub async fn run(
    ws: &Workspace,
    session_id: Option<String>,
    to: Option<checkpoints::Point>,
    what: Rewind,
    undo: bool,
    out: &mut dyn Write,
) -> anyhow::Result<i32> {
    let sessions = ws.paths.sessions_dir();
    let session = match session_id {
        Some(id) => id,
        // This project's newest session, never another project's: a rewind restores the files
        // of the workspace its session recorded, so `latest` could rewrite a different project.
        None => session::latest_in(&sessions, &ws.cwd)?,
    };
    let home = ws.paths.tern_home.clone();
    let section = ws.config.checkpoints.clone();
    let id = session.clone();
    let done = tokio::task::spawn_blocking(move || match (to, undo) {
        (_, true) => checkpoints::undo(&home, &sessions, &id, &section).map(Done::Rewound),
        (Some(point), false) => {
            checkpoints::rewind(&home, &sessions, &id, point, what, &section).map(Done::Rewound)
        }
        (None, false) => checkpoints::list_turns(&home, &sessions, &id, &section).map(Done::Listed),
    })
    .await
    .context("the rewind task failed")?;
    let done = match done {
        // A turn that is not there is a usage error (exit 2), like an unknown session.
        Err(
            e @ (checkpoints::RewindError::NoSuchTurn { .. }
            | checkpoints::RewindError::NoSuchCall { .. }),
        ) => {
            return Err(crate::error::UsageError(e.to_string()).into());
        }
        other => other.with_context(|| format!("session {session}"))?,
    };
    match done {
        Done::Listed(turns) => {
            writeln!(out, "session {session}")?;
            for line in turn_lines(&turns) {
                writeln!(out, "{line}")?;
            }
            if turns.is_empty() {
                writeln!(out, "  no turn recorded yet")?;
            } else {
                writeln!(
                    out,
                    "rewind with: tern rewind {session} --to TURN[.CALL] [--code|--conversation]"
                )?;
            }
        }
        Done::Rewound(rewound) => {
            for line in rewound_lines(&rewound) {
                writeln!(out, "{line}")?;
            }
            if !undo {
                writeln!(out, "undo with: tern rewind {session} --undo")?;
            }
        }
    }
    Ok(0)
}

enum Done {
    Listed(Vec<TurnInfo>),
    Rewound(Rewound),
}

/// One line per turn: number, time (UTC), the user's message, the files it changed; under it
/// one line per shell call of the turn (`TURN.CALL`, `$ command`, the files changed from there).
pub fn turn_lines(turns: &[TurnInfo]) -> Vec<String> {
    let mut lines = Vec::new();
    for t in turns {
        lines.push(point_line(
            &t.turn.to_string(),
            t.time_ms,
            &t.message,
            t.changed.as_deref(),
        ));
        for c in &t.calls {
            let command = format!("$ {}", c.command);
            lines.push(point_line(
                &format!("  {}", c.point),
                c.time_ms,
                &command,
                c.changed.as_deref(),
            ));
        }
    }
    lines
}

fn point_line(
    label: &str,
    time_ms: u64,
    message: &str,
    changed: Option<&[tern_checkpoint::Change]>,
) -> String {
    let secs = (time_ms / 1000) as i64;
    let (_, _, _, h, mi, s) = tern_protocol::civil(secs);
    let message: String = message
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    let changed = match changed {
        None => "no checkpoint".to_string(),
        Some([]) => "no files changed".to_string(),
        Some(c) => {
            let names: Vec<String> = c
                .iter()
                .take(3)
                .map(|c| c.path.display().to_string())
                .collect();
            let more = if c.len() > 3 {
                format!(", +{}", c.len() - 3)
            } else {
                String::new()
            };
            format!("{} file(s) changed: {}{more}", c.len(), names.join(", "))
        }
    };
    format!(
        "  {label:>3}  {h:02}:{mi:02}:{s:02}  {}  ({changed})",
        crate::render::sanitize(&message)
    )
}

/// What a rewind or an undo did, for a person.
pub fn rewound_lines(done: &Rewound) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(r) = &done.restored {
        lines.push(format!(
            "files: {} written back, {} deleted{}",
            r.written.len(),
            r.deleted.len(),
            if r.kept.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} kept (something the checkpoint never recorded is in the way)",
                    r.kept.len()
                )
            }
        ));
        for p in r.written.iter().chain(&r.deleted).take(20) {
            lines.push(format!(
                "  {}",
                crate::render::sanitize(&p.display().to_string())
            ));
        }
    }
    if let Some(messages) = &done.conversation {
        lines.push(format!(
            "conversation: {} message(s) kept; later turns are no longer sent",
            messages.len()
        ));
    }
    lines
}
