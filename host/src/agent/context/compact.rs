//! Making a conversation fit its window again, in stages that lose as little as they can.
//!
//! 1. **Elide**: the bodies of older tool results become a one-line note naming the call and what
//!    was left out. Calls, arguments and the pairing of every call with its result stay, so the
//!    history is still valid for both APIs and the model can run the call again if it needs to.
//! 2. **Summarize**: when that is not enough, the model itself writes a structured summary of
//!    the older turns, which replaces them. The user's goal (and the request being worked on)
//!    stay verbatim at the head; the newest turns stay verbatim at the tail.
//!
//! The system prompt and the tool table are never touched, so the provider's cached prefix for
//! them keeps hitting after a compaction.

use serde_json::Value;
use tern_model::{AssistantContent, Message, ModelRequest, ToolChoice, UserContent};

/// Marks the summarizer's request (tests and logs recognise it by this).
pub const SUMMARY_MARKER: &str = "tern:compact";

/// The first line of a compacted conversation's head message.
pub const HEAD_MARKER: &str = "[tern: the earlier conversation was compacted]";

/// Starts the note that replaces images the person attached in a compacted part.
pub const IMAGES_DROPPED_MARKER: &str =
    "[tern: images attached earlier were dropped by compaction:";

/// Tool results shorter than this are left alone: eliding them saves nothing.
const ELIDE_MIN_CHARS: usize = 200;

/// How a result's body is replaced.
fn elided_note(tool: &str, arguments: &Value, chars: usize) -> String {
    let mut args = arguments.to_string();
    if args.chars().count() > 160 {
        args = args.chars().take(160).collect::<String>() + "…";
    }
    format!(
        "[output elided to save context: {chars} characters from {tool}({args}); call it again \
         if you need it]"
    )
}

/// Where the verbatim tail starts: the index of an assistant message such that the tail holds
/// the newest turns whose tokens (`tokens(i)` for message `i`) fit in `keep` — always at least
/// the last assistant turn. Returns `transcript.len()` when there is no assistant turn.
pub fn tail_start(transcript: &[Message], tokens: impl Fn(usize) -> u64, keep: u64) -> usize {
    let turn_starts: Vec<usize> = transcript
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant { .. }))
        .map(|(i, _)| i)
        .collect();
    let Some(&last) = turn_starts.last() else {
        return transcript.len();
    };
    let mut start = last;
    let mut kept: u64 = (last..transcript.len()).map(&tokens).sum();
    for &candidate in turn_starts.iter().rev().skip(1) {
        let more: u64 = (candidate..start).map(&tokens).sum();
        if kept + more > keep {
            break;
        }
        kept += more;
        start = candidate;
    }
    start
}

/// Replaces the bodies of tool results before `until` with a note. Returns how many were
/// elided and how many characters that removed.
pub fn elide(transcript: &mut [Message], until: usize) -> (usize, usize) {
    let mut count = 0;
    let mut removed = 0;
    let mut calls: Vec<(String, String, Value)> = Vec::new();
    for message in transcript.iter_mut().take(until) {
        match message {
            Message::Assistant { content } => {
                calls = content
                    .iter()
                    .filter_map(|c| match c {
                        AssistantContent::ToolCall(call) => {
                            Some((call.id.clone(), call.name.clone(), call.arguments.clone()))
                        }
                        AssistantContent::Text { .. } | AssistantContent::Reasoning(_) => None,
                    })
                    .collect();
            }
            Message::User { content } => {
                for block in content.iter_mut() {
                    let UserContent::ToolResult(result) = block else {
                        continue;
                    };
                    let chars = result.content.chars().count();
                    if chars < ELIDE_MIN_CHARS && result.images.is_empty() {
                        continue;
                    }
                    if result.content.starts_with("[output elided") {
                        continue;
                    }
                    let (tool, args) = calls
                        .iter()
                        .find(|(id, _, _)| *id == result.call_id)
                        .map(|(_, name, args)| (name.as_str(), args.clone()))
                        .unwrap_or(("a tool", Value::Null));
                    result.content = elided_note(tool, &args, chars);
                    result.images.clear();
                    result.diff = None;
                    count += 1;
                    removed += chars;
                }
            }
        }
    }
    (count, removed)
}

