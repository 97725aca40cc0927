//! `tern resume` on a terminal: this project's sessions (every project's with `--all`) in a
//! menu — when, how many turns, what they cost, the first message — picked with ↑/↓ and Enter
//! or a digit, as at an approval question (the same keys, read by the same one reader).

use std::{io::Write, path::Path, time::SystemTime};

use super::{
    approver::{Step, cut, step},
    keys::{Key, Keys},
};
use crate::{
    agent::session_list::{self, SessionSummary},
    render::{format_cost, sanitize},
};

/// Sessions shown at most: the menu must fit a terminal without scrolling.
const MAX_SHOWN: usize = 15;

/// One menu row of `s`: its age, turns, cost, (with `all`) its directory, and the first
/// message on one line.
fn row(s: &SessionSummary, now: SystemTime, all: bool) -> String {
    let cost = s.cost_usd.map_or_else(|| "-".to_string(), format_cost);
    let turns = match s.turns {
        1 => "1 turn".to_string(),
        n => format!("{n} turns"),
    };
    let place = match (&s.workspace, all) {
        (Some(w), true) => format!("{}  ", w.display()),
        (None, true) => "(directory unknown)  ".to_string(),
        _ => String::new(),
    };
    let first = match s.first_message.trim() {
        "" => "(no message)".to_string(),
        m => m.replace('\n', " ⏎ "),
    };
    sanitize(&format!(
        "{:>10}  {turns:>8}  {cost:>7}  {place}{first}",
        session_list::ago(s.modified, now)
    ))
}

/// The menu's lines with row `at` highlighted, each cut to `width`.
fn menu(rows: &[String], at: usize, width: usize, color: bool) -> String {
    let mut text = String::new();
    for (i, r) in rows.iter().enumerate() {
        let mark = if i == at { "›" } else { " " };
        let line = cut(&format!("{mark} {:>2}. {r}", i + 1), width);
        if i == at && color {
            text.push_str(&format!("\x1b[1;36m{line}\x1b[0m\n"));
        } else {
            text.push_str(&format!("{line}\n"));
        }
    }
    text.push_str(&cut(
        "  ↑/↓ and Enter, or a number; Esc leaves without resuming",
        width,
    ));
    text.push('\n');
    text
}

/// Asks which session to resume. `Ok(None)`: none to pick, or the person left (Esc, Ctrl-C);
/// the reason is said on `out`.
pub async fn pick(
    sessions_dir: &Path,
    workspace: &Path,
    all: bool,
    out: &mut dyn Write,
) -> std::io::Result<Option<String>> {
    let sessions = session_list::list(sessions_dir, (!all).then_some(workspace));
    if sessions.is_empty() {
        let here = if all {
            String::new()
        } else {
            format!(" of this project ({})", workspace.display())
        };
        writeln!(
            out,
            "no saved session{here}\nhint: run `tern` to start one{}",
            if all {
                ""
            } else {
                ", or `tern resume --all` for every project's"
            }
        )?;
        return Ok(None);
    }
    let now = SystemTime::now();
    let shown = &sessions[..sessions.len().min(MAX_SHOWN)];
    let rows: Vec<String> = shown.iter().map(|s| row(s, now, all)).collect();
    let color = std::env::var_os("NO_COLOR").is_none();
    let width = terminal_width().saturating_sub(1).max(20);
    let title = if all {
        "Resume which session? (every project)".to_string()
    } else {
        format!("Resume which session of {}?", workspace.display())
    };
    writeln!(out, "{}", sanitize(&title))?;
    if sessions.len() > shown.len() {
        writeln!(
            out,
            "  ({} older not shown: `tern resume ID`, ids in {})",
            sessions.len() - shown.len(),
            sessions_dir.display()
        )?;
    }
    let keys = Keys::default();
    let _reading = keys.reading(None);
    let (_claim, mut rx) = keys.claim();
    let mut at = 0;
    let mut drawn = menu(&rows, at, width, color);
    write!(out, "{drawn}")?;
    out.flush()?;
    loop {
        let Some(key) = rx.recv().await else {
            return Ok(None);
        };
        let next = match key {
            // Letters mean nothing here ('y'/'n' do at an approval).
            Key::Char(c) if !c.is_ascii_digit() => Step::Again,
            key => step(key, at, rows.len()),
        };
        match next {
            Step::Take(i) => {
                let lines = drawn.matches('\n').count();
                writeln!(out, "\x1b[{lines}A\r\x1b[J› {}", rows[i])?;
                return Ok(Some(shown[i].id.clone()));
            }
            Step::Cancel => {
                writeln!(out, "(not resumed)")?;
                return Ok(None);
            }
            Step::Move(i) => at = i,
            Step::Again => {}
        }
        let lines = drawn.matches('\n').count();
        drawn = menu(&rows, at, width, color);
        write!(out, "\x1b[{lines}A\r\x1b[J{drawn}")?;
        out.flush()?;
    }
}

/// The terminal's width (80 when it cannot be asked).
fn terminal_width() -> usize {
    terminal_size::terminal_size()
        .map(|(w, _)| usize::from(w.0))
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_says_when_how_long_what_it_cost_and_how_it_began() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(10_000);
        let s = SessionSummary {
            id: "abc".into(),
            workspace: Some("/work/p".into()),
            modified: now - std::time::Duration::from_secs(120),
            first_message: "fix the\nlogin".into(),
            turns: 3,
            cost_usd: Some(0.5),
        };
        let line = row(&s, now, false);
        assert!(line.contains("2 min ago"), "{line}");
        assert!(line.contains("3 turns"), "{line}");
        assert!(line.contains("fix the ⏎ login"), "{line}");
        assert!(!line.contains("/work/p"), "{line}");
        assert!(row(&s, now, true).contains("/work/p"));
        let m = menu(&[line.clone(), line], 1, 60, false);
        assert!(m.lines().nth(1).unwrap().starts_with("›  2."), "{m}");
    }

    /// The whole picker screen, as `tern resume --all` draws it at 80 columns.
    #[test]
    fn the_picker_screen() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(400_000);
        let session =
            |id: &str, dir: Option<&str>, ago: u64, first: &str, turns, cost| SessionSummary {
                id: id.into(),
                workspace: dir.map(Into::into),
                modified: now - std::time::Duration::from_secs(ago),
                first_message: first.into(),
                turns,
                cost_usd: cost,
            };
        let sessions = [
            session(
                "a",
                Some("/work/api"),
                90,
                "fix the failing login test",
                4,
                Some(0.0412),
            ),
            session(
                "b",
                Some("/work/web"),
                7_200,
                "rename Config to Settings\nacross the tree",
                12,
                Some(1.25),
            ),
            session("c", None, 200_000, "", 1, None),
        ];
        let rows: Vec<String> = sessions.iter().map(|s| row(s, now, true)).collect();
        insta::assert_snapshot!(menu(&rows, 0, 80, false));
    }
}
