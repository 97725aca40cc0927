//! Every key parses into the expected value; mistakes are reported at their exact file:line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use tern_config::{
    AgentSection, Builtin, ConfigError, Launch, Location, ModelConfig, PermissionMode, Permissions,
    Provider, RuleSource, ServerConfig, ServerRoots, ToolSettings, Transport,
};

use super::Fixture;

const FULL: &str = r#"# Every key tern-config knows.
[model]
provider = "openai"
name = "gpt-4o"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "MY_KEY"
max_tokens = 2048
context_window = 128000
max_retries = 4

[agent]
max_steps = 12

[permissions]
mode = "read-only"
allow = ["fs__read_file", "shell__run(cargo test *)"]
ask = ["web__fetch(url: domain:*.example.com)"]
deny = ["*(path: ~/.ssh/**)"]

[mcp_servers.git]
command = "uvx"
args = ["mcp-server-git", "--repository", "."]
env = { GIT_PAGER = "cat" }
env_vars = ["GIT_AUTHOR_NAME"]
cwd = "/srv/repo"
enabled = false
required = true
startup_timeout_sec = 2.5
tool_timeout_sec = 30
enabled_tools = ["git_log", "git_status"]
disabled_tools = ["git_reset"]
roots = ["/srv/repo", "/srv/shared"]
max_tool_bytes = 100000

[mcp_servers.git.tools.git_log]
timeout_sec = 5
max_output_chars = 1000
command_arg = "query"
enabled = true

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Org" = "ORG_ID" }

[mcp_servers.files]
builtin = "fs"
args = ["--root", "/data"]
max_output_chars = 20000
"#;

