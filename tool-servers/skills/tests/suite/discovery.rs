//! Finding skills: listed by name and description only (instructions and `load`'s
//! description), every location searched, project over user, broken skills reported and
//! skipped, nothing at all when there is no skill.

use std::ffi::OsString;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{ERAS, Era, Layout, Skills, put_skill};

const DESCRIPTION_START: &str = "Summarize CSV files";
/// A line of the fixture's body: must never appear before `load`.
const BODY_LINE: &str = "A column is numeric when every non-empty cell parses";

#[tokio::test]
async fn a_published_skill_is_offered_by_name_and_description_only_in_both_eras() {
    let layout = Layout::new();
    for era in ERAS {
        let skills = Skills::start(era, &layout.project_args()).await;
        let instructions = skills.instructions().expect("instructions list the skills");
        assert!(
            instructions.contains("<name>csv-summary</name>"),
            "{instructions}"
        );
        assert!(instructions.contains(DESCRIPTION_START), "{instructions}");
        assert!(
            !instructions.contains(BODY_LINE),
            "the body is absent: {instructions}"
        );
        assert!(!instructions.contains("python3 scripts"), "{instructions}");

        let load = skills.tool("load").await;
        let description = load.description.as_deref().unwrap_or_default();
        assert!(
            description.contains("<name>csv-summary</name>"),
            "{description}"
        );
        assert!(description.contains(DESCRIPTION_START), "{description}");
        assert!(!description.contains(BODY_LINE), "{description}");
        let schema = Value::Object((*load.input_schema).clone());
        assert_eq!(
            schema["properties"]["name"]["enum"],
            json!(["csv-summary"]),
            "{schema}"
        );
        for tool in skills.tools().await {
            let a = tool.annotations.unwrap();
            assert_eq!(a.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(a.destructive_hint, Some(false), "{}", tool.name);
            assert_eq!(a.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.output_schema.is_some(), "{}", tool.name);
        }
        skills.stop().await;
    }

    // `--listing instructions`: the definition of `load` does not depend on the skills.
    let mut args = layout.project_args();
    args.extend(["--listing".into(), "instructions".into()]);
    let skills = Skills::start(Era::Legacy, &args).await;
    assert!(
        skills
            .instructions()
            .unwrap()
            .contains("<name>csv-summary</name>")
    );
    let load = skills.tool("load").await;
    let description = load.description.as_deref().unwrap_or_default();
    assert!(!description.contains("csv-summary"), "{description}");
    assert!(
        description.contains("listed in this server's instructions"),
        "{description}"
    );
    let schema = Value::Object((*load.input_schema).clone());
    assert!(
        schema["properties"]["name"].get("enum").is_none(),
        "{schema}"
    );
    skills.stop().await;
}

#[tokio::test]
async fn every_location_is_searched_and_the_project_wins_a_collision() {
    let layout = Layout::new();
    let user_agents = layout.base.join("home/.agents/skills");
    let tern_home = layout.base.join("home/.tern/skills");
    let user_claude = layout.base.join("home/.claude/skills");
    put_skill(
        &layout.project.join(".tern/skills"),
        "tern-local",
        "name: tern-local\ndescription: From the project's .tern folder.\n",
        "T\n",
    );
    put_skill(
        &layout.project.join(".claude/skills"),
        "claude-local",
        "name: claude-local\ndescription: From the project's .claude folder.\n",
        "C\n",
    );
    put_skill(
        &user_agents,
        "user-agents",
        "name: user-agents\ndescription: From ~/.agents.\n",
        "U\n",
    );
    put_skill(
        &tern_home,
        "user-tern",
        "name: user-tern\ndescription: From TERN_HOME.\n",
        "U\n",
    );
    put_skill(
        &user_claude,
        "user-claude",
        "name: user-claude\ndescription: From ~/.claude.\n",
        "U\n",
    );
    // The user has a csv-summary of their own: the project's wins.
    put_skill(
        &user_claude,
        "csv-summary",
        "name: csv-summary\ndescription: The user's own copy.\n",
        "U\n",
    );
    // Collections group skills by topic: one level down is found too.
    put_skill(
        &user_agents.join("writing"),
        "changelog",
        "name: changelog\ndescription: Grouped under a topic folder.\n",
        "U\n",
    );
    // A skill that only the user may start is not offered to the model.
    put_skill(
        &tern_home,
        "deploy",
        "name: deploy\ndescription: Deploys production.\ndisable-model-invocation: true\n",
        "D\n",
    );

    let mut args = layout.project_args();
    for dir in [&user_agents, &tern_home, &user_claude] {
        args.push("--user-dir".into());
        args.push(dir.into());
    }
    let skills = Skills::start(Era::Legacy, &args).await;
    let (text, report, _) = skills.ok("list", json!({})).await;
    let names: Vec<&str> = report["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "changelog",
            "claude-local",
            "csv-summary",
            "deploy",
            "tern-local",
            "user-agents",
            "user-claude",
            "user-tern"
        ],
        "{text}"
    );
    let csv = report["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "csv-summary")
        .unwrap();
    assert_eq!(csv["scope"], "project", "{report}");
    assert_eq!(csv["directory"], layout.skill_dir().to_str().unwrap());
    let shadowed = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["message"].as_str().unwrap().contains("shadowed"))
        .expect("the shadowed copy is reported");
    assert_eq!(shadowed["severity"], "warning");
    assert_eq!(
        shadowed["file"],
        user_claude.join("csv-summary/SKILL.md").to_str().unwrap()
    );
    assert_eq!(report["searched"].as_array().unwrap().len(), 6, "{report}");
    assert_eq!(report["searched"][0]["scope"], "project");
    assert_eq!(report["searched"][5]["scope"], "user");

    let instructions = skills.instructions().unwrap();
    assert!(
        !instructions.contains("<name>deploy</name>"),
        "{instructions}"
    );
    assert!(
        instructions.contains("<name>user-tern</name>"),
        "{instructions}"
    );
    assert!(
        !instructions.contains("The user's own copy"),
        "{instructions}"
    );
    assert!(
        text.contains("deploy (user,") && text.contains("only the user may start it"),
        "{text}"
    );
    skills.stop().await;
}

