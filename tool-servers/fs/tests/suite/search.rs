//! glob and grep: .gitignore, caps, symlinks not followed, the pattern is data.

use serde_json::json;

use super::{Fs, s};

fn tree(fs: &Fs) {
    fs.put(".gitignore", "target/\n*.log\n");
    fs.put("src/main.rs", "fn main() {\n    // TODO: greet\n}\n");
    fs.put("src/lib/mod.rs", "pub fn Greet() {}\n// todo later\n");
    fs.put("target/debug/gen.rs", "fn generated() {} // TODO\n");
    fs.put("notes.log", "TODO in a log\n");
    fs.put("README.md", "run with --pre=sh to pwn\n");
    fs.put(".hidden/h.rs", "// TODO hidden\n");
    std::fs::create_dir_all(fs.outside().join("elsewhere")).unwrap();
    std::fs::write(fs.outside().join("elsewhere/leak.rs"), "// TODO outside\n").unwrap();
    std::os::unix::fs::symlink(fs.outside().join("elsewhere"), fs.path("src/link-out")).unwrap();
}

#[tokio::test]
async fn glob_respects_gitignore_and_never_follows_links_out() {
    let fs = Fs::start().await;
    tree(&fs);
    let (text, st) = fs.ok("glob", json!({"pattern": "**/*.rs"})).await;
    let expect: Vec<String> = [".hidden/h.rs", "src/lib/mod.rs", "src/main.rs"]
        .iter()
        .map(|p| s(&fs.path(p)))
        .collect();
    assert_eq!(st["matches"], json!(expect), "{text}");
    assert_eq!(st["truncated"], false);
    assert!(
        !text.contains("leak.rs") && !text.contains("gen.rs"),
        "{text}"
    );
    // `*` stays within a directory; `path` narrows the search.
    let (_, st) = fs
        .ok("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(st["matches"], json!([s(&fs.path("src/main.rs"))]));
    let (text, _) = fs.ok("glob", json!({"pattern": "*.nothing"})).await;
    assert!(text.contains("no paths"), "{text}");
    fs.refused("glob", json!({"pattern": "a[", "path": "src"}), "src")
        .await;
    fs.stop().await;
}

#[tokio::test]
async fn glob_is_capped_and_says_so() {
    let fs = Fs::start_with(&["--max-glob-results", "2"]).await;
    for n in 0..5 {
        fs.put(&format!("f{n}.txt"), "");
    }
    let (text, st) = fs.ok("glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(st["truncated"], true);
    assert_eq!(st["matches"].as_array().unwrap().len(), 2);
    assert!(text.contains("capped at 2"), "{text}");
    fs.stop().await;
}

#[tokio::test]
async fn grep_modes_filters_and_gitignore() {
    let fs = Fs::start().await;
    tree(&fs);
    let (_, st) = fs.ok("grep", json!({"pattern": "TODO"})).await;
    let expect: Vec<String> = [".hidden/h.rs", "src/main.rs"]
        .iter()
        .map(|p| s(&fs.path(p)))
        .collect();
    assert_eq!(
        st["files"],
        json!(expect),
        "gitignored and linked-out files are skipped"
    );

    let (text, st) = fs
        .ok("grep", json!({"pattern": "todo", "case_insensitive": true, "output_mode": "content", "glob": "*.rs", "path": "src"}))
        .await;
    let main = s(&fs.path("src/main.rs"));
    let lib = s(&fs.path("src/lib/mod.rs"));
    assert_eq!(
        st["lines"],
        json!([
            format!("{lib}:2:// todo later"),
            format!("{main}:2:    // TODO: greet")
        ]),
        "{text}"
    );
    assert_eq!(st["files_matched"], 2);

    let (_, st) = fs
        .ok(
            "grep",
            json!({"pattern": "(?i)greet", "output_mode": "count"}),
        )
        .await;
    assert_eq!(
        st["counts"],
        json!([format!("{lib}:1"), format!("{main}:1")])
    );

    // A single file as the path.
    let (_, st) = fs
        .ok(
            "grep",
            json!({"pattern": "fn", "path": "src/main.rs", "output_mode": "count"}),
        )
        .await;
    assert_eq!(st["counts"], json!([format!("{main}:1")]));
    fs.stop().await;
}

#[tokio::test]
async fn grep_pattern_is_data_never_a_flag() {
    let fs = Fs::start().await;
    tree(&fs);
    for pattern in ["--pre=sh", "-e", "--files"] {
        let r = fs
            .call(
                "grep",
                json!({"pattern": pattern, "output_mode": "content"}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{pattern}: {}", super::text(&r));
    }
    let (_, st) = fs
        .ok(
            "grep",
            json!({"pattern": "--pre=sh", "output_mode": "content"}),
        )
        .await;
    assert_eq!(
        st["lines"],
        json!([format!(
            "{}:1:run with --pre=sh to pwn",
            s(&fs.path("README.md"))
        )])
    );
    let text = fs
        .refused("grep", json!({"pattern": "(unclosed"}), ".")
        .await;
    assert!(text.contains("invalid regex"), "{text}");
    fs.stop().await;
}

#[tokio::test]
async fn grep_is_capped_and_says_so() {
    let fs = Fs::start_with(&["--max-grep-results", "3"]).await;
    fs.put("many.txt", &"hit\n".repeat(10));
    let (text, st) = fs
        .ok("grep", json!({"pattern": "hit", "output_mode": "content"}))
        .await;
    assert_eq!(st["truncated"], true);
    assert_eq!(st["lines"].as_array().unwrap().len(), 3);
    assert!(text.contains("capped at 3 matching lines"), "{text}");
    fs.stop().await;
}

#[tokio::test]
async fn walks_apply_ignore_files_like_ripgrep() {
    let fs = Fs::start().await;
    // Root rules apply below, even when the search starts in a subdirectory.
    fs.put(".gitignore", "*.tmp\nbuild/\n");
    // A deeper file re-includes what a shallower one ignores.
    fs.put("a/.gitignore", "!keep.tmp\n");
    // `.ignore` beats `.gitignore` in the same directory.
    fs.put("a/.ignore", "secret.txt\n");
    fs.put("a/keep.tmp", "x");
    fs.put("a/drop.tmp", "x");
    fs.put("a/secret.txt", "x");
    fs.put("a/ok.txt", "x");
    fs.put("a/build/out.txt", "x");
    // .git/info/exclude counts; .git itself is never listed.
    fs.put(".git/info/exclude", "excluded.txt\n");
    fs.put("a/excluded.txt", "x");
    let (text, st) = fs.ok("glob", json!({"pattern": "**/*", "path": "a"})).await;
    let expect: Vec<String> = ["a/.gitignore", "a/.ignore", "a/keep.tmp", "a/ok.txt"]
        .iter()
        .map(|p| s(&fs.path(p)))
        .collect();
    assert_eq!(st["matches"], json!(expect), "{text}");
    let (text, _) = fs.ok("glob", json!({"pattern": "**"})).await;
    assert!(!text.contains("/.git/"), "{text}");
    fs.stop().await;
}
