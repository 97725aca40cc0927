//! `read_file` is confined to the skill's folder: `..`, absolute paths elsewhere and
//! symlinks out are refused; paths that stay inside (even through `..` or a symlink) work;
//! the file listing never follows a symlinked folder.

use std::os::unix::fs::symlink;

use serde_json::json;

use super::{Era, Layout, Skills, put_skill};

#[tokio::test]
async fn read_file_never_leaves_the_skill_folder() {
    let layout = Layout::new();
    let dir = layout.skill_dir();
    let secret = layout.base.join("secret.txt");
    std::fs::write(&secret, "TOP SECRET\n").unwrap();
    std::fs::create_dir_all(layout.base.join("elsewhere")).unwrap();
    std::fs::write(layout.base.join("elsewhere/notes.md"), "ELSEWHERE\n").unwrap();
    symlink(&secret, dir.join("link-out.txt")).unwrap();
    symlink("../../../../secret.txt", dir.join("relative-link-out.txt")).unwrap();
    symlink(layout.base.join("elsewhere"), dir.join("linked-dir")).unwrap();
    symlink("reference.md", dir.join("alias.md")).unwrap();
    std::fs::write(dir.join("blob.bin"), [0u8, 159, 146, 150]).unwrap();

    let skills = Skills::start(Era::Legacy, &layout.project_args()).await;
    let read = |path: String| {
        let skills = &skills;
        async move {
            skills
                .call("read_file", json!({"skill": "csv-summary", "path": path}))
                .await
        }
    };
    let escapes = [
        "../../../../secret.txt".to_string(),
        "scripts/../../../../../secret.txt".to_string(),
        secret.to_str().unwrap().to_string(),
        "/etc/passwd".to_string(),
        "link-out.txt".to_string(),
        "relative-link-out.txt".to_string(),
        "linked-dir/notes.md".to_string(),
        format!("{}/link-out.txt", dir.display()),
    ];
    for path in escapes {
        let r = read(path.clone()).await;
        let text = super::text(&r);
        assert_eq!(r.is_error, Some(true), "{path} was read: {text}");
        assert!(
            !text.contains("TOP SECRET") && !text.contains("ELSEWHERE"),
            "{text}"
        );
        assert!(
            text.contains("outside the skill's folder"),
            "{path}: {text}"
        );
    }
    let text = super::text(&read("link-out.txt".into()).await);
    assert!(text.contains("through the symlink"), "{text}");

    // Inside is fine, however it is spelled.
    for path in [
        "reference.md".to_string(),
        "scripts/../reference.md".to_string(),
        "alias.md".to_string(),
        format!("{}/reference.md", dir.display()),
    ] {
        let (text, read, _) = skills
            .ok("read_file", json!({"skill": "csv-summary", "path": path}))
            .await;
        assert!(
            text.starts_with("# csv-summary reference"),
            "{path}: {text}"
        );
        assert_eq!(
            read["path"],
            dir.join("reference.md").to_str().unwrap(),
            "{path}"
        );
    }
    let text = skills
        .refused(
            "read_file",
            json!({"skill": "csv-summary", "path": "blob.bin"}),
        )
        .await;
    assert!(
        text.contains("not a text file") && text.contains("hint:"),
        "{text}"
    );
    let text = skills
        .refused(
            "read_file",
            json!({"skill": "csv-summary", "path": "missing.md"}),
        )
        .await;
    assert!(text.contains("does not exist"), "{text}");
    let text = skills
        .refused(
            "read_file",
            json!({"skill": "csv-summary", "path": "scripts"}),
        )
        .await;
    assert!(text.contains("directory"), "{text}");

    // The listing shows the links as names, but never walks into the linked folder.
    let (_, loaded, _) = skills.ok("load", json!({"name": "csv-summary"})).await;
    let files: Vec<&str> = loaded["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"link-out.txt"), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("notes.md")), "{files:?}");
    skills.stop().await;
}

#[tokio::test]
async fn offsets_page_through_a_long_file() {
    let layout = Layout::new();
    let long: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(layout.skill_dir().join("long.md"), long).unwrap();
    let skills = Skills::start(Era::Modern, &layout.project_args()).await;
    let (text, read, _) = skills
        .ok(
            "read_file",
            json!({"skill": "csv-summary", "path": "long.md", "offset": 4, "limit": 3}),
        )
        .await;
    assert_eq!(
        text,
        "line 4\nline 5\nline 6\n\n[lines 4-6 of 10; continue with offset 7]"
    );
    assert_eq!(read["content"], "line 4\nline 5\nline 6\n");
    assert_eq!(
        (
            read["first_line"].as_u64(),
            read["last_line"].as_u64(),
            read["next_offset"].as_u64()
        ),
        (Some(4), Some(6), Some(7))
    );
    let (text, read, _) = skills
        .ok(
            "read_file",
            json!({"skill": "csv-summary", "path": "long.md", "offset": 7}),
        )
        .await;
    assert_eq!(text, "line 7\nline 8\nline 9\nline 10\n");
    assert!(read.get("next_offset").is_none(), "{read}");
    skills.stop().await;
}

#[tokio::test]
async fn a_skill_whose_skill_md_links_outside_is_skipped() {
    let layout = Layout::new();
    let skills_dir = layout.project.join(".agents/skills");
    let outside = put_skill(
        &layout.base.join("outside"),
        "sneaky",
        "name: sneaky\ndescription: Lives elsewhere.\n",
        "Body\n",
    );
    std::fs::create_dir_all(skills_dir.join("sneaky")).unwrap();
    symlink(outside.join("SKILL.md"), skills_dir.join("sneaky/SKILL.md")).unwrap();
    // A whole skill folder linked in (a skill kept in a repository of its own) is fine: its
    // files are then confined to where the link leads.
    let kept = put_skill(
        &layout.base.join("repo"),
        "kept",
        "name: kept\ndescription: Linked in.\n",
        "Body\n",
    );
    std::fs::write(kept.join("notes.md"), "KEPT NOTES\n").unwrap();
    symlink(&kept, skills_dir.join("kept")).unwrap();

    let skills = Skills::start(Era::Legacy, &layout.project_args()).await;
    let (text, report, _) = skills.ok("list", json!({})).await;
    let names: Vec<&str> = report["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["csv-summary", "kept"], "{text}");
    assert!(
        text.contains("sneaky/SKILL.md") && text.contains("outside the skill's folder"),
        "{text}"
    );
    let (text, _, _) = skills
        .ok("read_file", json!({"skill": "kept", "path": "notes.md"}))
        .await;
    assert_eq!(text, "KEPT NOTES\n");
    let (_, loaded, _) = skills.ok("load", json!({"name": "kept"})).await;
    assert_eq!(loaded["directory"], kept.to_str().unwrap());
    skills.stop().await;
}

#[tokio::test]
async fn the_hosts_deny_globs_hold_for_reads_and_the_file_list_in_both_eras() {
    let layout = Layout::new();
    let dir = layout.skill_dir();
    std::fs::write(dir.join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/key.txt"), "KEY\n").unwrap();
    symlink("secrets/key.txt", dir.join("innocent.txt")).unwrap();
    let meta = json!({"tern/deny_paths": ["**/.env", "secrets"]});
    for era in super::ERAS {
        let skills = Skills::start(era, &layout.project_args()).await;
        for path in [
            ".env",
            "secrets/key.txt",
            "innocent.txt",
            "scripts/../secrets/key.txt",
        ] {
            let r = skills
                .call_with_meta(
                    "read_file",
                    json!({"skill": "csv-summary", "path": path}),
                    meta.clone(),
                )
                .await;
            let text = super::text(&r);
            assert_eq!(r.is_error, Some(true), "{era:?}: {path} was read: {text}");
            assert!(text.contains("denied by the host's rule"), "{text}");
            assert!(!text.contains("hunter2") && !text.contains("KEY"), "{text}");
        }
        let r = skills
            .call_with_meta(
                "read_file",
                json!({"skill": "csv-summary", "path": "reference.md"}),
                meta.clone(),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{}", super::text(&r));
        let r = skills
            .call_with_meta("load", json!({"name": "csv-summary"}), meta.clone())
            .await;
        let files = r.structured_content.unwrap()["files"].clone();
        assert!(!files.to_string().contains("secrets/"), "{files}");
        // A malformed list fails the call instead of running unguarded.
        let r = skills
            .call_with_meta(
                "read_file",
                json!({"skill": "csv-summary", "path": "reference.md"}),
                json!({"tern/deny_paths": "**"}),
            )
            .await;
        assert_eq!(r.is_error, Some(true), "{}", super::text(&r));
        skills.stop().await;
    }
    // Without the host's list the same files read (the folder is the only wall).
    let skills = Skills::start(Era::Legacy, &layout.project_args()).await;
    let (text, _, _) = skills
        .ok(
            "read_file",
            json!({"skill": "csv-summary", "path": "innocent.txt"}),
        )
        .await;
    assert_eq!(text, "KEY\n");
    skills.stop().await;
}
