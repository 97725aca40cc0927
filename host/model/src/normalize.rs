//! Makes a conversation valid for the providers before it is serialised.
//!
//! Both APIs answer a broken history with a 400 (see WIRE-NOTES.md and the observed errors in
//! tests/fixtures/provider-wire). The rules applied here, for every provider:
//! * empty or whitespace-only text is dropped ("text content blocks must be non-empty");
//! * messages left empty are dropped and consecutive turns of one role are merged, so all tool
//!   results for an assistant turn end up in ONE user message (splitting them has been seen to 400);
//! * in a user turn, tool results come first, in the order of the preceding assistant's calls,
//!   exactly one per call: a missing result becomes an `is_error` "not executed" result, a
//!   duplicate or an orphan (no such call in the previous turn) is dropped with a warning;
//! * an assistant turn with tool calls that ends the history gets a user turn of such results.

use std::collections::HashSet;

use crate::types::{AssistantContent, Message, ToolResult, UserContent};

/// Content of the result that stands in for a call that has none.
pub const MISSING_RESULT: &str =
    "Not executed: no result was recorded for this tool call (the turn was interrupted).";

/// Returns a history that satisfies the rules above.
pub fn normalize(messages: &[Message]) -> Vec<Message> {
    let mut out = merge(messages.iter().cloned().filter_map(drop_empty_text));
    let mut i = 0;
    while i < out.len() {
        let call_ids: Vec<String> = match &out[i] {
            Message::Assistant { content } => content
                .iter()
                .filter_map(|c| match c {
                    AssistantContent::ToolCall(call) => Some(call.id.clone()),
                    AssistantContent::Text { .. } | AssistantContent::Reasoning(_) => None,
                })
                .collect(),
            Message::User { .. } => Vec::new(),
        };
        match out.get_mut(i + 1) {
            Some(Message::User { content }) => pair_results(content, &call_ids),
            Some(Message::Assistant { .. }) => {} // cannot happen after merge
            None if !call_ids.is_empty() => {
                let mut content = Vec::new();
                pair_results(&mut content, &call_ids);
                out.push(Message::User { content });
            }
            None => {}
        }
        // A user turn not following tool calls may hold only orphans: clean it as well.
        if i == 0
            && let Some(Message::User { content }) = out.get_mut(0)
        {
            pair_results(content, &[]);
        }
        i += 1;
    }
    // Dropping orphans can empty a turn; merge again so roles still alternate.
    merge(out.into_iter().filter(|m| !is_empty(m)))
}

/// `messages` without reasoning items, for APIs that have no place for them (Anthropic Messages,
/// Chat Completions). A turn left empty is dropped by [`normalize`] afterwards.
pub fn strip_reasoning(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m {
            Message::Assistant { content } => Message::Assistant {
                content: content
                    .iter()
                    .filter(|c| !matches!(c, AssistantContent::Reasoning(_)))
                    .cloned()
                    .collect(),
            },
            user => user.clone(),
        })
        .collect()
}

fn drop_empty_text(message: Message) -> Option<Message> {
    let message = match message {
        Message::User { content } => Message::User {
            content: content
                .into_iter()
                .filter(|c| !matches!(c, UserContent::Text { text } if text.trim().is_empty()))
                .collect(),
        },
        Message::Assistant { content } => Message::Assistant {
            content: content
                .into_iter()
                .filter(|c| !matches!(c, AssistantContent::Text { text } if text.trim().is_empty()))
                .collect(),
        },
    };
    (!is_empty(&message)).then_some(message)
}

fn is_empty(message: &Message) -> bool {
    match message {
        Message::User { content } => content.is_empty(),
        Message::Assistant { content } => content.is_empty(),
    }
}

fn merge(messages: impl IntoIterator<Item = Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for message in messages {
        match (out.last_mut(), message) {
            (Some(Message::User { content: prev }), Message::User { content }) => {
                prev.extend(content)
            }
            (Some(Message::Assistant { content: prev }), Message::Assistant { content }) => {
                prev.extend(content)
            }
            (_, message) => out.push(message),
        }
    }
    out
}

