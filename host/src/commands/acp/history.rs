//! `session/load` and `session/list` over tern's saved sessions: a session's messages replayed
//! as `session/update`s (what the user said, what the agent answered, each tool call with its
//! result), and the sessions whose runs worked in a directory.

use std::{
    collections::{BTreeMap, HashMap},
    io::BufRead,
    path::Path,
};

use serde_json::{Value, json};
use tern_model::{AssistantContent, Message, UserContent};
use tern_protocol::{Envelope, Event};

use super::{rpc::RpcError, updates::chunk};

/// The updates that show `messages` again, in order.
pub fn replay(cwd: &Path, messages: &[Message]) -> Vec<Value> {
    // Results come in the user turn after the call: index them first.
    let mut results: HashMap<&str, (&str, bool)> = HashMap::new();
    for m in messages {
        if let Message::User { content } = m {
            for c in content {
                if let UserContent::ToolResult(r) = c {
                    results.insert(&r.call_id, (&r.content, r.is_error));
                }
            }
        }
    }
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::User { content } => {
                for c in content {
                    match c {
                        UserContent::Text { text } if !text.trim().is_empty() => {
                            out.push(chunk("user_message_chunk", text));
                        }
                        // ACP's image content block, as the editor sent it.
                        UserContent::Image(i) => out.push(json!({
                            "sessionUpdate": "user_message_chunk",
                            "content": {"type": "image", "mimeType": i.mime_type, "data": i.data},
                        })),
                        _ => {}
                    }
                }
            }
            Message::Assistant { content } => {
                for c in content {
                    match c {
                        AssistantContent::Text { text } if !text.is_empty() => {
                            out.push(chunk("agent_message_chunk", text));
                        }
                        AssistantContent::Text { .. } => {}
                        // The readable summary of the model's reasoning, shown as its thought.
                        AssistantContent::Reasoning(r) => {
                            for text in r.summary.iter().filter(|t| !t.trim().is_empty()) {
                                out.push(chunk("agent_thought_chunk", text));
                            }
                        }
                        AssistantContent::ToolCall(call) => {
                            let (output, is_error) =
                                results.get(call.id.as_str()).copied().unwrap_or(("", true));
                            // No tool table here (the servers may differ now): kind `other`,
                            // the recorded text as content.
                            let mut started = super::updates::tool_call(
                                cwd,
                                &call.id,
                                &call.name,
                                None,
                                &call.arguments,
                                if is_error { "failed" } else { "completed" },
                            );
                            if !output.is_empty() {
                                started["content"] = json!([{
                                    "type": "content",
                                    "content": {"type": "text", "text": output},
                                }]);
                            }
                            out.push(started);
                        }
                    }
                }
            }
        }
    }
    out
}

/// ACP `SessionInfo`s of the sessions whose runs worked in `cwd` (every directory when
/// `None`), most recently updated first, from the first event of each run
/// (`runs/<id>/events.jsonl`) and the session files that still exist.
pub fn list(runs_dir: &Path, sessions_dir: &Path, cwd: Option<&Path>) -> Vec<Value> {
    // session id → (last run's start, cwd)
    let mut found: BTreeMap<String, (String, String)> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    for e in entries.filter_map(Result::ok) {
        let Some(first) = first_event(&e.path().join("events.jsonl")) else {
            continue;
        };
        let Event::RunStarted { cwd: run_cwd, .. } = &first.event else {
            continue;
        };
        if cwd.is_some_and(|c| Path::new(run_cwd) != c) {
            continue;
        }
        if !crate::agent::session::session_path(sessions_dir, &first.session_id).is_file() {
            continue;
        }
        let slot = found
            .entry(first.session_id.clone())
            .or_insert_with(|| (String::new(), run_cwd.clone()));
        if first.ts > slot.0 {
            *slot = (first.ts.clone(), run_cwd.clone());
        }
    }
    let mut sessions: Vec<(String, Value)> = found
        .into_iter()
        .map(|(id, (ts, cwd))| {
            let title = crate::agent::session::load(sessions_dir, &id)
                .ok()
                .and_then(|m| first_user_text(&m));
            let info = json!({"sessionId": id, "cwd": cwd, "title": title, "updatedAt": ts});
            (ts, info)
        })
        .collect();
    sessions.sort_by(|a, b| b.0.cmp(&a.0));
    sessions.into_iter().map(|(_, v)| v).collect()
}

