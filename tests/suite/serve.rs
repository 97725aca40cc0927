//! `tern serve NAME` and the standalone binaries start and answer `--help` alike.
use std::process::Command;

#[test]
fn tern_serve_help_lists_every_builtin_server() {
    let out = Command::new(tern_e2e::bin("tern"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["fs", "shell", "web", "todo", "plan", "skills", "lsp"] {
        assert!(
            text.contains(name),
            "`tern serve --help` misses {name}: {text}"
        );
    }
}

#[test]
fn tern_serve_skills_check_reports_a_broken_skill_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join(".claude/skills");
    std::fs::create_dir_all(skills.join("good")).unwrap();
    std::fs::write(
        skills.join("good/SKILL.md"),
        "---\nname: good\ndescription: Works.\n---\nBody\n",
    )
    .unwrap();
    std::fs::create_dir_all(skills.join("bad")).unwrap();
    std::fs::write(skills.join("bad/SKILL.md"), "---\nname: bad\n---\nBody\n").unwrap();
    let out = Command::new(tern_e2e::bin("tern"))
        .args(["serve", "skills", "--check", "--project"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    let bad = skills.join("bad/SKILL.md");
    assert!(
        report.contains(&format!(
            "{}:1: error: the required field `description` is missing",
            bad.display()
        )),
        "{report}"
    );
    assert!(report.contains("- good (project,"), "{report}");
}
