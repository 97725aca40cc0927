//! `load`: the body, the skill's absolute folder, its files, and a script the model can run
//! by the path it was given.

use std::process::Command;

use serde_json::json;

use super::{ERAS, Era, Layout, Skills};

#[tokio::test]
async fn load_returns_the_body_the_folder_and_the_files_in_both_eras() {
    let layout = Layout::new();
    let dir = layout.skill_dir();
    let dir_s = dir.to_str().unwrap();
    for era in ERAS {
        let skills = Skills::start(era, &layout.project_args()).await;
        let (text, loaded, result) = skills.ok("load", json!({"name": "csv-summary"})).await;
        assert!(
            text.starts_with("<skill_content name=\"csv-summary\">\n# CSV summary"),
            "{text}"
        );
        assert!(
            text.contains("A column is numeric when every non-empty cell parses"),
            "{text}"
        );
        assert!(
            !text.contains("allowed-tools:"),
            "the frontmatter is not repeated: {text}"
        );
        assert!(
            text.contains(&format!("Skill directory: {dir_s}\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!("`{dir_s}/scripts/summarize.py`")),
            "{text}"
        );
        assert!(text.contains("<file>reference.md</file>"), "{text}");
        assert!(text.contains("Requires python3"), "{text}");
        assert!(text.ends_with("</skill_content>"), "{text}");

        assert_eq!(loaded["directory"], dir_s);
        assert_eq!(
            loaded["files"],
            json!(["LICENSE.txt", "reference.md", "scripts/summarize.py"]),
            "SKILL.md itself is the body, not a resource"
        );
        assert_eq!(loaded["files_truncated"], false);
        assert_eq!(loaded["allowed_tools"], json!(["Bash(python3:*)", "Read"]));
        assert_eq!(loaded["license"], "MIT. LICENSE.txt has the complete terms");
        assert_eq!(
            loaded["metadata"],
            json!({"author": "tern-tests", "version": "1.0"})
        );
        let meta = result.meta.unwrap();
        assert_eq!(
            meta.get(tern_skills::SKILL_META).unwrap(),
            &json!({"name": "csv-summary", "directory": dir_s, "allowed_tools": ["Bash(python3:*)", "Read"]})
        );
        skills.stop().await;
    }

    // The model runs the script with a shell tool by the absolute path it was given.
    let csv = layout.base.join("temps.csv");
    std::fs::write(&csv, "city,temp\nOslo,3\nRome,15\nOslo,6\n").unwrap();
    let out = Command::new("python3")
        .arg(format!("{dir_s}/scripts/summarize.py"))
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "rows=3\ncity: text distinct=2\ntemp: numeric min=3 max=15 mean=8\n"
    );
}

#[tokio::test]
async fn an_unknown_name_and_a_skill_broken_after_startup_are_clear_errors() {
    let layout = Layout::new();
    // Listing in the instructions only, so `name` has no enum and any name reaches the server.
    let mut args = layout.project_args();
    args.extend(["--listing".into(), "instructions".into()]);
    let skills = Skills::start(Era::Legacy, &args).await;
    let text = skills.refused("load", json!({"name": "pdf"})).await;
    assert_eq!(
        text,
        "There is no skill named `pdf`. The skills are: csv-summary."
    );
    let text = skills
        .refused("read_file", json!({"skill": "pdf", "path": "x"}))
        .await;
    assert!(text.contains("no skill named `pdf`"), "{text}");

    let skill_md = layout.skill_dir().join("SKILL.md");
    std::fs::write(
        &skill_md,
        "---\nname: csv-summary\n---\nNo description now.\n",
    )
    .unwrap();
    let text = skills.refused("load", json!({"name": "csv-summary"})).await;
    assert!(text.contains("changed and is now invalid"), "{text}");
    assert!(text.contains("`description` is missing"), "{text}");
    assert!(text.contains(skill_md.to_str().unwrap()), "{text}");
    skills.stop().await;
}