#[test]
fn a_full_file_parses_into_the_expected_config() {
    let fx = Fixture::new();
    let file = fx.user_config(FULL);
    let config = fx.load(&Default::default()).unwrap();
    let at = |line| Location {
        file: file.clone(),
        line,
        column: 14,
    };

    assert_eq!(
        config.model,
        ModelConfig {
            provider: Some(Provider::Openai),
            name: Some("gpt-4o".into()),
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            api_key_env: Some("MY_KEY".into()),
            max_tokens: Some(2048),
            context_window: Some(128000),
            max_retries: Some(4),
            ..Default::default()
        }
    );
    assert_eq!(
        config.agent,
        AgentSection {
            max_steps: 12,
            accept_elicitation_defaults: false,
            startup_grace: tern_config::DEFAULT_STARTUP_GRACE,
        }
    );
    let rule = |rule: &str, line| RuleSource {
        rule: rule.into(),
        file: file.clone(),
        line,
    };
    // The defaults' own rules (`todo__write`) come first; this file's follow.
    let mut permissions = config.permissions.clone();
    permissions
        .allow
        .retain(|r| r.file != std::path::Path::new(tern_config::DEFAULTS_SOURCE));
    assert_eq!(
        permissions,
        Permissions {
            mode: PermissionMode::ReadOnly,
            allow: vec![
                rule("fs__read_file", line_of(FULL, "allow =")),
                rule("shell__run(cargo test *)", line_of(FULL, "allow ="))
            ],
            ask: vec![rule(
                "web__fetch(url: domain:*.example.com)",
                line_of(FULL, "ask =")
            )],
            deny: vec![rule("*(path: ~/.ssh/**)", line_of(FULL, "deny ="))],
        }
    );

    let git = ServerConfig {
        name: "git".into(),
        transport: Transport::Stdio {
            launch: Launch::Command("uvx".into()),
            args: vec!["mcp-server-git".into(), "--repository".into(), ".".into()],
            env: BTreeMap::from([("GIT_PAGER".into(), "cat".into())]),
            env_vars: vec!["GIT_AUTHOR_NAME".into()],
            cwd: Some(PathBuf::from("/srv/repo")),
        },
        enabled: false,
        required: true,
        startup_timeout: Duration::from_millis(2500),
        tool_timeout: Duration::from_secs(30),
        max_output_chars: None,
        trust_annotations: false,
        defer: tern_config::Defer::Auto,
        roots: ServerRoots::Paths(vec!["/srv/repo".into(), "/srv/shared".into()]),
        max_tool_bytes: Some(100_000),
        protocol: tern_config::Protocol::Auto,
        enabled_tools: Some(vec!["git_log".into(), "git_status".into()]),
        disabled_tools: vec!["git_reset".into()],
        parallel_tool_calls: false,
        tools: BTreeMap::from([(
            "git_log".into(),
            ToolSettings {
                timeout: Some(Duration::from_secs(5)),
                max_output_chars: Some(1000),
                command_arg: Some("query".into()),
                edits_files: None,
                enabled: Some(true),
            },
        )]),
        defined_at: at(line_of(FULL, "[mcp_servers.git]")),
    };
    assert_eq!(config.mcp_servers["git"], git);

    let remote = ServerConfig {
        name: "remote".into(),
        transport: Transport::Http {
            url: "https://mcp.example.com/mcp".into(),
            bearer_token_env_var: Some("REMOTE_TOKEN".into()),
            headers: BTreeMap::from([("X-Team".into(), "core".into())]),
            env_headers: BTreeMap::from([("X-Org".into(), "ORG_ID".into())]),
            oauth: None,
        },
        enabled: true,
        required: false,
        startup_timeout: Duration::from_secs(10),
        tool_timeout: Duration::from_secs(60),
        max_output_chars: None,
        trust_annotations: false,
        defer: tern_config::Defer::Auto,
        roots: ServerRoots::WorkingDirectory,
        max_tool_bytes: None,
        protocol: tern_config::Protocol::Auto,
        enabled_tools: None,
        disabled_tools: vec![],
        parallel_tool_calls: false,
        tools: BTreeMap::new(),
        defined_at: at(line_of(FULL, "[mcp_servers.remote]")),
    };
    assert_eq!(config.mcp_servers["remote"], remote);

    let files = &config.mcp_servers["files"];
    assert_eq!(
        files.transport,
        Transport::Stdio {
            launch: Launch::Builtin(Builtin::Fs),
            args: vec!["--root".into(), "/data".into()],
            env: BTreeMap::new(),
            env_vars: vec![],
            cwd: None,
        }
    );
    assert_eq!(files.max_output_chars, Some(20000));
    // The defaults' built-in servers are still there.
    let names: Vec<_> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "agent", "files", "fs", "git", "lsp", "plan", "remote", "shell", "skills", "todo",
            "web"
        ]
    );

    // Helpers the pool and gateway use.
    assert!(git.tool_enabled("git_log"));
    assert!(!git.tool_enabled("git_reset"));
    assert!(!git.tool_enabled("git_push"), "not in enabled_tools");
    assert_eq!(git.limits("git_log").timeout, Duration::from_secs(5));
    assert_eq!(git.limits("git_status").timeout, Duration::from_secs(30));
    assert_eq!(
        git.limits("git_status").max_output_chars,
        tern_config::DEFAULT_MAX_OUTPUT_CHARS
    );
}

#[test]
fn roots_can_be_turned_off() {
    let fx = Fixture::new();
    fx.user_config("[mcp_servers.files]\ncommand = \"x\"\nroots = false\n");
    let config = fx.load(&Default::default()).unwrap();
    assert_eq!(config.mcp_servers["files"].roots, ServerRoots::Off);
}

/// The 1-based line of the first line of `text` containing `needle`.
pub fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).unwrap() + 1
}

/// Loads `text` as the user config and returns the error's display and the error.
fn user_error(text: &str) -> (String, ConfigError, PathBuf) {
    let fx = Fixture::new();
    let file = fx.user_config(text);
    let err = fx.load(&Default::default()).unwrap_err();
    (err.to_string(), err, file)
}

