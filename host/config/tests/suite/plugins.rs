//! An enabled plugin is a config layer (issue 19, item 4): its servers and hooks are sourced
//! `plugin: NAME`, `${CLAUDE_PLUGIN_ROOT}` is its folder, its folders reach the extension
//! dirs; a disabled one adds nothing; a server name an earlier layer defines is a clash.

use std::path::{Path, PathBuf};

use tern_config::{
    HookEvent, InstalledPlugin, LayerKind, LoadOptions, PluginSource, PluginState,
    read_marketplace, read_plugin,
};

use super::Fixture;

/// A Codex-layout plugin whose manifest names its parts, hooks inline.
fn codex_plugin(fx: &Fixture) -> PathBuf {
    fx.write(
        "home/.tern/plugins/tools@2.0.0/.codex-plugin/plugin.json",
        r#"{
  "name": "tools", "version": "2.0.0",
  "skills": "./skills/", "mcpServers": "./.mcp.json",
  "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [
    {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh", "timeout": 5}]}]},
  "interface": {"displayName": "Tools"}
}"#,
    );
    fx.write(
        "home/.tern/plugins/tools@2.0.0/.mcp.json",
        r#"{"mcpServers": {"tools-srv": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"]}}}"#,
    );
    fx.write(
        "home/.tern/plugins/tools@2.0.0/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: x\n---\n",
    );
    fx.write("home/.tern/plugins/tools@2.0.0/commands/fmt.md", "Format.");
    fx.home.join("plugins/tools@2.0.0")
}

fn record(fx: &Fixture, dir: &Path, enabled: bool) {
    let mut state = PluginState::default();
    state.plugins.insert(
        "tools".into(),
        InstalledPlugin {
            version: "2.0.0".into(),
            dir: dir.to_path_buf(),
            source: "/somewhere".into(),
            enabled,
        },
    );
    fx.write("home/.tern/plugins/installed.json", &state.to_json());
}

#[test]
fn an_enabled_plugin_adds_its_servers_hooks_skills_and_commands_as_a_layer() {
    let fx = Fixture::new();
    let dir = codex_plugin(&fx);
    record(&fx, &dir, true);
    let config = fx.load(&LoadOptions::default()).unwrap();
    let server = &config.mcp_servers["tools-srv"];
    assert_eq!(server.defined_at.file, Path::new("plugin: tools"));
    let tern_config::Transport::Stdio {
        launch, args, env, ..
    } = &server.transport
    else {
        panic!("{server:?}")
    };
    assert_eq!(env["CLAUDE_PLUGIN_ROOT"], dir.display().to_string());
    assert_eq!(
        launch,
        &tern_config::Launch::Command(dir.join("bin/srv").display().to_string())
    );
    assert_eq!(args, &["--root".to_string(), dir.display().to_string()]);
    let hook = config.hooks.of(HookEvent::PostToolUse).next().unwrap();
    assert_eq!(hook.command, format!("{}/fmt.sh", dir.display()));
    assert_eq!(hook.timeout.as_secs(), 5);
    assert_eq!(
        hook.env,
        [("CLAUDE_PLUGIN_ROOT".to_string(), dir.display().to_string())]
    );
    assert!(
        hook.source().starts_with("plugin: tools:"),
        "{}",
        hook.source()
    );
    assert!(
        config
            .extension_dirs
            .user_skill_dirs()
            .contains(&dir.join("skills"))
    );
    assert!(
        config
            .extension_dirs
            .command_dirs()
            .contains(&(dir.join("commands"), "plugin: tools".to_string()))
    );
    assert!(
        config
            .layers
            .iter()
            .any(|l| l.kind == LayerKind::Plugin && l.path == Path::new("plugin: tools"))
    );
    assert_eq!(config.plugins[0].name, "tools");

    // Disabled: none of it.
    record(&fx, &dir, false);
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert!(!config.mcp_servers.contains_key("tools-srv"));
    assert!(config.hooks.is_empty());
    assert!(config.plugins.is_empty());
    assert!(
        !config
            .extension_dirs
            .user_skill_dirs()
            .contains(&dir.join("skills"))
    );
}

#[test]
fn a_plugin_server_clashing_with_a_configured_one_is_an_error_but_switching_it_off_is_not() {
    let fx = Fixture::new();
    let dir = codex_plugin(&fx);
    record(&fx, &dir, true);
    fx.user_config("[mcp_servers.tools-srv]\ncommand = \"mine\"\n");
    let err = fx.load(&LoadOptions::default()).unwrap_err().to_string();
    assert!(err.contains("plugin tools:"), "{err}");
    assert!(err.contains("`tools-srv` clashes"), "{err}");
    assert!(err.contains("hint: `tern plugin update tools`"), "{err}");

    fx.user_config("[mcp_servers.tools-srv]\nenabled = false\n");
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert!(!config.mcp_servers["tools-srv"].enabled);
}

