//! Plugins end to end (issue 19, item 4): a plugin folder in Claude Code's layout and one in
//! Codex's, each a local git repository installed over `file://` with the real `tern plugin
//! add`, each adding a skill, a command, a hook and an MCP server (the repo's test server).
//! What they add is asserted where a person or the model meets it — `tern plugin list`,
//! `tern mcp list`, the first request to the mock model (skill listing, tool table, the
//! command's expansion, the hook's context), the hook's own marker file — and then
//! `tern plugin remove` takes all of it away again.

mod agents;
mod errors;

use std::path::{Path, PathBuf};
use std::process::Output;

use tern_e2e::run_env::{RunEnv, assert_exit};

pub(super) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(super) fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub(super) fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
}

/// A plugin named `name` in `layout` ("claude" or "codex") under `parent`, committed to a
/// fresh git repository; returns its folder.
pub(super) fn plugin_repo(parent: &Path, name: &str, layout: &str) -> PathBuf {
    let root = parent.join(name);
    let manifest = match layout {
        "claude" => (
            ".claude-plugin/plugin.json",
            serde_json::json!({
                "name": name, "version": "1.2.0", "description": "A test plugin.",
                "author": {"name": "t"}, "keywords": ["test"]
            }),
        ),
        _ => (
            ".codex-plugin/plugin.json",
            serde_json::json!({
                "name": name, "version": "0.3.0", "description": "A Codex test plugin.",
                "skills": "./skills/", "mcpServers": "./.mcp.json",
                "interface": {"displayName": "Test", "capabilities": ["Skills"]}
            }),
        ),
    };
    write(
        &root.join(manifest.0),
        &serde_json::to_string_pretty(&manifest.1).unwrap(),
    );
    write(
        &root.join(format!("skills/{name}-skill/SKILL.md")),
        &format!(
            "---\nname: {name}-skill\ndescription: Skill shipped by {name}.\n---\n\
             BODY-OF-{name}: never in the first request.\n"
        ),
    );
    write(
        &root.join(format!("commands/{name}-cmd.md")),
        &format!("---\ndescription: from {name}\n---\nCommand of {name} says $ARGUMENTS.\n"),
    );
    // A Claude Code sub-agent: the same file in both layouts (`agents/` is a default folder).
    write(
        &root.join(format!("agents/{name}-reviewer.md")),
        &format!(
            "---\nname: {name}-reviewer\ndescription: Reviews diffs for {name}.\n\
             tools: Read, Grep\nmodel: inherit\n---\n\
             REVIEWER-INSTRUCTIONS-{name}: read, never write.\n"
        ),
    );
    let hook = root.join("hooks/mark.sh");
    write(
        &hook,
        &format!(
            "#!/bin/sh\ncat > \"$CLAUDE_PROJECT_DIR/{name}-hook-input.json\"\n\
             echo \"HOOK-CONTEXT-{name} from $CLAUDE_PLUGIN_ROOT\"\n"
        ),
    );
    let mut perm = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&hook, perm).unwrap();
    write(
        &root.join("hooks/hooks.json"),
        &serde_json::json!({
            "description": "marks each prompt",
            "hooks": {"UserPromptSubmit": [{"hooks": [
                {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/hooks/mark.sh\""}
            ]}]}
        })
        .to_string(),
    );
    write(
        &root.join(".mcp.json"),
        &serde_json::json!({"mcpServers": {format!("{name}-srv"): {
            "command": tern_e2e::bin("tern-test-server").display().to_string(),
            "args": []
        }}})
        .to_string(),
    );
    git(&root, &["init", "--quiet"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "--quiet", "-m", "plugin"]);
    root
}