/// The texts of a user message.
fn texts(message: &Message) -> Vec<&str> {
    match message {
        Message::User { content } => content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text { text } => Some(text.as_str()),
                UserContent::ToolResult(_) | UserContent::Image(_) => None,
            })
            .collect(),
        Message::Assistant { .. } => Vec::new(),
    }
}

/// The user's goal: the head's goal block of an earlier compaction, else the first user text.
fn goal(transcript: &[Message]) -> Option<String> {
    let first = transcript.first()?;
    let blocks = texts(first);
    match blocks.first() {
        Some(b) if b.starts_with(HEAD_MARKER) => Some(b.to_string()),
        Some(b) => Some(format!("{HEAD_MARKER}\nThe user's request:\n{b}")),
        None => None,
    }
}

/// The latest user request inside `transcript[1..cut]`, if there is one (the request being
/// worked on when a long turn is compacted).
fn latest_request(transcript: &[Message], cut: usize) -> Option<String> {
    transcript
        .iter()
        .take(cut)
        .skip(1)
        .rev()
        .find_map(|m| texts(m).first().map(|t| t.to_string()))
}

/// The conversation `transcript[..cut]` as plain text for the summarizer, cut to `max_chars`
/// (its beginning and end kept).
pub fn render(transcript: &[Message], cut: usize, max_chars: usize) -> String {
    let clip = |s: &str, n: usize| -> String {
        if s.chars().count() <= n {
            s.to_string()
        } else {
            s.chars().take(n).collect::<String>() + "…"
        }
    };
    let mut out = String::new();
    for message in transcript.iter().take(cut) {
        match message {
            Message::User { content } => {
                for c in content {
                    match c {
                        UserContent::Text { text } => {
                            out.push_str(&format!("USER: {}\n\n", clip(text, 4_000)))
                        }
                        UserContent::ToolResult(r) => out.push_str(&format!(
                            "RESULT{}: {}\n\n",
                            if r.is_error { " (error)" } else { "" },
                            clip(&r.content, 600)
                        )),
                        // The summarizer reads text: it learns that an image was there.
                        UserContent::Image(i) => out.push_str(&format!(
                            "USER: [attached an image: {}]\n\n",
                            crate::agent::attach::describe(i)
                        )),
                    }
                }
            }
            Message::Assistant { content } => {
                for c in content {
                    match c {
                        AssistantContent::Text { text } => {
                            out.push_str(&format!("ASSISTANT: {}\n\n", clip(text, 2_000)))
                        }
                        AssistantContent::ToolCall(call) => out.push_str(&format!(
                            "CALL {}({})\n",
                            call.name,
                            clip(&call.arguments.to_string(), 300)
                        )),
                        // Opaque to everyone but the provider that wrote it.
                        AssistantContent::Reasoning(_) => {}
                    }
                }
            }
        }
    }
    if out.chars().count() > max_chars {
        let half = max_chars / 2;
        let head: String = out.chars().take(half).collect();
        let tail: String = out
            .chars()
            .rev()
            .take(half)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        out = format!("{head}\n[… the middle of the conversation was cut …]\n{tail}");
    }
    out
}

/// The instructions for the summary.
const SUMMARIZER: &str = "You compact the conversation of a coding agent (tern:compact) so it \
can continue with less context. Write a structured summary of the conversation you are given, \
under these headings, as short as the facts allow and no more than 600 words:\n\
Goal — what the user asked for, in their words where it matters.\n\
Decisions — what was decided, and why.\n\
Files read — paths, and what in them matters.\n\
Files changed — paths, and what was changed.\n\
Commands — commands run and their outcomes (exit codes, failures, test results).\n\
Open — what is left to do, and any error still unresolved.\n\
Keep exact paths, names, identifiers and commands. Do not invent anything.";

/// The request asking the model to summarize `transcript[..cut]`.
pub fn summary_request(
    transcript: &[Message],
    cut: usize,
    focus: Option<&str>,
    max_chars: usize,
) -> ModelRequest {
    let mut ask = format!(
        "The conversation to summarize:\n\n{}",
        render(transcript, cut, max_chars)
    );
    if let Some(focus) = focus.filter(|f| !f.trim().is_empty()) {
        ask.push_str(&format!("\n\nPay particular attention to: {focus}"));
    }
    ModelRequest {
        system: vec![SUMMARIZER.to_string()],
        messages: vec![Message::user_text(ask)],
        tools: Vec::new(),
        max_tokens: 2_048,
        tool_choice: ToolChoice::None,
        cache: false,
    }
}