#[tokio::test]
async fn a_broken_skill_is_reported_with_file_and_line_and_the_others_still_load() {
    let layout = Layout::new();
    let skills_dir = layout.project.join(".agents/skills");
    let unclosed = put_skill(
        &skills_dir,
        "unclosed",
        "name: unclosed\ndescription: \"never closed\n",
        "B\n",
    );
    let nameless = put_skill(
        &skills_dir,
        "nameless",
        "description: No name here.\n",
        "B\n",
    );
    let mismatch = put_skill(
        &skills_dir,
        "folder-name",
        "name: other-name\ndescription: Loads, with a warning.\n",
        "B\n",
    );
    std::fs::create_dir_all(skills_dir.join("no-frontmatter")).unwrap();
    std::fs::write(
        skills_dir.join("no-frontmatter/SKILL.md"),
        "# Just markdown\n",
    )
    .unwrap();

    for era in ERAS {
        let skills = Skills::start(era, &layout.project_args()).await;
        let (text, report, _) = skills.ok("list", json!({})).await;
        let problems = report["problems"].as_array().unwrap();
        let find = |file: &std::path::Path| {
            problems
                .iter()
                .find(|p| p["file"] == file.join("SKILL.md").to_str().unwrap())
                .unwrap_or_else(|| panic!("{} not reported: {report}", file.display()))
                .clone()
        };
        let p = find(&unclosed);
        assert_eq!(
            (p["severity"].as_str(), p["line"].as_u64()),
            (Some("error"), Some(3)),
            "{p}"
        );
        assert!(
            p["message"].as_str().unwrap().contains("invalid YAML"),
            "{p}"
        );
        let p = find(&nameless);
        assert!(
            p["message"].as_str().unwrap().contains("`name` is missing"),
            "{p}"
        );
        let p = find(&skills_dir.join("no-frontmatter"));
        assert_eq!(p["line"], 1, "{p}");
        let p = find(&mismatch);
        assert_eq!(
            (p["severity"].as_str(), p["line"].as_u64()),
            (Some("warning"), Some(2)),
            "{p}"
        );
        assert!(text.contains(":3: error: invalid YAML"), "{text}");

        let names: Vec<&str> = report["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["csv-summary", "other-name"], "{report}");
        let (_, loaded, _) = skills.ok("load", json!({"name": "csv-summary"})).await;
        assert_eq!(loaded["name"], "csv-summary");
        skills.stop().await;
    }

    // `--check` prints the same report and exits 1 because a skill was skipped.
    let out = Command::new(env!("CARGO_BIN_EXE_tern-skills"))
        .args(layout.project_args())
        .arg("--check")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    let want = format!(
        "{}:3: error: invalid YAML",
        unclosed.join("SKILL.md").display()
    );
    assert!(report.contains(&want), "{report}");
    std::fs::remove_dir_all(&unclosed).unwrap();
    std::fs::remove_dir_all(&nameless).unwrap();
    std::fs::remove_dir_all(skills_dir.join("no-frontmatter")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern-skills"))
        .args(layout.project_args())
        .arg("--check")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "only warnings left: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[tokio::test]
async fn no_skill_means_no_tool_and_no_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec![
        "--project".into(),
        dir.path().into(),
        "--user-dir".into(),
        dir.path().join("missing").into(),
    ];
    for era in ERAS {
        let skills = Skills::start(era, &args).await;
        assert_eq!(skills.instructions(), None);
        assert!(skills.tools().await.is_empty());
        skills.stop().await;
    }
    // Not even a folder: still a working server with nothing to offer.
    let skills = Skills::start(Era::Legacy, &[]).await;
    assert!(skills.tools().await.is_empty());
    skills.stop().await;
    // Only broken skills: `list` is left, to say why.
    put_skill(
        &dir.path().join(".claude/skills"),
        "bad",
        "name: bad\n",
        "B\n",
    );
    let skills = Skills::start(Era::Legacy, &args).await;
    let names: Vec<String> = skills
        .tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["list"]);
    let (text, _, _) = skills.ok("list", json!({})).await;
    assert!(text.contains("`description` is missing"), "{text}");
    skills.stop().await;
}
