//! A list that breaks the rules is refused with every problem named, and the old list stays.

use serde_json::json;

use super::{ERAS, Todo, plan};

#[tokio::test]
async fn a_list_breaking_the_rules_is_refused_and_the_old_list_stays() {
    for era in ERAS {
        let todo = Todo::memory(era).await;
        todo.write(plan()).await;
        let text = todo
            .refused(
                "write",
                json!({"todos": [
                    {"id": "a", "text": "First", "status": "in_progress"},
                    {"id": "a", "text": "Second", "status": "in_progress"},
                    {"id": "b", "text": "two\nlines", "status": "pending"},
                ]}),
            )
            .await;
        assert!(text.starts_with("The todo list was not changed"), "{text}");
        for want in [
            "item 2: the id `a` is already used by item 1",
            "item 3 (id `b`): the text spans several lines",
            "2 items are in_progress (`a`, `a`)",
            "hint: send the whole list again",
        ] {
            assert!(text.contains(want), "{era:?}: missing `{want}` in {text}");
        }
        let (_, structured, _) = todo.ok("read", json!({})).await;
        assert_eq!(structured["todos"], plan(), "the old list stays");
        todo.stop().await;
    }
}

#[tokio::test]
async fn arguments_outside_the_schema_are_refused_not_guessed() {
    let todo = Todo::memory(super::Era::Legacy).await;
    // Claude Code's names (`content`, `completed`) are not silently mapped: the model is told.
    for bad in [
        json!({"todos": [{"id": "1", "content": "x", "status": "pending"}]}),
        json!({"todos": [{"id": "1", "text": "x", "status": "completed"}]}),
        json!({"todos": [{"id": "1", "text": "x"}]}),
        json!({"items": []}),
    ] {
        let r = todo.call("write", bad.clone()).await;
        assert_eq!(r.is_error, Some(true), "{bad} was accepted");
    }
    let many: Vec<_> = (0..101)
        .map(|i| json!({"id": i.to_string(), "text": "step", "status": "pending"}))
        .collect();
    let text = todo.refused("write", json!({ "todos": many })).await;
    assert!(text.contains("101 items"), "{text}");
    let (_, structured, _) = todo.ok("read", json!({})).await;
    assert_eq!(structured["todos"], json!([]));
    todo.stop().await;
}