/// Replaces `transcript[..cut]` with one user message: the goal and the request being worked on
/// verbatim, then the summary. `transcript[cut]` must be an assistant message (see
/// [`tail_start`]) so the roles still alternate. Returns how many messages were replaced.
pub fn apply_summary(transcript: &mut Vec<Message>, cut: usize, summary: &str) -> usize {
    let cut = cut.min(transcript.len());
    let mut blocks = Vec::new();
    if let Some(goal) = goal(transcript) {
        blocks.push(UserContent::Text { text: goal });
    }
    if let Some(latest) = latest_request(transcript, cut).filter(|l| {
        !blocks
            .iter()
            .any(|b| matches!(b, UserContent::Text { text } if text.contains(l.as_str())))
    }) {
        blocks.push(UserContent::Text {
            text: format!("The request being worked on now:\n{latest}"),
        });
    }
    blocks.push(UserContent::Text {
        text: format!("Summary of the work so far:\n{}", summary.trim()),
    });
    // Images the person attached in the summarized part go with it; the model is told so.
    let dropped: Vec<String> = transcript
        .iter()
        .take(cut)
        .flat_map(|m| match m {
            Message::User { content } => content
                .iter()
                .filter_map(|c| match c {
                    UserContent::Image(i) => Some(crate::agent::attach::describe(i)),
                    _ => None,
                })
                .collect(),
            Message::Assistant { .. } => Vec::new(),
        })
        .collect();
    if !dropped.is_empty() {
        blocks.push(UserContent::Text {
            text: format!(
                "{IMAGES_DROPPED_MARKER} {} (ask the user to attach again what you still need \
                 to see)",
                dropped.join(", ")
            ),
        });
    }
    transcript.splice(..cut, [Message::User { content: blocks }]);
    cut
}