/// Rewrites a user turn as: one result per call id, in call order, then the text blocks.
fn pair_results(content: &mut Vec<UserContent>, call_ids: &[String]) {
    let mut results: Vec<ToolResult> = Vec::new();
    let mut texts = Vec::new();
    for block in content.drain(..) {
        match block {
            UserContent::ToolResult(r) => results.push(r),
            // Text and attached images keep their order after the results.
            other @ (UserContent::Text { .. } | UserContent::Image(_)) => texts.push(other),
        }
    }
    let mut used = HashSet::new();
    let mut paired = Vec::with_capacity(call_ids.len() + texts.len());
    for id in call_ids {
        if !used.insert(id.as_str()) {
            continue; // a repeated call id would need two results; the API rejects both
        }
        let result = match results.iter().position(|r| &r.call_id == id) {
            Some(pos) => results.swap_remove(pos),
            None => {
                tracing::warn!(tool_call_id = %id, "tool call has no result; sending an is_error result");
                ToolResult {
                    is_error: true,
                    ..ToolResult::text(id.clone(), MISSING_RESULT)
                }
            }
        };
        paired.push(UserContent::ToolResult(result));
    }
    for orphan in &results {
        tracing::warn!(tool_call_id = %orphan.call_id, "dropping tool result with no matching call in the previous turn");
    }
    paired.extend(texts);
    *content = paired;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::types::ToolCall;

    fn call(id: &str) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: json!({}),
        })
    }

    fn result(id: &str) -> UserContent {
        UserContent::ToolResult(ToolResult::text(id, format!("r-{id}")))
    }

    fn text(t: &str) -> UserContent {
        UserContent::Text { text: t.into() }
    }

    #[test]
    fn results_are_merged_ordered_completed_and_put_before_text() {
        let input = vec![
            Message::user_text("go"),
            Message::Assistant {
                content: vec![
                    AssistantContent::Text { text: "".into() },
                    call("a"),
                    call("b"),
                    call("c"),
                ],
            },
            Message::User {
                content: vec![text("note"), result("c")],
            },
            Message::User {
                content: vec![result("a"), result("a"), result("zzz"), text("  ")],
            },
        ];
        let out = normalize(&input);
        assert_eq!(out.len(), 3);
        let Message::Assistant { content } = &out[1] else {
            panic!()
        };
        assert_eq!(content.len(), 3, "empty text dropped");
        let Message::User { content } = &out[2] else {
            panic!()
        };
        let ids: Vec<String> = content
            .iter()
            .map(|c| match c {
                UserContent::ToolResult(r) => format!("{}:{}", r.call_id, r.is_error),
                UserContent::Text { text } => format!("text:{text}"),
                UserContent::Image(i) => format!("image:{}", i.mime_type),
            })
            .collect();
        assert_eq!(ids, ["a:false", "b:true", "c:false", "text:note"]);
    }

    #[test]
    fn trailing_tool_calls_get_not_executed_results() {
        let out = normalize(&[
            Message::user_text("go"),
            Message::Assistant {
                content: vec![call("x")],
            },
        ]);
        assert_eq!(out.len(), 3);
        let Message::User { content } = &out[2] else {
            panic!()
        };
        assert!(
            matches!(&content[0], UserContent::ToolResult(r) if r.is_error && r.call_id == "x")
        );
    }

    #[test]
    fn orphan_only_turn_disappears_and_roles_still_alternate() {
        let out = normalize(&[
            Message::user_text("a"),
            Message::assistant_text("b"),
            Message::User {
                content: vec![result("nope")],
            },
            Message::assistant_text("c"),
        ]);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1],
            Message::Assistant {
                content: vec![
                    AssistantContent::Text { text: "b".into() },
                    AssistantContent::Text { text: "c".into() }
                ]
            }
        );
    }
}