fn first_event(path: &Path) -> Option<Envelope> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file).read_line(&mut line).ok()?;
    serde_json::from_str(&line).ok()
}

/// What the user first said, on one line of at most 80 characters: the session's title.
fn first_user_text(messages: &[Message]) -> Option<String> {
    messages.iter().find_map(|m| match m {
        Message::User { content } => content.iter().find_map(|c| match c {
            UserContent::Text { text } if !text.trim().is_empty() => {
                let line = text.trim().lines().next().unwrap_or_default();
                Some(line.chars().take(80).collect())
            }
            _ => None,
        }),
        Message::Assistant { .. } => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_protocol::{ToolCall, ToolResult};

    #[test]
    fn a_session_replays_as_chunks_and_finished_tool_calls() {
        let messages = vec![
            Message::user_text("read a.txt"),
            Message::Assistant {
                content: vec![
                    AssistantContent::Text {
                        text: "Reading.".into(),
                    },
                    AssistantContent::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "fs__read_file".into(),
                        arguments: json!({"path": "a.txt"}),
                    }),
                ],
            },
            Message::User {
                content: vec![UserContent::ToolResult(ToolResult::text("c1", "1\thello"))],
            },
            Message::assistant_text("It says hello."),
        ];
        let updates = replay(Path::new("/w"), &messages);
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "agent_message_chunk"
            ]
        );
        assert_eq!(updates[2]["status"], "completed");
        assert_eq!(updates[2]["locations"][0]["path"], "/w/a.txt");
        assert_eq!(updates[2]["content"][0]["content"]["text"], "1\thello");
        assert_eq!(first_user_text(&messages).as_deref(), Some("read a.txt"));
    }
}

/// Sessions per `session/list` page.
pub const PAGE: usize = 50;

/// One page of `sessions` (newest first, as listed) from `cursor` — an opaque
/// `tern-offset:N` this function handed out as `nextCursor` — with the next page's cursor
/// while more remain.
pub fn page(sessions: Vec<Value>, cursor: Option<&str>, size: usize) -> Result<Value, RpcError> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .strip_prefix("tern-offset:")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= sessions.len())
            .ok_or_else(|| {
                RpcError::invalid_params(format!("`cursor` {c:?} is not one tern gave out"))
                    .hint("pass the `nextCursor` of the previous session/list answer, or none")
            })?,
    };
    let end = (start + size.max(1)).min(sessions.len());
    let mut answer = json!({"sessions": sessions[start..end]});
    if end < sessions.len() {
        answer["nextCursor"] = json!(format!("tern-offset:{end}"));
    }
    Ok(answer)
}

#[cfg(test)]
mod page_tests {
    use super::*;

    #[test]
    fn session_list_pages_follow_the_cursor_and_refuse_a_foreign_one() {
        let all: Vec<Value> = (0..5)
            .map(|i| json!({"sessionId": format!("s{i}")}))
            .collect();
        let ids = |v: &Value| -> Vec<String> {
            v["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["sessionId"].as_str().unwrap().to_string())
                .collect()
        };
        let first = page(all.clone(), None, 2).unwrap();
        assert_eq!(ids(&first), ["s0", "s1"]);
        let next = first["nextCursor"].as_str().unwrap();
        let second = page(all.clone(), Some(next), 2).unwrap();
        assert_eq!(ids(&second), ["s2", "s3"]);
        let last = page(all.clone(), second["nextCursor"].as_str(), 2).unwrap();
        assert_eq!(ids(&last), ["s4"]);
        assert!(last.get("nextCursor").is_none(), "{last}");
        assert!(
            page(all.clone(), None, 50)
                .unwrap()
                .get("nextCursor")
                .is_none()
        );
        for bad in ["x", "tern-offset:9", "tern-offset:-1"] {
            assert!(page(all.clone(), Some(bad), 2).is_err(), "{bad}");
        }
    }
}
