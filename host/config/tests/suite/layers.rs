//! Layer precedence: defaults < user < trusted project < --config < -c < flags.

use std::path::PathBuf;
use std::time::Duration;

use tern_config::{
    Builtin, DEFAULTS_SOURCE, Launch, LayerKind, LoadOptions, PermissionMode, RuleList, RuleSource,
    Transport,
};

use super::Fixture;

const USER: &str = r#"[model]
name = "user-model"
max_tokens = 100

[mcp_servers.fs]
args = ["--root", "/u"]
tool_timeout_sec = 5
"#;

const PROJECT: &str = r#"[model]
name = "project-model"

[mcp_servers.fs]
startup_timeout_sec = 3

[mcp_servers.fs.tools.read_file]
max_output_chars = 10
"#;

const FLAG_FILE: &str = r#"[model]
name = "flag-model"

[agent]
max_steps = 7

[mcp_servers.fs.tools.read_file]
timeout_sec = 1
"#;

/// Each layer overrides the one below it, key by key; removing the top layer exposes the next.
#[test]
fn later_layers_win_key_by_key() {
    let fx = Fixture::new();
    let user = fx.user_config(USER);
    let project = fx.project_config(PROJECT);
    fx.trust();
    let flag_file = fx.write("flag.toml", FLAG_FILE);
    let options = LoadOptions {
        config_file: Some(flag_file.clone()),
        overrides: vec!["model.name=cli-model".into()],
        ..LoadOptions::default()
    };

    let config = fx.load(&options).unwrap();
    assert_eq!(config.model.name.as_deref(), Some("cli-model"));
    assert_eq!(config.model.max_tokens, Some(100), "user value survives");
    assert_eq!(config.agent.max_steps, 7);
    let kinds: Vec<_> = config
        .layers
        .iter()
        .map(|l| (l.kind, l.path.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (LayerKind::Defaults, PathBuf::from(DEFAULTS_SOURCE)),
            (LayerKind::User, user),
            (LayerKind::Project, project),
            (LayerKind::ConfigFlag, flag_file.clone()),
            (LayerKind::Override, PathBuf::from("-c")),
        ]
    );

    // Per-server keys merge: builtin from the defaults, args and tool_timeout from the user, startup
    // timeout from the project, per-tool keys from the project and the --config file.
    let fs = &config.mcp_servers["fs"];
    assert_eq!(
        fs.transport,
        Transport::Stdio {
            launch: Launch::Builtin(Builtin::Fs),
            args: vec!["--root".into(), "/u".into()],
            env: Default::default(),
            env_vars: vec![],
            cwd: None,
        }
    );
    assert_eq!(fs.tool_timeout, Duration::from_secs(5));
    assert_eq!(fs.startup_timeout, Duration::from_secs(3));
    let read_file = &fs.tools["read_file"];
    assert_eq!(read_file.max_output_chars, Some(10));
    assert_eq!(read_file.timeout, Some(Duration::from_secs(1)));
    assert_eq!(
        fs.defined_at.file, flag_file,
        "the last layer that mentions the server"
    );

    // Peel the layers off one at a time.
    let without_c = LoadOptions {
        overrides: vec![],
        ..options.clone()
    };
    assert_eq!(
        fx.load(&without_c).unwrap().model.name.as_deref(),
        Some("flag-model")
    );
    assert_eq!(
        fx.load(&LoadOptions::default())
            .unwrap()
            .model
            .name
            .as_deref(),
        Some("project-model")
    );
    std::fs::remove_file(fx.paths().trust_file()).unwrap();
    let untrusted = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(untrusted.model.name.as_deref(), Some("user-model"));
    assert_eq!(
        untrusted.mcp_servers["fs"].startup_timeout,
        Duration::from_secs(10)
    );
    std::fs::remove_file(fx.paths().user_config).unwrap();
    let defaults = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(defaults.model.name, None);
    assert_eq!(
        defaults.mcp_servers["fs"].transport,
        Transport::Stdio {
            launch: Launch::Builtin(Builtin::Fs),
            args: vec!["--root".into(), ".".into()],
            env: Default::default(),
            env_vars: vec![],
            cwd: None,
        }
    );
}

#[test]
fn the_defaults_enable_the_builtin_servers() {
    let fx = Fixture::new();
    let config = fx.load(&LoadOptions::default()).unwrap();
    let enabled: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(
        enabled,
        ["fs", "lsp", "plan", "shell", "skills", "todo", "web"]
    );
    assert_eq!(config.agent.max_steps, 50);
    assert_eq!(config.permissions.mode, PermissionMode::Default);
    // Updating the todo list is the model's own bookkeeping: allowed without asking.
    let defaults: Vec<&str> = config
        .permissions
        .allow
        .iter()
        .filter(|r| r.file == std::path::Path::new(DEFAULTS_SOURCE))
        .map(|r| r.rule.as_str())
        .collect();
    assert_eq!(defaults, ["todo__write"]);
    assert_eq!(config.model, Default::default());
    // The built-ins describe their own tools (in `_meta`): the defaults need no tool settings.
    assert!(config.mcp_servers.values().all(|s| s.tools.is_empty()));
    assert!(config.mcp_servers.values().all(|s| s.trust_annotations));
    assert!(config.notices.is_empty());
    assert_eq!(config.layers.len(), 1);
}