/// Installs, uses and removes one plugin of `layout`.
async fn install_use_and_remove(layout: &str, name: &str, version: &str) {
    let env = RunEnv::new().await;
    let repos = tempfile::tempdir().unwrap();
    let repo = plugin_repo(repos.path(), name, layout);
    let url = format!("file://{}", repo.display());

    // No terminal and no --yes: nothing is installed, and the error says how to go on.
    let out = env.run(&["plugin", "add", &url]).await;
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("{name}-srv: ")),
        "shown first"
    );
    let installed = env.home.path().join(format!("plugins/{name}@{version}"));
    assert!(!installed.exists());

    let out = env.run(&["plugin", "add", &url, "--yes"]).await;
    assert_exit(&out, 0);
    let shown = stdout(&out);
    assert!(
        shown.contains(&format!(
            "{name}-srv: {}",
            tern_e2e::bin("tern-test-server").display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "UserPromptSubmit: \"{}/hooks/mark.sh\"",
            installed.display()
        )),
        "${{CLAUDE_PLUGIN_ROOT}} is the installed folder: {shown}"
    );
    assert!(shown.contains(&format!("skills: {name}-skill")), "{shown}");
    assert!(shown.contains(&format!("commands: /{name}-cmd")), "{shown}");
    assert!(installed.join("hooks/mark.sh").is_file());
    assert!(
        !installed.join(".git").exists(),
        "the clone's .git is not kept"
    );
    let state = env.home.path().join("plugins/installed.json");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&state).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);

    let out = env.run(&["plugin", "list"]).await;
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains(&format!("{name}@{version}  enabled  from {url}")),
        "{}",
        stdout(&out)
    );

    let out = env.run(&["mcp", "list"]).await;
    assert_exit(&out, 0);
    let listed = stdout(&out);
    let row = listed
        .lines()
        .position(|l| l.starts_with(&format!("{name}-srv ")))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        listed.lines().nth(row).unwrap().contains("ready"),
        "{listed}"
    );
    assert_eq!(
        listed.lines().nth(row + 1).unwrap().trim(),
        format!("source: plugin: {name}"),
        "{listed}"
    );

    let out = env.run(&["mcp", "list", "--json"]).await;
    let statuses: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = statuses
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == format!("{name}-srv"))
        .unwrap();
    assert_eq!(status["source"], format!("plugin: {name}"));
    assert!(
        statuses
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == "fs")
            .all(|s| s.get("source").is_none()),
        "only a plugin's server has a source"
    );

    // The same doctor as any server's.
    let out = env.run(&["mcp", "doctor", &format!("{name}-srv")]).await;
    assert!(
        stdout(&out).contains(&format!("{name}-srv")),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    let out = env.run(&["hooks", "list"]).await;
    assert!(
        stdout(&out).contains(&format!("from plugin: {name}")),
        "{}",
        stdout(&out)
    );

    env.answer("done");
    let out = env
        .run(&[
            "run",
            &format!("/{name}-cmd hello"),
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let first = String::from_utf8_lossy(&env.server.requests()[0].body).into_owned();
    assert!(
        first.contains(&format!("Command of {name} says hello.")),
        "the command expands: {first}"
    );
    assert!(
        first.contains(&format!("{name}-skill")),
        "the skill is listed"
    );
    assert!(first.contains(&format!("Skill shipped by {name}.")));
    assert!(
        !first.contains(&format!("BODY-OF-{name}")),
        "only the listing"
    );
    assert!(
        first.contains(&format!("{name}-srv__echo")),
        "the server's tools are offered"
    );
    assert!(
        first.contains(&format!("HOOK-CONTEXT-{name} from {}", installed.display())),
        "the hook's stdout is context"
    );
    let hook_input = env.dir.path().join(format!("{name}-hook-input.json"));
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&hook_input).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "UserPromptSubmit");

    let out = env.run(&["plugin", "remove", name]).await;
    assert_exit(&out, 0);
    assert!(!installed.exists(), "the install folder is gone");
    let out = env.run(&["plugin", "list"]).await;
    assert!(
        stdout(&out).contains("no plugins installed"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["mcp", "list"]).await;
    assert!(
        !stdout(&out).contains(&format!("{name}-srv")),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["hooks", "list"]).await;
    assert!(!stdout(&out).contains("plugin:"), "{}", stdout(&out));
    std::fs::remove_file(&hook_input).unwrap();
    env.answer("done");
    let out = env
        .run(&[
            "run",
            &format!("/{name}-cmd hello"),
            "--output-format",
            "jsonl",
        ])
        .await;
    assert_exit(&out, 0);
    let first = String::from_utf8_lossy(&env.server.requests()[1].body).into_owned();
    assert!(
        !first.contains(&format!("Command of {name}")),
        "no command any more"
    );
    assert!(
        !first.contains(&format!("{name}-skill")),
        "no skill any more"
    );
    assert!(
        !first.contains(&format!("{name}-srv__")),
        "no server any more"
    );
    assert!(!hook_input.exists(), "no hook any more");
}

#[tokio::test]
async fn a_claude_code_layout_plugin_from_a_git_repo_adds_all_its_parts_and_removes_cleanly() {
    install_use_and_remove("claude", "cc-demo", "1.2.0").await;
}

#[tokio::test]
async fn a_codex_layout_plugin_from_a_git_repo_adds_all_its_parts_and_removes_cleanly() {
    install_use_and_remove("codex", "cx-demo", "0.3.0").await;
}

/// A marketplace lists plugins by name; `MARKETPLACE/PLUGIN` installs one, `update` fetches it
/// again (a new version replaces the old folder).
#[tokio::test]
async fn a_marketplace_plugin_installs_by_name_and_updates() {
    let env = RunEnv::new().await;
    let market = tempfile::tempdir().unwrap();
    write(
        &market.path().join(".claude-plugin/marketplace.json"),
        &serde_json::json!({
            "name": "team-tools", "owner": {"name": "t"},
            "plugins": [{"name": "greeter", "source": "./plugins/greeter", "description": "Says hi."}]
        })
        .to_string(),
    );
    let plugin = market.path().join("plugins/greeter");
    write(
        &plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "greeter", "version": "1.0.0"}"#,
    );
    write(&plugin.join("commands/hi.md"), "Say hi to $ARGUMENTS.");

    let out = env
        .run(&[
            "plugin",
            "marketplace",
            "add",
            market.path().to_str().unwrap(),
        ])
        .await;
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("added marketplace team-tools with 1 plugin(s): greeter"),
        "{}",
        stdout(&out)
    );
    let out = env.run(&["plugin", "marketplace", "list"]).await;
    assert!(
        stdout(&out).contains("team-tools/greeter  Says hi."),
        "{}",
        stdout(&out)
    );
    let out = env
        .run(&["plugin", "add", "team-tools/nobody", "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out)
            .contains("marketplace `team-tools` has no plugin `nobody` (it lists: greeter)"),
        "{}",
        stderr(&out)
    );

    assert_exit(
        &env.run(&["plugin", "add", "team-tools/greeter", "--yes"])
            .await,
        0,
    );
    assert!(
        env.home
            .path()
            .join("plugins/greeter@1.0.0/commands/hi.md")
            .is_file()
    );

    write(
        &plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "greeter", "version": "1.1.0"}"#,
    );
    let out = env.run(&["plugin", "update", "greeter", "--yes"]).await;
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("1.0.0 → 1.1.0"), "{}", stdout(&out));
    assert!(!env.home.path().join("plugins/greeter@1.0.0").exists());
    assert!(
        env.home
            .path()
            .join("plugins/greeter@1.1.0/commands/hi.md")
            .is_file()
    );

    // Disabled: installed, but its command is not one.
    assert_exit(&env.run(&["plugin", "disable", "greeter"]).await, 0);
    env.answer("ok");
    assert_exit(
        &env.run(&["run", "/hi Ann", "--output-format", "jsonl"])
            .await,
        0,
    );
    let first = String::from_utf8_lossy(&env.server.requests()[0].body).into_owned();
    assert!(!first.contains("Say hi to Ann."), "{first}");
    assert_exit(&env.run(&["plugin", "enable", "greeter", "--yes"]).await, 0);
    env.answer("ok");
    assert_exit(
        &env.run(&["run", "/hi Ann", "--output-format", "jsonl"])
            .await,
        0,
    );
    let second = String::from_utf8_lossy(&env.server.requests()[1].body).into_owned();
    assert!(second.contains("Say hi to Ann."), "{second}");
}

