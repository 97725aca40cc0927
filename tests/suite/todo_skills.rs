//! The todo and skills servers as tern runs them by default: both start with every run, the
//! model gets `todo__write`/`todo__read` (and no skills tool while there is no skill), and a
//! todo update needs no approval in the default mode.

use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

#[tokio::test]
async fn the_todo_server_is_on_by_default_and_updating_the_list_needs_no_approval() {
    let env = RunEnv::new().await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_todo",
                "todo__write",
                &[
                    r#"{"todos":[{"id":"1","text":"Read the code","status":"in_progress"},"#,
                    r#"{"id":"2","text":"Fix it","status":"pending"}]}"#,
                ],
            )
            .finish("tool_use"),
    );
    env.answer("Planned.");
    let out = env
        .run(&["run", "plan the fix", "--output-format", "jsonl"])
        .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.requests();
    let tools: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.contains(&"todo__write".to_string()), "{tools:?}");
    assert!(tools.contains(&"todo__read".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("skills__")),
        "no skill, no tool: {tools:?}"
    );
    let results = super::run::tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    let (id, text, is_error) = &results[0];
    assert_eq!(id, "toolu_todo");
    assert!(!is_error, "the default mode let the update through: {text}");
    assert!(
        text.contains("- [>] 1: Read the code (in progress)"),
        "{text}"
    );
    assert!(text.contains("- [ ] 2: Fix it"), "{text}");
}

fn write_skill(dir: &std::path::Path, name: &str, description: &str, body: &str) {
    let skill = dir.join(name);
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .unwrap();
    std::fs::write(skill.join("scripts/run.sh"), "echo skill-script-ran\n").unwrap();
}

/// The host points the skills server at the user's folders and, once trusted, the project's
/// (issue 19, item 2): a skill in `$TERN_HOME/skills` is offered by name and description only
/// (its body is not in the first request) and loaded on demand; a project's `.claude/skills`
/// counts only after `tern trust`.
#[tokio::test]
async fn skills_are_found_in_the_user_folders_and_a_trusted_projects_and_load_on_demand() {
    let env = RunEnv::new().await;
    write_skill(
        &env.home.path().join("skills"),
        "release-notes",
        "Write release notes from the git log.",
        "SECRET-BODY-MARKER: group commits by type.",
    );
    write_skill(
        &env.dir.path().join(".claude/skills"),
        "project-style",
        "The project's code style.",
        "Tabs, not spaces.",
    );
    std::fs::create_dir_all(env.dir.path().join(".tern")).unwrap();
    std::fs::write(env.dir.path().join(".tern/config.toml"), "").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_s", "skills__load", &[r#"{"name":"release-notes"}"#])
            .finish("tool_use"),
    );
    env.answer("Loaded.");
    let out = env
        .run(&["run", "write the notes", "--output-format", "jsonl"])
        .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.requests();
    let first = String::from_utf8_lossy(&requests[0].body).into_owned();
    assert!(first.contains("release-notes"), "the skill is listed");
    assert!(first.contains("Write release notes from the git log."));
    assert!(
        !first.contains("SECRET-BODY-MARKER"),
        "the body is not in the first request"
    );
    assert!(
        !first.contains("project-style"),
        "an untrusted project's skill is not offered"
    );
    let results = super::run::tool_results(&requests[1]);
    assert!(results[0].1.contains("SECRET-BODY-MARKER"), "{results:?}");
    assert!(results[0].1.contains("scripts/run.sh"), "{results:?}");

    let trust = env.run(&["trust"]).await;
    assert_eq!(trust.status.code(), Some(0));
    env.answer("ok");
    let out = env
        .run(&["run", "style?", "--output-format", "jsonl"])
        .await;
    assert_eq!(out.status.code(), Some(0));
    let requests = env.server.requests();
    assert!(
        String::from_utf8_lossy(&requests[2].body).contains("project-style"),
        "a trusted project's skill is offered"
    );
}

/// `/skills` in the REPL: each skill with its source, and a broken one with what is wrong, from
/// the skills server's `list` (a read-only call through the gateway; nothing reaches the model).
#[tokio::test]
async fn slash_skills_lists_each_skill_with_its_source_and_the_broken_ones() {
    let env = RunEnv::new().await;
    let dir = env.home.path().join("skills");
    write_skill(&dir, "release-notes", "Write release notes.", "Body.");
    std::fs::create_dir_all(dir.join("broken")).unwrap();
    std::fs::write(
        dir.join("broken/SKILL.md"),
        "---\nname: broken\n---\nBody\n",
    )
    .unwrap();
    let script = serde_json::json!([
        {"expect": "tern> "},
        {"send": "/skills\r"},
        {"expect": "release-notes"},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    let report = super::repl::drive_with(&env, &script, &[]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    let output = report["output"].to_string();
    assert!(
        output.contains("broken"),
        "the broken skill is reported: {output}"
    );
    assert!(
        env.server.requests().is_empty(),
        "nothing reached the model"
    );
}

/// `[skills] honor_allowed_tools` (issue 19, item 2): once the model loads a skill whose
/// `allowed-tools` is `Read Bash(echo:*)`, a shell call outside that list is denied naming the
/// skill — though `--allow shell__run` would let it run — and one inside still runs. Off (the
/// default), the same calls both run: the list never narrows, and never widens either way.
#[tokio::test]
async fn a_loaded_skills_allowed_tools_narrow_the_turn_only_when_the_user_opts_in() {
    for honor in [true, false] {
        let env = RunEnv::new().await;
        let skills = env.home.path().join("skills/echo-only");
        std::fs::create_dir_all(&skills).unwrap();
        std::fs::write(
            skills.join("SKILL.md"),
            "---\nname: echo-only\ndescription: Say things, touch nothing.\n\
             allowed-tools: Read Bash(echo:*)\n---\nOnly echo.\n",
        )
        .unwrap();
        let call = |id: &str, tool: &str, args: &str| {
            AnthropicTurn::new()
                .tool_use(id, tool, &[args])
                .finish("tool_use")
        };
        env.server
            .enqueue(call("s1", "skills__load", r#"{"name":"echo-only"}"#));
        env.server.enqueue(call(
            "c1",
            "shell__run",
            r#"{"command":"touch outside.txt"}"#,
        ));
        env.server
            .enqueue(call("c2", "shell__run", r#"{"command":"echo inside"}"#));
        env.answer("Done.");
        let flag = format!("skills.honor_allowed_tools={honor}");
        let out = env
            .run(&["-c", &flag, "run", "use the skill", "--allow", "shell__run"])
            .await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let requests = env.server.requests();
        let outside = super::run::tool_results(&requests[2]);
        let inside = super::run::tool_results(&requests[3]);
        assert!(!inside[0].2, "inside the list: {inside:?}");
        assert!(inside[0].1.contains("inside"), "{inside:?}");
        if honor {
            assert!(!env.dir.path().join("outside.txt").exists());
            let (_, text, is_error) = &outside[0];
            assert!(*is_error, "{text}");
            assert!(
                text.contains("the skill `echo-only` is active")
                    && text.contains("Read Bash(echo:*)"),
                "{text}"
            );
            let decided = tern_e2e::run_env::of_type(&env.events(), "permission_decided")
                .into_iter()
                .find(|d| d["call_id"] == "c1")
                .cloned()
                .unwrap();
            assert_eq!(decided["rule"], "skill:echo-only", "{decided}");
        } else {
            assert!(env.dir.path().join("outside.txt").is_file());
            assert!(!outside[0].2, "{outside:?}");
        }
    }
}
