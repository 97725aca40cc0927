//! The saved sessions, summarised for `tern resume`'s picker: when each was last written, its
//! first message, how many turns it had and what they cost. Read from the session files and
//! their `<id>.meta.json` (workspace, one line per turn), never from the runs' events.

use std::{
    path::{Path, PathBuf},
    time::SystemTime,
};

use tern_model::{Message, UserContent};

use super::session;

/// One saved session.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    pub id: String,
    /// Where it was started; `None` for sessions saved before tern noted it.
    pub workspace: Option<PathBuf>,
    /// When its file was last written.
    pub modified: SystemTime,
    /// The first thing the person typed (empty when nothing was saved yet).
    pub first_message: String,
    /// Turns recorded in the meta file; sessions from before it count their typed messages.
    pub turns: u64,
    /// What the turns cost, when the model's price was known.
    pub cost_usd: Option<f64>,
}

/// The sessions of `workspace` (every project's when `None`), newest first.
pub fn list(sessions_dir: &Path, workspace: Option<&Path>) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(sessions_dir) else {
        return Vec::new();
    };
    let mut found: Vec<SessionSummary> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| {
            let id = e.path().file_stem()?.to_string_lossy().into_owned();
            let at = session::workspace_of(sessions_dir, &id);
            if workspace.is_some() && at.as_deref() != workspace {
                return None;
            }
            let modified = e.metadata().ok()?.modified().ok()?;
            let messages = session::load(sessions_dir, &id).unwrap_or_default();
            let typed: Vec<&str> = messages.iter().filter_map(typed_text).collect();
            let (turns, cost_usd) = match session::turns_of(sessions_dir, &id) {
                (0, cost) => (typed.len() as u64, cost),
                noted => noted,
            };
            Some(SessionSummary {
                first_message: typed.first().map(|t| t.to_string()).unwrap_or_default(),
                id,
                workspace: at,
                modified,
                turns,
                cost_usd,
            })
        })
        .collect();
    found.sort_by(|a, b| b.modified.cmp(&a.modified).then(a.id.cmp(&b.id)));
    found
}

/// The text of a message the person typed (a user message with text and no tool results).
fn typed_text(m: &Message) -> Option<&str> {
    let Message::User { content } = m else {
        return None;
    };
    if content
        .iter()
        .any(|c| matches!(c, UserContent::ToolResult(_)))
    {
        return None;
    }
    content.iter().find_map(|c| match c {
        UserContent::Text { text } => Some(text.as_str()),
        _ => None,
    })
}

/// How long ago `t` was, in the largest unit that fits (`12 s ago`, `5 min ago`, `3 h ago`,
/// `2 d ago`).
pub fn ago(t: SystemTime, now: SystemTime) -> String {
    let s = now.duration_since(t).map_or(0, |d| d.as_secs());
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_per_workspace_with_first_message_turns_and_cost() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/work/a"), Path::new("/work/b"));
        let keep = |l: &str| l.to_string();
        session::append(dir.path(), "s1", &[Message::user_text("fix it")], &keep).unwrap();
        session::note_workspace(dir.path(), "s1", a).unwrap();
        session::note_turn(dir.path(), "s1", Some(0.25)).unwrap();
        session::note_turn(dir.path(), "s1", Some(0.5)).unwrap();
        session::append(dir.path(), "s2", &[Message::user_text("other")], &keep).unwrap();
        session::note_workspace(dir.path(), "s2", b).unwrap();
        let here = list(dir.path(), Some(a));
        assert_eq!(here.len(), 1);
        assert_eq!(here[0].first_message, "fix it");
        assert_eq!(here[0].turns, 2);
        assert_eq!(here[0].cost_usd, Some(0.75));
        assert_eq!(list(dir.path(), None).len(), 2);
        // No turn lines (an older session): its typed messages are counted; no cost known.
        let other = &list(dir.path(), Some(b))[0];
        assert_eq!((other.turns, other.cost_usd), (1, None));
    }

    #[test]
    fn ages_use_the_largest_unit() {
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let before = |s| now - std::time::Duration::from_secs(s);
        assert_eq!(ago(before(5), now), "5 s ago");
        assert_eq!(ago(before(300), now), "5 min ago");
        assert_eq!(ago(before(7200), now), "2 h ago");
        assert_eq!(ago(before(200_000), now), "2 d ago");
    }
}