#[test]
fn an_unknown_key_names_file_line_table_and_the_expected_keys() {
    let (message, err, file) = user_error(
        "# my config\n[model]\nname = \"x\"\n\n[mcp_servers.git]\ncommand = \"git-mcp\"\ncomand = \"oops\"\n",
    );
    let expected = format!(
        "{}:7:1: unknown key \"comand\" in [mcp_servers.git]; expected one of command, builtin, args, env, env_vars, cwd, url,",
        file.display()
    );
    assert!(message.starts_with(&expected), "{message}");
    let ConfigError::Toml { key, at, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(key.as_deref(), Some("mcp_servers.git.comand"));
    assert_eq!((at.line, at.column), (7, 1));

    let (message, _, file) = user_error("[model]\nname = \"x\"\n\n[modle]\nname = \"y\"\n");
    assert!(
        message.starts_with(&format!(
            "{}:4:2: unknown key \"modle\" in the top level; expected one of model, permissions, agent, context, sandbox, telemetry, mcp_servers",
            file.display()
        )),
        "{message}"
    );

    let (message, _, _) = user_error(
        "[mcp_servers.git]\ncommand = \"g\"\n[mcp_servers.git.tools.log]\ntimeout = 3\n",
    );
    assert!(
        message.contains(":4:1: unknown key \"timeout\" in [mcp_servers.git.tools.log]; expected one of timeout_sec, max_output_chars, command_arg, edits_files, enabled"),
        "{message}"
    );
}

/// `[model] provider` is the `Provider` enum: an unknown name is an error naming the two there
/// are — never silently Anthropic.
#[test]
fn an_unknown_provider_is_an_error_that_names_the_known_ones() {
    let (message, err, file) = user_error("[model]\nprovider = \"gemini\"\n");
    assert!(
        message.starts_with(&format!(
            "{}:2:12: model.provider: unknown variant `gemini`, expected `anthropic` or `openai`",
            file.display()
        )),
        "{message}"
    );
    assert!(matches!(err, ConfigError::Toml { key: Some(ref k), .. } if k == "model.provider"));
    // The names config takes are the names `Provider` reads and writes everywhere else.
    for p in [Provider::Anthropic, Provider::Openai] {
        assert_eq!(Provider::parse(p.as_str()), Some(p));
        assert_eq!(p.to_string(), p.as_str());
        let fx = Fixture::new();
        fx.user_config(&format!("[model]\nprovider = \"{p}\"\n"));
        assert_eq!(
            fx.load(&Default::default()).unwrap().model.provider,
            Some(p)
        );
    }
    assert_eq!(Provider::parse("Anthropic"), None, "names are exact");
    assert_eq!(Provider::parse(""), None);
}

#[test]
fn a_wrong_type_names_the_key_and_its_line() {
    let (message, err, file) = user_error(
        "[agent]\nmax_steps = 3\n\n[mcp_servers.git]\ncommand = \"g\"\nstartup_timeout_sec = \"ten\"\n",
    );
    assert_eq!(
        message,
        format!(
            "{}:6:23: mcp_servers.git.startup_timeout_sec: invalid type: string \"ten\", expected f64",
            file.display()
        )
    );
    assert!(
        matches!(err, ConfigError::Toml { key: Some(ref k), .. } if k == "mcp_servers.git.startup_timeout_sec")
    );

    let (message, _, _) = user_error("[permissions]\nallow = [\n  \"a\",\n  3,\n]\n");
    assert!(
        message
            .contains(":4:3: permissions.allow[1]: invalid type: integer `3`, expected a string"),
        "{message}"
    );

    let (message, _, _) = user_error("[permissions]\nmode = \"careful\"\n");
    assert!(
        message.contains(":2:8: permissions.mode: unknown variant `careful`, expected one of `default`, `accept-edits`, `read-only`, `yolo`"),
        "{message}"
    );

    // `[model] vision` (image attach) is a boolean.
    let (message, _, _) = user_error("[model]\nvision = \"yes\"\n");
    assert!(
        message.contains(":2:10: model.vision: invalid type: string \"yes\", expected a boolean"),
        "{message}"
    );

    let (message, _, _) = user_error("[mcp_servers.x]\nbuiltin = \"git\"\n");
    assert!(message.contains(":2:11: mcp_servers.x.builtin: unknown variant `git`, expected one of `fs`, `shell`, `web`"), "{message}");
}

#[test]
fn bad_toml_names_the_line() {
    let (message, err, file) = user_error("[model]\nname = \"x\"\nmax_tokens = \n");
    assert!(
        message.starts_with(&format!("{}:3:14: ", file.display())),
        "{message}"
    );
    assert!(matches!(err, ConfigError::Toml { .. }));

    let (message, _, _) = user_error("[model]\nname = \"unterminated\n[agent]\n");
    assert!(message.contains(":2:"), "{message}");

    let (message, _, _) = user_error("[model]\nname = \"a\"\nname = \"b\"\n");
    assert!(
        message.ends_with(":3:1: duplicate key \"name\""),
        "{message}"
    );
}

#[test]
fn semantic_mistakes_name_file_line_and_key() {
    let cases = [
        (
            "\n[mcp_servers.\"bad.name\"]\ncommand = \"x\"\n",
            ":2:14: mcp_servers.bad.name: a server name may only use letters, digits, '_' and '-'",
        ),
        (
            "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://h\"\n",
            ":1:14: mcp_servers.both: sets both `command` and `url`",
        ),
        (
            "[mcp_servers.none]\nenabled = true\n",
            ":1:14: mcp_servers.none: needs `command` (a program), `builtin` (fs, shell, web or lsp) or `url`",
        ),
        (
            "[mcp_servers.h]\nurl = \"http://h\"\nargs = [\"x\"]\n",
            ":1:14: mcp_servers.h.args: applies to stdio servers (`command` or `builtin`) only",
        ),
        (
            "[mcp_servers.s]\ncommand = \"x\"\nbearer_token_env_var = \"T\"\n",
            ":1:14: mcp_servers.s.bearer_token_env_var: applies to HTTP servers (`url`) only",
        ),
        (
            "[mcp_servers.s]\ncommand = \"x\"\n\ntool_timeout_sec = -1\n",
            ":4:20: mcp_servers.s.tool_timeout_sec: must be a positive number of seconds",
        ),
        (
            "[mcp_servers.s]\ncommand = \"\"\n",
            ":1:14: mcp_servers.s.command: is empty",
        ),
        (
            "[mcp_servers.s]\ncommand = \"x\"\nroots = [\"data\"]\n",
            ":1:14: mcp_servers.s.roots: data is not an absolute path",
        ),
        (
            "[permissions]\ndeny = [\n  \"ok\",\n  \"shell__run(rm -rf *\",\n]\n",
            ":4:3: permissions.deny: rule \"shell__run(rm -rf *\" has unbalanced parentheses",
        ),
        (
            "[agent]\nmax_steps = 0\n",
            ":2:13: agent.max_steps: must be at least 1",
        ),
    ];
    for (text, want) in cases {
        let (message, err, file) = user_error(text);
        assert!(matches!(err, ConfigError::Invalid { .. }), "{err:?}");
        assert!(
            message.starts_with(&file.display().to_string()),
            "{message}"
        );
        assert!(message.contains(want), "want {want:?} in {message}");
    }
}

#[test]
fn errors_in_the_config_flag_file_and_overrides_name_their_source() {
    let fx = Fixture::new();
    let file = fx.write("elsewhere/cfg.toml", "[agent]\nmax_steps = \"many\"\n");
    let err = fx.load(&super::with_config_file(file.clone())).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:2:13: agent.max_steps", file.display())),
        "{err}"
    );

    let missing = fx.root.join("missing.toml");
    let err = fx
        .load(&super::with_config_file(missing.clone()))
        .unwrap_err();
    assert!(
        matches!(err, ConfigError::Io { ref path, .. } if *path == missing),
        "{err:?}"
    );

    let options = tern_config::LoadOptions {
        overrides: vec!["agent.max_steps=3".into(), "mcp_servers.fs.comand=x".into()],
        ..Default::default()
    };
    let err = fx.load(&options).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("-c:2: unknown key \"comand\" in [mcp_servers.fs]"),
        "{err}"
    );
    let options = tern_config::LoadOptions {
        overrides: vec!["agent.max_steps".into()],
        ..Default::default()
    };
    assert!(matches!(
        fx.load(&options),
        Err(ConfigError::Override { .. })
    ));
}