#[test]
fn a_different_transport_in_a_later_layer_replaces_the_earlier_one() {
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.x]\ncommand = \"x-mcp\"\nargs = [\"--a\"]\nenv = { A = \"1\" }\nrequired = true\n",
    );
    let flag = fx.write(
        "flag.toml",
        "[mcp_servers.x]\nurl = \"https://x.example/mcp\"\n",
    );
    let config = fx.load(&super::with_config_file(flag)).unwrap();
    let x = &config.mcp_servers["x"];
    assert!(
        matches!(&x.transport, Transport::Http { url, .. } if url == "https://x.example/mcp"),
        "{:?}",
        x.transport
    );
    assert!(x.required, "non-transport keys still merge");

    // command over builtin: the builtin's args go too.
    let options = LoadOptions {
        overrides: vec!["mcp_servers.fs.command=my-fs".into()],
        ..Default::default()
    };
    let config = Fixture::new().load(&options).unwrap();
    assert_eq!(
        config.mcp_servers["fs"].transport,
        Transport::Stdio {
            launch: Launch::Command("my-fs".into()),
            args: vec![],
            env: Default::default(),
            env_vars: vec![],
            cwd: None,
        }
    );
}

#[test]
fn tables_merge_per_key_and_lists_replace() {
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.x]\ncommand = \"x\"\nargs = [\"1\", \"2\"]\nenv = { A = \"1\", B = \"1\" }\n",
    );
    let options = LoadOptions {
        overrides: vec![
            "mcp_servers.x.env.B=\"2\"".into(),
            "mcp_servers.x.args=[\"3\"]".into(),
            "mcp_servers.x.enabled=false".into(),
        ],
        ..Default::default()
    };
    let config = fx.load(&options).unwrap();
    let Transport::Stdio { args, env, .. } = &config.mcp_servers["x"].transport else {
        panic!()
    };
    assert_eq!(args, &["3"]);
    assert_eq!(env.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.get("B").map(String::as_str), Some("2"));
    assert!(!config.mcp_servers["x"].enabled);
}

/// Rules from every layer add up, in layer order, each with the file and line it was written on.
#[test]
fn permission_rules_accumulate_with_their_origin() {
    let fx = Fixture::new();
    let user = fx.user_config(
        "# rules\n[permissions]\nallow = [\n  \"fs__read_file\",\n  \"time__*\",\n]\ndeny = [\"shell__run(rm -rf *)\"]\n",
    );
    let project =
        fx.project_config("[permissions]\nmode = \"yolo\"\n\ndeny = [\"fs__*(path: **/.env)\"]\n");
    fx.trust();
    let flag = fx.write(
        "flag.toml",
        "[permissions]\nask = [\"web__fetch\"]\nallow = [\"git__*\"]\n",
    );
    let options = LoadOptions {
        config_file: Some(flag.clone()),
        overrides: vec![
            "agent.max_steps=3".into(),
            "permissions.deny=[\"web__*\"]".into(),
        ],
        rules: vec![
            (RuleList::Allow, "shell__run(cargo test *)".into()),
            (RuleList::Deny, "fs__write_file".into()),
            (RuleList::Allow, "shell__run(ls)".into()),
        ],
        mode: Some(PermissionMode::ReadOnly),
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    let rule = |rule: &str, file: &PathBuf, line| RuleSource {
        rule: rule.into(),
        file: file.clone(),
        line,
    };
    let dash_c = PathBuf::from("-c");
    let allow_flag = PathBuf::from("--allow");
    let deny_flag = PathBuf::from("--deny");
    let defaults = PathBuf::from(DEFAULTS_SOURCE);
    let layered: Vec<RuleSource> = config
        .permissions
        .allow
        .iter()
        .filter(|r| r.file != defaults)
        .cloned()
        .collect();
    assert_eq!(
        layered,
        [
            rule("fs__read_file", &user, 4),
            rule("time__*", &user, 5),
            rule("git__*", &flag, 3),
            rule("shell__run(cargo test *)", &allow_flag, 1),
            rule("shell__run(ls)", &allow_flag, 2),
        ]
    );
    assert_eq!(
        config.permissions.deny,
        [
            rule("shell__run(rm -rf *)", &user, 7),
            rule("fs__*(path: **/.env)", &project, 4),
            rule("web__*", &dash_c, 2),
            rule("fs__write_file", &deny_flag, 1),
        ]
    );
    assert_eq!(config.permissions.ask, [rule("web__fetch", &flag, 2)]);
    assert_eq!(
        config.permissions.mode,
        PermissionMode::ReadOnly,
        "--mode beats every layer"
    );

    let bad = LoadOptions {
        rules: vec![(RuleList::Deny, "fs__*(path".into())],
        ..Default::default()
    };
    let err = fx.load(&bad).unwrap_err().to_string();
    assert!(
        err.starts_with("--deny:1: permissions.deny: rule \"fs__*(path\" has unbalanced"),
        "{err}"
    );
}
