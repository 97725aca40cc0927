//! Sessions: a conversation that can be continued (`tern run --continue`,
//! `tern resume`). `$TERN_HOME/sessions/<session_id>.jsonl` holds one
//! [`Message`] per line, appended as the conversation grows. A compaction appends one line
//! `{"compacted": [messages…]}` holding the whole compacted conversation: loading replays the
//! lines, so a resumed session continues from the compacted state, not the raw history.

use std::{
    hash::{BuildHasher, Hasher},
    io::Write,
    path::{Path, PathBuf},
};

use tern_model::Message;

use tern_protocol::civil;

/// A random hex string of `bytes` bytes (ids, not secrets).
pub fn random_hex(bytes: usize) -> String {
    let mut out = String::new();
    while out.len() < bytes * 2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(bytes * 2);
    out
}

/// `20261130-093000-a1b2c3`: sortable by time, unique enough per machine.
pub fn new_run_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let (y, mo, d, h, mi, s) = civil(secs);
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{}", random_hex(3))
}

/// A new session id.
pub fn new_session_id() -> String {
    random_hex(8)
}

/// The session file of `id`.
pub fn session_path(sessions_dir: &Path, id: &str) -> PathBuf {
    sessions_dir.join(format!("{id}.jsonl"))
}

/// Errors loading a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session {id} (looked for {path})")]
    NotFound { id: String, path: PathBuf },
    #[error("no saved session in {0}")]
    NoneSaved(PathBuf),
    #[error(
        "no saved session of this project ({workspace}); sessions of other projects are not \
         continued here\nhint: run `tern` to start one, or `tern resume ID` with an id from \
         {sessions}"
    )]
    NoneHere {
        workspace: PathBuf,
        sessions: PathBuf,
    },
    #[error("{path}:{line}: not a session message: {source}")]
    Parse {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One line of a session file.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Line {
    /// The whole conversation after a compaction: replaces everything before it.
    Snapshot { compacted: Vec<Message> },
    /// One more message.
    Message(Message),
}

/// Loads the messages of a session.
pub fn load(sessions_dir: &Path, id: &str) -> Result<Vec<Message>, SessionError> {
    let path = session_path(sessions_dir, id);
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SessionError::NotFound {
            id: id.to_string(),
            path: path.clone(),
        },
        _ => SessionError::Io {
            path: path.clone(),
            source: e,
        },
    })?;
    parse(&path, &text)
}

/// The messages of a session as its file was when it was `bytes` long (what a conversation
/// rewind goes back to: the file only grows, so a length is a point in its history).
pub fn load_until(sessions_dir: &Path, id: &str, bytes: u64) -> Result<Vec<Message>, SessionError> {
    let path = session_path(sessions_dir, id);
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && bytes == 0 => Vec::new(),
        Err(source) => return Err(SessionError::Io { path, source }),
    };
    let end = usize::try_from(bytes).unwrap_or(usize::MAX).min(data.len());
    let text = String::from_utf8_lossy(&data[..end]);
    parse(&path, &text)
}

/// How long the session file is now (0 before its first message).
pub fn file_len(sessions_dir: &Path, id: &str) -> u64 {
    std::fs::metadata(session_path(sessions_dir, id)).map_or(0, |m| m.len())
}

fn parse(path: &Path, text: &str) -> Result<Vec<Message>, SessionError> {
    let mut messages = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let line = serde_json::from_str(l).map_err(|source| SessionError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        match line {
            Line::Snapshot { compacted } => messages = compacted,
            Line::Message(m) => messages.push(m),
        }
    }
    Ok(messages)
}

/// Appends the whole (compacted) conversation as one snapshot line.
pub fn append_snapshot(
    sessions_dir: &Path,
    id: &str,
    messages: &[Message],
    redact: &dyn Fn(&str) -> String,
) -> Result<(), SessionError> {
    let line = Line::Snapshot {
        compacted: messages.to_vec(),
    };
    write_lines(sessions_dir, id, &[line], redact)
}