#[test]
fn the_context_section_is_strict_and_says_where_a_share_is_wrong() {
    let (message, _, _) = user_error("[context]\ncompact_at = 1.5\n");
    assert!(
        message.contains(":2:14: context.compact_at: must be a share of the window"),
        "{message}"
    );
    let (message, _, _) = user_error("[context]\ncompact_when = 0.5\n");
    assert!(
        message.contains("unknown key \"compact_when\" in [context]"),
        "{message}"
    );
}

#[test]
fn the_startup_grace_is_a_bounded_number_of_seconds() {
    let (message, _, _) = user_error("[agent]\nstartup_grace_sec = -1\n");
    assert!(
        message.contains(":2:21: agent.startup_grace_sec: must be a number of seconds"),
        "{message}"
    );
}

#[test]
fn checkpoints_and_lsp_sections_are_strict_and_resolve_their_units() {
    let (message, _, _) = user_error("[checkpoints]\nmax_age_days = 0\n");
    assert!(
        message.contains(":2:16: checkpoints.max_age_days: must be at least 1"),
        "{message}"
    );
    let (message, _, _) = user_error("[checkpoints]\nkeep = 3\n");
    assert!(
        message.contains("unknown key \"keep\" in [checkpoints]"),
        "{message}"
    );
    let (message, _, _) = user_error("[lsp]\nafter_edit = \"warnings\"\n");
    assert!(
        message.contains(":2:14: lsp.after_edit: must be \"errors\" or \"off\""),
        "{message}"
    );

    let fx = Fixture::new();
    let defaults = fx.load(&Default::default()).unwrap();
    assert!(defaults.checkpoints.enabled);
    assert_eq!(defaults.lsp.after_edit, tern_config::AfterEdit::Errors);
    fx.user_config(
        "[checkpoints]\nenabled = false\nmax_age_days = 2\nmax_size_mb = 5\nmax_file_mb = 1\n\
         [lsp]\nafter_edit = \"off\"\nafter_edit_wait_ms = 100\n",
    );
    let config = fx.load(&Default::default()).unwrap();
    assert!(!config.checkpoints.enabled);
    assert_eq!(
        config.checkpoints.max_age,
        Duration::from_secs(2 * 24 * 3600)
    );
    assert_eq!(config.checkpoints.max_bytes, 5 * 1024 * 1024);
    assert_eq!(config.checkpoints.max_file_bytes, 1024 * 1024);
    assert_eq!(config.lsp.after_edit, tern_config::AfterEdit::Off);
    assert_eq!(config.lsp.after_edit_wait_ms, 100);
}

#[test]
fn skills_honor_allowed_tools_is_off_unless_set_and_its_table_is_strict() {
    let fx = Fixture::new();
    assert!(
        !fx.load(&Default::default())
            .unwrap()
            .skills
            .honor_allowed_tools
    );
    fx.user_config("[skills]\nhonor_allowed_tools = true\n");
    assert!(
        fx.load(&Default::default())
            .unwrap()
            .skills
            .honor_allowed_tools
    );
    let (message, _, file) = user_error("[skills]\nhonor_allowed_tool = true\n");
    assert!(
        message.starts_with(&format!(
            "{}:2:1: unknown key \"honor_allowed_tool\" in [skills]",
            file.display()
        )),
        "{message}"
    );
    assert!(
        message.contains("hint: did you mean `honor_allowed_tools`?"),
        "{message}"
    );
}
