//! Host deny rules (F4): `--deny-read GLOB` and the request `_meta` key
//! `tern/deny_paths` hide denied files from every tool, including through a
//! whole-root grep, a symlink, and a hard link (another name, same inode).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::raw::Raw;

const SECRET: &str = "S3CRETVALUE";
const DENIED: &str = "denied by the host's rule";

/// A root with `.env` files, a symlink and a hard link to one, a link whose own
/// name is denied, and harmless files.
fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let put = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(".env", &format!("API_KEY={SECRET}\n"));
    put("sub/deeper/.env", &format!("DB_KEY={SECRET}\n"));
    put("notes.txt", "PUBLIC_KEY=visible\n");
    put("sub/ok.txt", "PUBLIC_KEY=also visible\n");
    std::os::unix::fs::symlink(".env", root.join("env-link")).unwrap();
    std::fs::hard_link(root.join(".env"), root.join("innocent.txt")).unwrap();
    // A symlink whose own name is denied, to a file that is not.
    std::os::unix::fs::symlink("notes.txt", root.join("alias.secret")).unwrap();
    (dir, root)
}

/// The globs both tests deny.
const GLOBS: [&str; 2] = ["**/.env", "**/*.secret"];

fn whole(v: &Value) -> String {
    v.to_string()
}

/// Result of a call that must fail with the deny message, leaking nothing.
fn refused(raw: &mut Raw, meta: &Option<Value>, tool: &str, args: Value) -> String {
    let r = raw.call(tool, args.clone(), meta.clone());
    let all = whole(&r);
    assert_eq!(r["isError"], true, "{tool} {args} should be refused: {all}");
    assert!(all.contains(DENIED), "{tool} {args}: {all}");
    assert!(!all.contains(SECRET), "{tool} {args} leaked: {all}");
    all
}

/// Result of a call that must succeed, leaking nothing.
fn ok(raw: &mut Raw, meta: &Option<Value>, tool: &str, args: Value) -> String {
    let r = raw.call(tool, args.clone(), meta.clone());
    let all = whole(&r);
    assert_eq!(r["isError"], false, "{tool} {args} failed: {all}");
    assert!(!all.contains(SECRET), "{tool} {args} leaked: {all}");
    all
}

fn every_tool_honours_the_rules(raw: &mut Raw, root: &Path, meta: Option<Value>) {
    let m = &meta;
    // read_file: by name, through a symlink, through a hard link, by the link's own name.
    refused(raw, m, "read_file", json!({"path": ".env"}));
    refused(raw, m, "read_file", json!({"path": "sub/deeper/.env"}));
    refused(raw, m, "read_file", json!({"path": root.join(".env")}));
    refused(raw, m, "read_file", json!({"path": "sub/../.env"}));
    refused(raw, m, "read_file", json!({"path": "env-link"}));
    let text = refused(raw, m, "read_file", json!({"path": "innocent.txt"}));
    assert!(text.contains("hard link"), "{text}");
    refused(raw, m, "read_file", json!({"path": "alias.secret"}));
    assert!(ok(raw, m, "read_file", json!({"path": "notes.txt"})).contains("visible"));

    // grep over the whole root skips them silently, and still finds the rest.
    for mode in ["content", "files_with_matches", "count"] {
        let text = ok(
            raw,
            m,
            "grep",
            json!({"pattern": "KEY=", "output_mode": mode}),
        );
        assert!(
            text.contains("notes.txt") && text.contains("ok.txt"),
            "{text}"
        );
        for hidden in [".env", "innocent.txt", "env-link"] {
            assert!(!text.contains(hidden), "{mode}: {hidden} in {text}");
        }
    }
    refused(raw, m, "grep", json!({"pattern": "KEY", "path": ".env"}));
    refused(
        raw,
        m,
        "grep",
        json!({"pattern": "KEY", "path": "innocent.txt"}),
    );

    // glob and list_dir do not even show the names.
    let text = ok(raw, m, "glob", json!({"pattern": "**"}));
    assert!(text.contains("notes.txt"), "{text}");
    for hidden in [".env", "innocent.txt", "env-link", "alias.secret"] {
        assert!(!text.contains(hidden), "glob: {hidden} in {text}");
    }
    let text = ok(raw, m, "list_dir", json!({}));
    assert!(text.contains("notes.txt"), "{text}");
    for hidden in [".env", "innocent.txt", "env-link", "alias.secret"] {
        assert!(!text.contains(hidden), "list_dir: {hidden} in {text}");
    }

    // write_file and edit_file refuse, and change nothing.
    refused(
        raw,
        m,
        "write_file",
        json!({"path": ".env", "content": "x"}),
    );
    refused(
        raw,
        m,
        "write_file",
        json!({"path": "innocent.txt", "content": "x"}),
    );
    refused(
        raw,
        m,
        "write_file",
        json!({"path": "new/.env", "content": "x"}),
    );
    refused(
        raw,
        m,
        "edit_file",
        json!({"path": ".env", "old_string": "API", "new_string": "X"}),
    );
    refused(
        raw,
        m,
        "edit_file",
        json!({"path": "innocent.txt", "old_string": "API", "new_string": "X"}),
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".env")).unwrap(),
        format!("API_KEY={SECRET}\n")
    );
    assert!(
        !root.join("new").exists(),
        "a refused write creates no directory"
    );
    ok(
        raw,
        m,
        "write_file",
        json!({"path": "new/fine.txt", "content": "x"}),
    );
}

#[test]
fn deny_read_flag_hides_denied_files_from_every_tool() {
    let (_dir, root) = tree();
    let mut flags = Vec::new();
    for g in GLOBS {
        flags.extend(["--deny-read", g]);
    }
    let mut raw = Raw::start(&root, &flags);
    every_tool_honours_the_rules(&mut raw, &root, None);
}

#[test]
fn deny_paths_meta_hides_denied_files_from_every_tool() {
    let (_dir, root) = tree();
    let mut raw = Raw::start(&root, &[]);
    // Without rules the same files are readable: the rules, not the tree, hide them.
    let r = raw.call("read_file", json!({"path": "innocent.txt"}), None);
    assert!(whole(&r).contains(SECRET), "{r}");
    every_tool_honours_the_rules(&mut raw, &root, Some(json!({"tern/deny_paths": GLOBS})));
    // The rules are per call: the next call without them is not restricted.
    let r = raw.call("read_file", json!({"path": ".env"}), None);
    assert_eq!(r["isError"], false, "{r}");
}

#[test]
fn absolute_and_directory_globs_and_bad_lists() {
    let (_dir, root) = tree();
    let secrets = format!("{}/sub/**", root.display());
    let mut raw = Raw::start(&root, &["--deny-read", &secrets]);
    let r = raw.call("read_file", json!({"path": "sub/ok.txt"}), None);
    assert!(whole(&r).contains(DENIED), "{r}");
    let r = raw.call("glob", json!({"pattern": "**/*.txt"}), None);
    assert!(!whole(&r).contains("ok.txt"), "{r}");
    // A malformed per-call list fails the call instead of running unguarded.
    for bad in [json!("**/.env"), json!([1]), json!(["a[b"])] {
        let r = raw.call(
            "read_file",
            json!({"path": "notes.txt"}),
            Some(json!({"tern/deny_paths": bad})),
        );
        assert_eq!(r["isError"], true, "{bad}: {r}");
        assert!(whole(&r).contains("deny"), "{r}");
    }
    // A bad glob on the command line is a startup error.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-fs"))
        .arg("--root")
        .arg(&root)
        .args(["--deny-read", "a[b"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a[b"));
}
