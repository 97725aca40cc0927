//! write_file and edit_file.

use std::os::unix::fs::PermissionsExt;

use rmcp::model::ResourceContents;
use serde_json::json;

use super::{Fs, s, text};

#[tokio::test]
async fn write_file_creates_parents_and_reports_bytes() {
    let fs = Fs::start().await;
    let (text, st) = fs
        .ok(
            "write_file",
            json!({"path": "new/deep/f.txt", "content": "héllo\n"}),
        )
        .await;
    assert_eq!(st["bytes_written"], 7);
    assert_eq!(st["created"], true);
    assert!(text.contains("7 bytes"), "{text}");
    assert_eq!(
        std::fs::read_to_string(fs.path("new/deep/f.txt")).unwrap(),
        "héllo\n"
    );
    // Overwrite keeps the permission bits and leaves no temporary file behind.
    std::fs::set_permissions(
        fs.path("new/deep/f.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let (_, st) = fs
        .ok(
            "write_file",
            json!({"path": "new/deep/f.txt", "content": "x"}),
        )
        .await;
    assert_eq!(st["created"], false);
    let meta = std::fs::metadata(fs.path("new/deep/f.txt")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read_dir(fs.path("new/deep")).unwrap().count(), 1);
    fs.stop().await;
}

#[tokio::test]
async fn write_file_never_writes_through_a_symlink() {
    let fs = Fs::start().await;
    let target = fs.outside().join("planted.txt");
    std::os::unix::fs::symlink(&target, fs.path("dangling")).unwrap();
    let text = fs
        .refused(
            "write_file",
            json!({"path": "dangling", "content": "pwned"}),
            "dangling",
        )
        .await;
    assert!(text.contains("symlink"), "{text}");
    assert!(!target.exists(), "wrote through the symlink");
    // An in-root link is refused as well: the final name is never followed.
    fs.put("real.txt", "keep");
    std::os::unix::fs::symlink("real.txt", fs.path("alias")).unwrap();
    fs.refused(
        "write_file",
        json!({"path": "alias", "content": "x"}),
        "alias",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(fs.path("real.txt")).unwrap(),
        "keep"
    );
    fs.stop().await;
}

/// The diff block: `(uri, mimeType, text)` of the one embedded resource.
fn diff_of(r: &rmcp::model::CallToolResult) -> (String, String, String) {
    let resources: Vec<_> = r.content.iter().filter_map(|c| c.as_resource()).collect();
    assert_eq!(resources.len(), 1, "one embedded resource: {:?}", r.content);
    match &resources[0].resource {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => (
            uri.clone(),
            mime_type.clone().unwrap_or_default(),
            text.clone(),
        ),
        other => panic!("the diff is text, not {other:?}"),
    }
}

#[tokio::test]
async fn edit_file_returns_its_diff_as_an_embedded_resource() {
    let fs = Fs::start().await;
    fs.put("code.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    let r = fs
        .call(
            "edit_file",
            json!({"path": "code.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let (uri, mime, diff) = diff_of(&r);
    assert_eq!(uri, format!("file://{}", s(&fs.path("code.rs"))));
    assert_eq!(mime, "text/x-diff");
    assert!(diff.contains("-    println!(\"hi\");"), "{diff}");
    assert!(diff.contains("+    println!(\"hello\");"), "{diff}");
    assert!(
        diff.contains(&format!("--- {}", s(&fs.path("code.rs")))),
        "{diff}"
    );
    // The text block is the one-line summary; the diff is not sent twice.
    let summary = text(&r);
    assert_eq!(
        summary,
        format!(
            "edited `{}`: 1 replacement (+1 -1 lines)",
            s(&fs.path("code.rs"))
        )
    );
    let st = r.structured_content.unwrap();
    assert_eq!(st["replacements"], 1);
    // The diff is in the structured result too: some clients show the model only that.
    assert_eq!(st["diff"], diff, "{st}");
    assert_eq!(
        (&st["lines_added"], &st["lines_removed"]),
        (&json!(1), &json!(1))
    );
    assert_eq!(
        std::fs::read_to_string(fs.path("code.rs")).unwrap(),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    fs.stop().await;
}

#[tokio::test]
async fn write_file_over_an_existing_file_returns_a_diff_and_a_new_file_none() {
    let fs = Fs::start().await;
    let r = fs
        .call("write_file", json!({"path": "n.txt", "content": "a\nb\n"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(
        r.content.len(),
        1,
        "a created file has no diff: {:?}",
        r.content
    );
    let r = fs
        .call("write_file", json!({"path": "n.txt", "content": "a\nc\n"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let (uri, mime, diff) = diff_of(&r);
    assert_eq!(uri, format!("file://{}", s(&fs.path("n.txt"))));
    assert_eq!(mime, "text/x-diff");
    assert!(diff.contains("-b\n") && diff.contains("+c\n"), "{diff}");
    assert!(text(&r).contains("replaced, +1 -1 lines"), "{}", text(&r));
    // A path that needs escaping in a URI gets it.
    fs.put("with space.txt", "x\n");
    let r = fs
        .call(
            "write_file",
            json!({"path": "with space.txt", "content": "y\n"}),
        )
        .await;
    let (uri, _, _) = diff_of(&r);
    assert!(uri.ends_with("/with%20space.txt"), "{uri}");
    fs.stop().await;
}

#[tokio::test]
async fn edit_file_requires_a_unique_match_unless_replace_all() {
    let fs = Fs::start().await;
    fs.put("t.txt", "a-b-a-c\n");
    let text = fs
        .refused(
            "edit_file",
            json!({"path": "t.txt", "old_string": "zzz", "new_string": "y"}),
            "t.txt",
        )
        .await;
    assert!(text.contains("not found"), "{text}");
    let text = fs
        .refused(
            "edit_file",
            json!({"path": "t.txt", "old_string": "a", "new_string": "y"}),
            "t.txt",
        )
        .await;
    assert!(text.contains("2 times"), "{text}");
    assert_eq!(
        std::fs::read_to_string(fs.path("t.txt")).unwrap(),
        "a-b-a-c\n"
    );
    let (_, st) = fs
        .ok(
            "edit_file",
            json!({"path": "t.txt", "old_string": "a", "new_string": "y", "replace_all": true}),
        )
        .await;
    assert_eq!(st["replacements"], 2);
    assert_eq!(
        std::fs::read_to_string(fs.path("t.txt")).unwrap(),
        "y-b-y-c\n"
    );
    fs.refused(
        "edit_file",
        json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}),
        "nope.txt",
    )
    .await;
    fs.stop().await;
}
