//! What a client sees before calling anything: server info, tools, honest hints.

use super::Fs;

#[tokio::test]
async fn server_info_names_tern_fs_and_the_root() {
    let fs = Fs::start().await;
    let info = fs.client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("tern-fs")
    );
    assert_eq!(
        info.server_info.as_ref().map(|i| i.version.as_str()),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains(fs.root.to_str().unwrap()),
        "{instructions}"
    );
    fs.stop().await;
}

#[tokio::test]
async fn tools_are_listed_with_honest_annotations() {
    let fs = Fs::start().await;
    let tools = fs.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "write_file"
        ]
    );
    for t in &tools {
        let a = t.annotations.as_ref().expect("every tool is annotated");
        let writes = matches!(t.name.as_ref(), "write_file" | "edit_file");
        assert_eq!(a.read_only_hint, Some(!writes), "{}", t.name);
        assert_eq!(a.destructive_hint, Some(writes), "{}", t.name);
        assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
        if !writes {
            assert_eq!(a.idempotent_hint, Some(true), "{}", t.name);
        }
        assert!(
            t.description.as_ref().is_some_and(|d| d.len() > 40),
            "{}",
            t.name
        );
    }
    // Parameter docs reach the schema the model reads.
    let grep = tools.iter().find(|t| t.name == "grep").unwrap();
    let schema = serde_json::to_string(&grep.input_schema).unwrap();
    for needle in [
        "files_with_matches",
        "content",
        "count",
        "case_insensitive",
        "ripgrep",
    ] {
        assert!(schema.contains(needle), "{needle}: {schema}");
    }
    let read = tools.iter().find(|t| t.name == "read_file").unwrap();
    let required = read.input_schema.get("required").unwrap();
    assert_eq!(required, &serde_json::json!(["path"]));
    fs.stop().await;
}