#[test]
fn manifest_paths_must_stay_inside_the_plugin_and_exist() {
    let fx = Fixture::new();
    let dir = fx.root.join("p");
    fx.write(
        "p/.claude-plugin/plugin.json",
        r#"{"name": "p", "skills": "../elsewhere"}"#,
    );
    let err = read_plugin(&dir, &dir).unwrap_err().to_string();
    assert!(err.contains("must stay inside the plugin folder"), "{err}");
    fx.write(
        "p/.claude-plugin/plugin.json",
        r#"{"name": "p", "commands": ["./nope"]}"#,
    );
    let err = read_plugin(&dir, &dir).unwrap_err().to_string();
    assert!(err.contains("\"./nope\", which does not exist"), "{err}");
    fx.write("p/.claude-plugin/plugin.json", r#"{"name": "../p"}"#);
    let err = read_plugin(&dir, &dir).unwrap_err().to_string();
    assert!(err.contains("may only use letters"), "{err}");
    fx.write("p/.claude-plugin/plugin.json", r#"{"version": "1.0.0"}"#);
    let err = read_plugin(&dir, &dir).unwrap_err().to_string();
    assert!(err.contains("no `name`"), "{err}");
}

#[test]
fn marketplace_sources_resolve_to_folders_or_git_urls() {
    let fx = Fixture::new();
    fx.write(
        "m/.claude-plugin/marketplace.json",
        r#"{"name": "m", "owner": {"name": "o"}, "metadata": {"pluginRoot": "./plugins"},
            "plugins": [
              {"name": "a", "source": "a"},
              {"name": "b", "source": {"source": "github", "repo": "org/b"}},
              {"name": "c", "source": {"source": "url", "url": "https://git.example/c.git"}}
            ]}"#,
    );
    let m = read_marketplace(&fx.root.join("m")).unwrap();
    assert_eq!(
        m.entry("a").unwrap().source,
        PluginSource::Path(fx.root.join("m/plugins/a"))
    );
    assert_eq!(
        m.entry("b").unwrap().source,
        PluginSource::Git("https://github.com/org/b.git".into())
    );
    assert_eq!(
        m.entry("c").unwrap().source,
        PluginSource::Git("https://git.example/c.git".into())
    );
    // Codex's marketplace file and its `local` entries.
    fx.write(
        "cx/.agents/plugins/marketplace.json",
        r#"{"name": "cx", "plugins": [{"name": "y", "source": {"source": "local", "path": "./plugins/y"}}]}"#,
    );
    let cx = read_marketplace(&fx.root.join("cx")).unwrap();
    assert_eq!(
        cx.entry("y").unwrap().source,
        PluginSource::Path(fx.root.join("cx/plugins/y"))
    );
    fx.write(
        "m/.claude-plugin/marketplace.json",
        r#"{"name": "m", "plugins": [{"name": "x", "source": {"source": "npm", "package": "x"}}]}"#,
    );
    let err = read_marketplace(&fx.root.join("m"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("source kind Some(\"npm\") is not supported"),
        "{err}"
    );
    fx.write(
        "m/.claude-plugin/marketplace.json",
        r#"{"name": "m", "plugins": [{"name": "x", "source": "../../etc"}]}"#,
    );
    let err = read_marketplace(&fx.root.join("m"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("must stay inside the marketplace"), "{err}");
}

/// A plugin's `agents/*.md` are profiles of its layer (disabled: gone); a name a profile
/// already has (tern's shipped `explore`) is a clash; a broken agent file names its line.
#[test]
fn a_plugins_agents_are_profiles_and_a_clash_or_a_broken_file_is_an_error() {
    let fx = Fixture::new();
    let dir = codex_plugin(&fx);
    fx.write(
        "home/.tern/plugins/tools@2.0.0/agents/checker.md",
        "---\nname: checker\ndescription: Checks things.\ntools: Read, Glob\n---\nCheck.\n",
    );
    record(&fx, &dir, true);
    let config = fx.load(&LoadOptions::default()).unwrap();
    let profile = &config.agents["checker"];
    assert_eq!(profile.description, "Checks things.");
    assert_eq!(profile.instructions.as_deref(), Some("Check."));
    assert_eq!(
        profile.tools.as_deref(),
        Some(&["fs__read_file".to_string(), "fs__glob".to_string()][..])
    );
    assert_eq!(profile.defined_at.file, Path::new("plugin: tools"));
    assert!(config.agents.contains_key("explore"), "shipped ones stay");

    record(&fx, &dir, false);
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert!(
        !config.agents.contains_key("checker"),
        "disabled: no profile"
    );

    record(&fx, &dir, true);
    fx.write(
        "home/.tern/plugins/tools@2.0.0/agents/explore.md",
        "---\nname: explore\ndescription: Mine.\n---\n",
    );
    let err = fx.load(&LoadOptions::default()).unwrap_err().to_string();
    assert!(err.contains("its agent `explore` clashes"), "{err}");
    std::fs::remove_file(dir.join("agents/explore.md")).unwrap();

    fx.write(
        "home/.tern/plugins/tools@2.0.0/agents/broken.md",
        "---\nname: broken\ndescription: x\nmaxTurns: lots\n---\n",
    );
    let err = fx.load(&LoadOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("agents/broken.md:4: `maxTurns` must be a whole number"),
        "{err}"
    );
    let contents = read_plugin(&dir, &dir).unwrap_err().to_string();
    assert!(contents.contains("broken.md:4:"), "{contents}");
}