/// Adds the session's todo list to the summary message [`apply_summary`] put first.
pub fn add_todo_note(transcript: &mut [Message], list: &tern_protocol::todo::TodoList) {
    if let Some(Message::User { content }) = transcript.first_mut() {
        content.push(UserContent::Text {
            text: format!(
                "The todo list ({}; `todo__read` returns it, `todo__write` updates it):\n{}",
                list.progress(),
                list.checklist().join("\n")
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tern_model::ToolResult;
    use tern_protocol::ToolCall;

    use super::*;

    fn turn(i: usize, output: &str) -> [Message; 2] {
        [
            Message::Assistant {
                content: vec![AssistantContent::ToolCall(ToolCall {
                    id: format!("c{i}"),
                    name: "fs__read_file".into(),
                    arguments: json!({"path": format!("f{i}.rs")}),
                })],
            },
            Message::User {
                content: vec![UserContent::ToolResult(ToolResult::text(
                    format!("c{i}"),
                    output,
                ))],
            },
        ]
    }

    fn session(turns: usize) -> Vec<Message> {
        let mut t = vec![Message::user_text("fix the parser")];
        for i in 0..turns {
            t.extend(turn(i, &"x".repeat(1_000)));
        }
        t
    }

    #[test]
    fn the_tail_is_whole_turns_starting_at_an_assistant_message() {
        let t = session(5);
        let start = tail_start(&t, |_| 100, 250);
        assert!(matches!(t[start], Message::Assistant { .. }));
        assert_eq!(t.len() - start, 2, "only the last turn fits 250");
        let all = tail_start(&t, |_| 100, 10_000);
        assert_eq!(all, 1, "everything but the goal fits");
        assert_eq!(
            tail_start(&t, |_| 100, 0),
            t.len() - 2,
            "the last turn always stays"
        );
    }

    #[test]
    fn eliding_keeps_every_call_paired_and_names_what_was_left_out() {
        let mut t = session(4);
        let tail = tail_start(&t, |_| 300, 600);
        let (count, removed) = elide(&mut t, tail);
        assert_eq!(count, 3);
        assert_eq!(removed, 3_000);
        let Message::User { content } = &t[2] else {
            panic!()
        };
        let UserContent::ToolResult(r) = &content[0] else {
            panic!()
        };
        assert_eq!(r.call_id, "c0");
        assert!(
            r.content.contains("1000 characters from fs__read_file"),
            "{}",
            r.content
        );
        assert!(r.content.contains("f0.rs"));
        let Message::User { content } = t.last().unwrap() else {
            panic!()
        };
        let UserContent::ToolResult(r) = &content[0] else {
            panic!()
        };
        assert_eq!(r.content.len(), 1_000, "the newest turn is verbatim");
        // Elision is idempotent.
        assert_eq!(elide(&mut t, tail), (0, 0));
        // Pairing holds: normalisation (what the adapters send) changes nothing.
        assert_eq!(tern_model::normalize::normalize(&t), t);
    }

    #[test]
    fn images_in_the_summarized_part_are_dropped_with_a_marker() {
        let png = tern_protocol::Image {
            mime_type: "image/png".into(),
            data: "A".repeat(4_000),
        };
        let mut t = vec![Message::User {
            content: vec![
                UserContent::Image(png.clone()),
                UserContent::Text {
                    text: "why does the button look like this?".into(),
                },
            ],
        }];
        t.extend(turn(0, "y"));
        t.extend(turn(1, "z"));
        let cut = t.len() - 2;
        // The summarizer is told an image was there, not sent its base64.
        let ask = render(&t, cut, 10_000);
        assert!(
            ask.contains("USER: [attached an image: image/png, 3 KB]"),
            "{ask}"
        );
        assert!(!ask.contains("AAAA"), "{ask}");
        apply_summary(&mut t, cut, "Goal: fix the button.");
        let Message::User { content } = &t[0] else {
            panic!()
        };
        assert!(!content.iter().any(|c| matches!(c, UserContent::Image(_))));
        let texts: Vec<&str> = texts(&t[0]);
        assert!(
            texts[0].contains("why does the button look like this?"),
            "the goal is the text, not the image: {texts:?}"
        );
        let note = texts.last().unwrap();
        assert!(
            note.starts_with(IMAGES_DROPPED_MARKER) && note.contains("image/png, 3 KB"),
            "{note}"
        );
        assert_eq!(tern_model::normalize::normalize(&t), t);
    }

    #[test]
    fn a_summary_keeps_the_goal_and_the_current_request_verbatim() {
        let mut t = session(2);
        t.push(Message::Assistant {
            content: vec![AssistantContent::Text {
                text: "done".into(),
            }],
        });
        t.push(Message::user_text("now also add tests"));
        t.extend(turn(9, "y"));
        let cut = t.len() - 2;
        let replaced = apply_summary(&mut t, cut, "Goal: fix the parser. Files changed: f0.rs.");
        assert_eq!(replaced, cut);
        assert_eq!(t.len(), 3);
        let Message::User { content } = &t[0] else {
            panic!()
        };
        let text: Vec<&str> = content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(text[0].starts_with(HEAD_MARKER) && text[0].contains("fix the parser"));
        assert!(text[1].contains("now also add tests"));
        assert!(text[2].contains("Files changed: f0.rs"));
        assert_eq!(
            tern_model::normalize::normalize(&t),
            t,
            "still a valid history"
        );
        // A second compaction keeps the same goal block, not a summary of it.
        let again = t.len() - 2;
        apply_summary(&mut t, again, "second");
        let Message::User { content } = &t[0] else {
            panic!()
        };
        let UserContent::Text { text } = &content[0] else {
            panic!()
        };
        assert!(text.starts_with(HEAD_MARKER) && text.contains("fix the parser"));
        assert_eq!(text.matches(HEAD_MARKER).count(), 1);
    }

    #[test]
    fn the_summarizer_sees_the_conversation_as_text_within_a_size() {
        let t = session(50);
        let req = summary_request(&t, t.len(), Some("the parser"), 5_000);
        assert!(req.tools.is_empty());
        assert!(req.system[0].contains(SUMMARY_MARKER));
        let Message::User { content } = &req.messages[0] else {
            panic!()
        };
        let UserContent::Text { text } = &content[0] else {
            panic!()
        };
        assert!(text.chars().count() < 5_200, "{}", text.len());
        assert!(text.contains("USER: fix the parser"));
        assert!(text.contains("CALL fs__read_file"));
        assert!(text.contains("Pay particular attention to: the parser"));
    }
}