/// On a terminal `add` asks after showing what the plugin adds; `n` installs nothing, `y`
/// installs and enables it.
#[tokio::test]
async fn on_a_terminal_add_asks_before_enabling() {
    let env = RunEnv::new().await;
    let work = tempfile::tempdir().unwrap();
    let plugin = work.path().join("asker");
    write(
        &plugin.join(".claude-plugin/plugin.json"),
        r#"{"name": "asker", "version": "0.1.0"}"#,
    );
    write(
        &plugin.join("hooks/hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo stop-hook"}]}]}}"#,
    );
    let path = plugin.to_str().unwrap();
    let script = serde_json::json!([
        {"expect": "Stop: echo stop-hook"},
        {"expect": "Enable plugin asker? [y/N]"},
        {"send": "n\r"},
        {"expect": "you declined"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["plugin", "add", path]).await;
    assert_eq!(report["status"], 2, "{}", report["output"]);
    assert!(!env.home.path().join("plugins/asker@0.1.0").exists());

    let script = serde_json::json!([
        {"expect": "Enable plugin asker? [y/N]"},
        {"send": "y\r"},
        {"expect": "installed and enabled plugin asker@0.1.0"},
    ]);
    let report = super::repl::drive_with(&env, &script, &["plugin", "add", path]).await;
    assert_eq!(report["status"], 0, "{}", report["output"]);
    assert!(env.home.path().join("plugins/asker@0.1.0").is_dir());
}