/// The most recently written session.
pub fn latest(sessions_dir: &Path) -> Result<String, SessionError> {
    let entries = std::fs::read_dir(sessions_dir)
        .map_err(|_| SessionError::NoneSaved(sessions_dir.to_path_buf()))?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .and_then(|(_, p)| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .ok_or_else(|| SessionError::NoneSaved(sessions_dir.to_path_buf()))
}

/// The workspace file of session `id`: `<id>.meta.json`, `{"workspace": "/abs/dir"}`.
fn meta_path(sessions_dir: &Path, id: &str) -> PathBuf {
    sessions_dir.join(format!("{id}.meta.json"))
}

/// Records which workspace session `id` belongs to (once: a session keeps the directory it
/// was started in), so `--continue` and `resume` never pick another project's conversation.
pub fn note_workspace(sessions_dir: &Path, id: &str, workspace: &Path) -> Result<(), SessionError> {
    let path = meta_path(sessions_dir, id);
    if path.exists() {
        return Ok(());
    }
    let io = |source| SessionError::Io {
        path: path.clone(),
        source,
    };
    let mut f = tern_protocol::files::open_append(&path).map_err(io)?;
    writeln!(f, "{}", serde_json::json!({ "workspace": workspace })).map_err(io)
}

/// Records one finished turn of session `id` and what it cost (a line `{"turn": {"cost_usd":
/// …}}` appended to `<id>.meta.json`, after the workspace line), for `tern resume`'s list.
pub fn note_turn(sessions_dir: &Path, id: &str, cost_usd: Option<f64>) -> Result<(), SessionError> {
    let path = meta_path(sessions_dir, id);
    let io = |source| SessionError::Io {
        path: path.clone(),
        source,
    };
    let mut f = tern_protocol::files::open_append(&path).map_err(io)?;
    let line = serde_json::json!({ "turn": { "cost_usd": cost_usd } });
    writeln!(f, "{line}").map_err(io)
}

/// The turns [`note_turn`] recorded for session `id` and their summed cost (`None` when no
/// turn's price was known).
pub fn turns_of(sessions_dir: &Path, id: &str) -> (u64, Option<f64>) {
    let text = std::fs::read_to_string(meta_path(sessions_dir, id)).unwrap_or_default();
    let mut turns = 0;
    let mut cost: Option<f64> = None;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v.get("turn").is_some() {
            turns += 1;
            if let Some(c) = v["turn"]["cost_usd"].as_f64() {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
    }
    (turns, cost)
}

/// The workspace session `id` was started in; `None` for sessions saved before tern noted it.
pub fn workspace_of(sessions_dir: &Path, id: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(meta_path(sessions_dir, id)).ok()?;
    let meta: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    meta["workspace"].as_str().map(PathBuf::from)
}

/// The most recently written session of `workspace`.
pub fn latest_in(sessions_dir: &Path, workspace: &Path) -> Result<String, SessionError> {
    let none = || SessionError::NoneHere {
        workspace: workspace.to_path_buf(),
        sessions: sessions_dir.to_path_buf(),
    };
    let entries = std::fs::read_dir(sessions_dir).map_err(|_| none())?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .filter_map(|e| {
            let id = e.path().file_stem()?.to_string_lossy().into_owned();
            (workspace_of(sessions_dir, &id).as_deref() == Some(workspace))
                .then_some((e.metadata().ok()?.modified().ok()?, id))
        })
        .max()
        .map(|(_, id)| id)
        .ok_or_else(none)
}

/// Appends `messages` to the session file, each line passed through `redact`. The file is
/// `0600` in a `0700` directory and never opened through a symlink.
pub fn append(
    sessions_dir: &Path,
    id: &str,
    messages: &[Message],
    redact: &dyn Fn(&str) -> String,
) -> Result<(), SessionError> {
    let lines: Vec<Line> = messages.iter().cloned().map(Line::Message).collect();
    write_lines(sessions_dir, id, &lines, redact)
}

fn write_lines(
    sessions_dir: &Path,
    id: &str,
    lines: &[Line],
    redact: &dyn Fn(&str) -> String,
) -> Result<(), SessionError> {
    let path = session_path(sessions_dir, id);
    let io = |source| SessionError::Io {
        path: path.clone(),
        source,
    };
    let mut f = tern_protocol::files::open_append(&path).map_err(io)?;
    for l in lines {
        let line = serde_json::to_string(l).map_err(|e| io(std::io::Error::other(e)))?;
        writeln!(f, "{}", redact(&line)).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_look_right_and_differ() {
        let a = new_run_id();
        let b = new_run_id();
        assert_eq!(a.len(), "20261130-093000-a1b2c3".len(), "{a}");
        assert_ne!(a, b);
        assert!(a.as_bytes()[8] == b'-' && a.as_bytes()[15] == b'-');
    }

    #[test]
    fn sessions_round_trip_and_latest_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let keep = |s: &str| s.to_string();
        append(dir.path(), "s1", &[Message::user_text("hi")], &keep).unwrap();
        append(dir.path(), "s1", &[Message::assistant_text("hello")], &keep).unwrap();
        let msgs = load(dir.path(), "s1").unwrap();
        assert_eq!(
            msgs,
            vec![Message::user_text("hi"), Message::assistant_text("hello")]
        );
        assert_eq!(latest(dir.path()).unwrap(), "s1");
        // A snapshot replaces what came before it; later messages follow it.
        append_snapshot(dir.path(), "s1", &[Message::user_text("compacted")], &keep).unwrap();
        append(dir.path(), "s1", &[Message::assistant_text("after")], &keep).unwrap();
        assert_eq!(
            load(dir.path(), "s1").unwrap(),
            vec![
                Message::user_text("compacted"),
                Message::assistant_text("after")
            ]
        );
        assert!(matches!(
            load(dir.path(), "nope"),
            Err(SessionError::NotFound { .. })
        ));
    }

    #[test]
    fn the_latest_session_is_the_newest_of_this_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let keep = |s: &str| s.to_string();
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        append(dir.path(), "sa", &[Message::user_text("in a")], &keep).unwrap();
        note_workspace(dir.path(), "sa", a).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        append(dir.path(), "sb", &[Message::user_text("in b")], &keep).unwrap();
        note_workspace(dir.path(), "sb", b).unwrap();
        // Noting again keeps the first workspace.
        note_workspace(dir.path(), "sb", a).unwrap();
        assert_eq!(latest_in(dir.path(), a).unwrap(), "sa");
        assert_eq!(latest_in(dir.path(), b).unwrap(), "sb");
        let e = latest_in(dir.path(), Path::new("/p/c"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no saved session of this project (/p/c)"), "{e}");
        assert!(e.contains("\nhint: "), "{e}");
    }
}
