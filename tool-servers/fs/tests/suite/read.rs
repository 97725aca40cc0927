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

/// A real 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn png() -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(PNG_B64)
        .unwrap()
}

/// An image file comes back as an MCP image block (the model can look at a screenshot, as
/// with Claude Code's Read), told by its bytes — a PNG named `.txt` too — with a text note
/// that `structuredContent` repeats; a larger image than `--max-image-bytes` is refused, and
/// confinement holds as for text.
#[tokio::test]
async fn read_file_returns_an_image_file_as_an_image_block() {
    let fs = Fs::start_with(&["--max-image-bytes", "100"]).await;
    std::fs::write(fs.path("shot.png"), png()).unwrap();
    std::fs::write(fs.path("really-a-png.txt"), png()).unwrap();
    for path in ["shot.png", "really-a-png.txt"] {
        let r = fs.call("read_file", json!({ "path": path })).await;
        assert_eq!(r.is_error, Some(false), "{r:?}");
        assert_eq!(r.content.len(), 2, "{r:?}");
        let note = r.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            note,
            "[image: image/png, 70 bytes; sent as an image content block]\n"
        );
        let image = r.content[1].as_image().expect("an image block");
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(image.data, PNG_B64);
        let st = r.structured_content.unwrap();
        assert_eq!(
            st["content"], note,
            "the text mirrors the structured result"
        );
        assert_eq!(st["mime_type"], "image/png");
        assert_eq!(st["total_bytes"], 70);
        assert_eq!(st["lines_shown"], 0);
    }
    // Over the limit: refused with the size, never half an image.
    let mut big = png();
    big.resize(101, 0);
    std::fs::write(fs.path("big.png"), &big).unwrap();
    let text = fs
        .refused("read_file", json!({"path": "big.png"}), "big.png")
        .await;
    assert!(
        text.contains("PNG image of 101 bytes, over the 100-byte limit"),
        "{text}"
    );
    // Still confined.
    std::fs::write(fs.outside().join("outside.png"), png()).unwrap();
    let outside = s(&fs.outside().join("outside.png"));
    fs.refused("read_file", json!({ "path": outside }), "outside.png")
        .await;
    // Other binary files are still refused.
    std::fs::write(fs.path("blob.bin"), b"\x7fELF\0\0\x01binary").unwrap();
    let text = fs
        .refused("read_file", json!({"path": "blob.bin"}), "blob.bin")
        .await;
    assert!(text.contains("binary"), "{text}");
    fs.stop().await;
}
