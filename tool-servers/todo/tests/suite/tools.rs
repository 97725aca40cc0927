//! `write` and `read` in both eras: the list as a checklist, as `structuredContent` matching
//! the declared output schema, and under `_meta["tern/todo"]`.

use serde_json::{Value, json};

use super::{ERAS, Todo, plan};

#[tokio::test]
async fn write_replaces_the_whole_list_and_read_returns_it_in_both_eras() {
    for era in ERAS {
        let todo = Todo::memory(era).await;
        let (text, structured, meta) = todo.ok("read", json!({})).await;
        assert_eq!(text, "The todo list is empty.", "{era:?}");
        assert_eq!(structured["todos"], json!([]));
        assert_eq!(meta["changed"], false);

        let (text, structured, meta) = todo.write(plan()).await;
        assert_eq!(
            text,
            "Updated. Todo list: 3 items (1 done, 1 in progress, 1 pending).\n\
             - [x] 1: Read the parser\n\
             - [>] 2: Write the failing test (in progress)\n\
             - [ ] 3: Fix the bug",
            "{era:?}"
        );
        assert_eq!(structured["todos"], plan());
        assert_eq!(
            structured["counts"],
            json!({"pending": 1, "in_progress": 1, "done": 1, "cancelled": 0})
        );
        // The host's copy is the structured one plus whether the call changed the list.
        assert_eq!(meta["todos"], plan());
        assert_eq!(meta["counts"], structured["counts"]);
        assert_eq!(meta["changed"], true);

        // Replacing means replacing: the items left out are gone.
        let smaller = json!([
            {"id": "2", "text": "Write the failing test", "status": "done"},
            {"id": "3", "text": "Fix the bug", "status": "in_progress"},
            {"id": "4", "text": "Tell the user", "status": "cancelled"},
        ]);
        todo.write(smaller.clone()).await;
        let (text, structured, meta) = todo.ok("read", json!({})).await;
        assert_eq!(structured["todos"], smaller);
        assert!(!text.contains("Read the parser"), "{text}");
        assert!(
            text.contains("- [-] 4: Tell the user (cancelled)"),
            "{text}"
        );
        assert_eq!(meta["changed"], false, "read never changes the list");

        // The same list again is a write that changed nothing.
        let (_, _, meta) = todo.write(smaller).await;
        assert_eq!(meta["changed"], false);
        // And the empty list clears it.
        let (text, _, meta) = todo.write(json!([])).await;
        assert_eq!(text, "Updated. The todo list is empty.");
        assert_eq!(meta["changed"], true);
        todo.stop().await;
    }
}

#[tokio::test]
async fn tools_declare_honest_annotations_and_schemas_their_results_match() {
    let todo = Todo::memory(super::Era::Legacy).await;
    let tools = todo.tools().await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let tool = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();

    let read = tool("read");
    let a = read.annotations.clone().unwrap();
    assert_eq!(a.read_only_hint, Some(true));
    assert_eq!(a.open_world_hint, Some(false));
    let write = tool("write");
    let a = write.annotations.clone().unwrap();
    // It changes the server's list, never the user's files: not read-only, not destructive.
    assert_eq!(a.read_only_hint, Some(false));
    assert_eq!(a.destructive_hint, Some(false));
    assert_eq!(a.idempotent_hint, Some(true));

    // The input schema says what the model must send.
    let input = Value::Object((*write.input_schema).clone());
    assert_eq!(input["required"], json!(["todos"]), "{input}");
    let item = if input["properties"]["todos"]["items"]["$ref"].is_string() {
        let r = input["properties"]["todos"]["items"]["$ref"]
            .as_str()
            .unwrap();
        let name = r.rsplit('/').next().unwrap();
        input["$defs"][name].clone()
    } else {
        input["properties"]["todos"]["items"].clone()
    };
    let text = item.to_string();
    for want in ["pending", "in_progress", "done", "cancelled"] {
        assert!(text.contains(want), "status {want} missing from {text}");
    }
    assert_eq!(input["properties"]["todos"]["maxItems"], 100, "{input}");

    // Each result's structuredContent matches the declared output schema.
    let (_, written, _) = todo.write(super::plan()).await;
    let (_, read_back, _) = todo.ok("read", json!({})).await;
    for (tool, value) in [(&write, &written), (&read, &read_back)] {
        let schema = Value::Object((*tool.output_schema.clone().unwrap()).clone());
        // Plain JSON Schema (tern_tool_common::schema::portable): no custom integer formats.
        assert!(!schema.to_string().contains("\"format\""), "{schema}");
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}\n{schema}", tool.name);
    }
    assert!(
        todo.instructions().contains("todo list"),
        "{}",
        todo.instructions()
    );
    todo.stop().await;
}
