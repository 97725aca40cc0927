//! Agent Skills and custom commands where users keep them (issue 19, items 2 and 3): a skill in
//! each of the six folders tern maps (the project's `.agents/skills`, `.tern/skills`,
//! `.claude/skills` once trusted; `~/.agents/skills`, `$TERN_HOME/skills`, `~/.claude/skills`)
//! is listed, the project's `.tern/commands/NAME.md` is a command and wins over its
//! `.claude/commands` namesake, and a skill's script is run with `shell__run` under the sandbox:
//! its output reaches the model and its write outside the workspace fails.

use std::path::Path;

use serde_json::json;
use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::script::AnthropicTurn;

use super::run::tool_results;

fn write_skill(dir: &Path, name: &str, description: &str) {
    let skill = dir.join(name);
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nBODY-OF-{name}\n"),
    )
    .unwrap();
}

/// `tern run` with `HOME` at `home` (so `~/.agents` and `~/.claude` are the test's).
async fn run_with_home(env: &RunEnv, home: &Path, args: &[&str]) -> std::process::Output {
    env.command(args).env("HOME", home).output().await.unwrap()
}

#[tokio::test]
async fn a_skill_in_each_of_the_six_folders_is_listed_the_projects_once_trusted() {
    let env = RunEnv::new().await;
    let home = tempfile::tempdir().unwrap();
    let project = env.dir.path();
    let places: [(&Path, &str, &str); 6] = [
        (home.path(), ".agents/skills", "home-agents"),
        (env.home.path(), "skills", "tern-home"),
        (home.path(), ".claude/skills", "home-claude"),
        (project, ".agents/skills", "project-agents"),
        (project, ".tern/skills", "project-tern"),
        (project, ".claude/skills", "project-claude"),
    ];
    for (root, dir, name) in places {
        write_skill(&root.join(dir), name, &format!("Skill from {dir}."));
    }
    std::fs::write(project.join(".tern/config.toml"), "").unwrap();

    env.answer("ok");
    assert_exit(
        &run_with_home(&env, home.path(), &["run", "which skills?"]).await,
        0,
    );
    let first = String::from_utf8_lossy(&env.server.requests()[0].body).into_owned();
    for (_, dir, name) in &places[..3] {
        assert!(first.contains(name), "{name} ({dir}) is listed: {first}");
    }
    for (_, dir, name) in &places[3..] {
        assert!(!first.contains(name), "untrusted {name} ({dir}) is listed");
    }
    assert!(!first.contains("BODY-OF-"), "no body in the listing");

    assert_exit(&run_with_home(&env, home.path(), &["trust"]).await, 0);
    env.answer("ok");
    assert_exit(
        &run_with_home(&env, home.path(), &["run", "which skills?"]).await,
        0,
    );
    let second = String::from_utf8_lossy(&env.server.requests()[1].body).into_owned();
    for (_, dir, name) in places {
        assert!(
            second.contains(name),
            "{name} ({dir}) is listed once trusted"
        );
        assert!(
            second.contains(&format!("Skill from {dir}.")),
            "{dir}'s description"
        );
    }
}

#[tokio::test]
async fn a_projects_tern_commands_file_is_a_command_and_wins_over_claude_commands() {
    let env = RunEnv::new().await;
    let home = tempfile::tempdir().unwrap();
    let project = env.dir.path();
    for (dir, text) in [
        (".tern/commands", "From .tern: deploy $1 to $2."),
        (".claude/commands", "From .claude: deploy $ARGUMENTS."),
    ] {
        std::fs::create_dir_all(project.join(dir)).unwrap();
        std::fs::write(project.join(dir).join("deploy.md"), text).unwrap();
    }
    let claude_home = home.path().join(".claude/commands");
    std::fs::create_dir_all(&claude_home).unwrap();
    std::fs::write(claude_home.join("greet.md"), "Say hello to $ARGUMENTS.").unwrap();
    std::fs::write(project.join(".tern/config.toml"), "").unwrap();
    assert_exit(&run_with_home(&env, home.path(), &["trust"]).await, 0);

    env.answer("ok");
    assert_exit(
        &run_with_home(&env, home.path(), &["run", "/deploy api staging"]).await,
        0,
    );
    env.answer("ok");
    assert_exit(
        &run_with_home(&env, home.path(), &["run", "/greet the team"]).await,
        0,
    );
    let requests = env.server.requests();
    let text = requests[0].json()["messages"][0].to_string();
    assert!(
        text.contains("From .tern: deploy api to staging."),
        "{text}"
    );
    assert!(!text.contains("From .claude"), "{text}");
    let text = requests[1].json()["messages"][0].to_string();
    assert!(
        text.contains("Say hello to the team."),
        "~/.claude/commands: {text}"
    );
}

