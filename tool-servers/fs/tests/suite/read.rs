//! read_file and list_dir happy paths.

use serde_json::json;

use super::{Fs, s};

#[tokio::test]
async fn read_file_numbers_lines_and_reports_structure() {
    let fs = Fs::start().await;
    fs.put("src/hello.txt", "alpha\nbeta\ngamma\n");
    let (text, st) = fs.ok("read_file", json!({"path": "src/hello.txt"})).await;
    assert_eq!(text, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
    assert_eq!(st["total_bytes"], 17);
    assert_eq!(st["truncated"], false);
    assert_eq!(st["next_offset"], json!(null));
    // The structured result carries the text itself (clients that show the model only
    // `structuredContent`, like Claude Code, must still see the file).
    assert_eq!(st["content"], text);
    // Absolute paths inside the root work too.
    let abs = s(&fs.path("src/hello.txt"));
    let (text, _) = fs
        .ok("read_file", json!({"path": abs, "offset": 2, "limit": 1}))
        .await;
    assert!(text.starts_with("     2\tbeta\n"), "{text}");
    assert!(text.contains("offset=3"), "{text}");
    fs.stop().await;
}

#[tokio::test]
async fn read_file_cut_at_the_byte_limit_says_so() {
    let fs = Fs::start_with(&["--max-read-bytes", "64"]).await;
    let body: String = (1..=50).map(|i| format!("line {i:02}\n")).collect();
    fs.put("big.txt", &body);
    let (text, st) = fs.ok("read_file", json!({"path": "big.txt"})).await;
    assert_eq!(st["truncated"], true, "{st}");
    assert_eq!(st["total_bytes"], body.len());
    // 8 bytes a line, 64 bytes a call: 8 lines.
    assert_eq!(st["next_offset"], 9, "{st}");
    assert!(
        text.contains("truncated") && text.contains("offset=9"),
        "{text}"
    );
    let (text, st) = fs
        .ok("read_file", json!({"path": "big.txt", "offset": 49}))
        .await;
    assert_eq!(text, "    49\tline 49\n    50\tline 50\n");
    assert_eq!(st["truncated"], false);
    fs.stop().await;
}

#[tokio::test]
async fn list_dir_shows_sorted_typed_entries() {
    let fs = Fs::start().await;
    fs.put("b.txt", "12345");
    fs.put("a/inner.txt", "");
    std::os::unix::fs::symlink("b.txt", fs.path("c-link")).unwrap();
    let (text, st) = fs.ok("list_dir", json!({"path": "."})).await;
    assert!(text.contains("dir      a/"), "{text}");
    assert!(text.contains("file     b.txt  (5 bytes)"), "{text}");
    assert!(text.contains("symlink  c-link -> b.txt"), "{text}");
    let names: Vec<&str> = st["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b.txt", "c-link"]);
    assert_eq!(st["entries"][0]["type"], "dir");
    assert_eq!(st["entries"][1]["size"], 5);
    assert_eq!(st["truncated"], false);
    // Without a path: the first root.
    let (_, st2) = fs.ok("list_dir", json!({})).await;
    assert_eq!(st2["total"], 3);
    fs.stop().await;
}

#[tokio::test]
async fn list_dir_is_capped() {
    let fs = Fs::start_with(&["--max-glob-results", "2"]).await;
    for n in ["1", "2", "3"] {
        fs.put(n, "");
    }
    let (text, st) = fs.ok("list_dir", json!({"path": "."})).await;
    assert_eq!(st["truncated"], true);
    assert_eq!(st["entries"].as_array().unwrap().len(), 2);
    assert!(text.contains("capped"), "{text}");
    fs.stop().await;
}

#[test]
fn a_burst_of_requests_is_answered_in_full() {
    // More requests at once than the server runs at a time: the rest wait in the
    // pipe, and every one is answered exactly once.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "burst\n").unwrap();
    let mut raw = super::raw::Raw::start(dir.path(), &[]);
    let replies = raw.burst("read_file", &json!({"path": "a.txt"}), 2000);
    let mut ids: Vec<u64> = replies
        .iter()
        .map(|r| {
            assert_eq!(r["result"]["isError"], false, "{r}");
            assert!(r.to_string().contains("burst"), "{r}");
            r["id"].as_u64().unwrap()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2000);
    let r = raw.call("read_file", json!({"path": "a.txt"}), None);
    assert_eq!(r["isError"], false, "still serving: {r}");
}