const REPORT: &str = r#"#!/usr/bin/env bash
# Counts the rows of a CSV, then tries to keep a copy outside the workspace.
echo "report: $(wc -l < "$1") rows"
if cp "$1" "$2" 2>/dev/null; then echo "copied outside"; else echo "copy outside refused"; fi
"#;

/// The skill is in `$TERN_HOME/skills` with `$TERN_HOME` at `~/.tern` outside `/tmp`, as on a
/// real machine: the sandbox replaces the host's `/tmp`, so a `$TERN_HOME` under it would not
/// be visible to the command at all.
#[tokio::test]
async fn a_loaded_skills_script_runs_with_shell_run_under_the_sandbox() {
    let env = RunEnv::new().await;
    let target = tern_e2e::workspace_root().join("target");
    let home = tempfile::Builder::new()
        .prefix("e2e-home-")
        .tempdir_in(&target)
        .unwrap();
    let tern_home = home.path().join(".tern");
    std::fs::create_dir_all(&tern_home).unwrap();
    std::fs::copy(
        env.home.path().join("config.toml"),
        tern_home.join("config.toml"),
    )
    .unwrap();
    let skills = tern_home.join("skills");
    write_skill(&skills, "csv-report", "Summarise a CSV file.");
    let script = skills.join("csv-report/scripts/report.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, REPORT).unwrap();
    std::fs::write(env.dir.path().join("data.csv"), "a,b\n1,2\n3,4\n").unwrap();
    let outside = tempfile::Builder::new()
        .prefix("e2e-outside-")
        .tempdir_in(&target)
        .unwrap();
    let copy = outside.path().join("data-copy.csv");

    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_load", "skills__load", &[r#"{"name":"csv-report"}"#])
            .finish("tool_use"),
    );
    let command = format!("bash {} data.csv {}", script.display(), copy.display());
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_run",
                "shell__run",
                &[&json!({ "command": command }).to_string()],
            )
            .finish("tool_use"),
    );
    env.answer("3 rows.");
    let out = env
        .command(&[
            "run",
            "summarise data.csv",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .env("HOME", home.path())
        .env("TERN_HOME", &tern_home)
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let requests = env.server.requests();
    // The load told the model where the script is (the path the call then used).
    let loaded = tool_results(&requests[1]);
    assert!(
        loaded[0].1.contains(&script.display().to_string())
            && loaded[0].1.contains("BODY-OF-csv-report"),
        "{loaded:?}"
    );
    let ran = tool_results(&requests[2]);
    let (_, text, is_error) = &ran[0];
    assert!(!is_error, "{text}");
    assert!(
        text.contains("report: 3 rows"),
        "the script's output reached the model: {text}"
    );
    // The sandbox, not a rule, stopped the write: the rules let the call run.
    assert!(text.contains("copy outside refused"), "{text}");
    assert!(
        !copy.exists(),
        "the sandbox let the script write outside the workspace"
    );
}

/// A trusted project's `.tern/skills` script, called by its relative path: `.tern/` is a
/// protected location too, and the script still runs (reading it is not writing there).
#[tokio::test]
async fn a_projects_tern_skills_script_runs_by_its_relative_path() {
    let env = RunEnv::new().await;
    let project = env.dir.path();
    write_skill(&project.join(".tern/skills"), "lint", "Lint the project.");
    let script = project.join(".tern/skills/lint/lint.sh");
    std::fs::write(&script, "echo \"lint ok: $1\"\n").unwrap();
    std::fs::write(project.join(".tern/config.toml"), "").unwrap();
    assert_exit(&env.run(&["trust"]).await, 0);
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_lint",
                "shell__run",
                &[r#"{"command":"bash .tern/skills/lint/lint.sh src"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("clean");
    let out = env
        .run(&[
            "run",
            "lint",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let ran = tool_results(&env.server.requests()[1]);
    let (_, text, is_error) = &ran[0];
    assert!(!is_error && text.contains("lint ok: src"), "{text}");
    // Writing there is still refused, by the rules before the sandbox.
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_plant",
                "shell__run",
                &[r#"{"command":"cp /etc/hostname .tern/skills/lint/lint.sh"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("no");
    let out = env
        .run(&[
            "run",
            "plant",
            "--allow",
            "shell__run",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let refused = tool_results(&env.server.requests()[3]);
    assert!(refused[0].2, "{refused:?}");
    assert_eq!(
        std::fs::read_to_string(&script).unwrap(),
        "echo \"lint ok: $1\"\n"
    );
}
