//! The managed policy (`/etc/tern/managed.toml`): parsed strictly, applied above every layer
//! and flag, and never silently missing when its file is there.

use tern_config::{Ceiling, LoadOptions, Notice, PermissionMode, RuleList, SandboxMode};

use super::Fixture;

fn err(fx: &Fixture, options: &LoadOptions) -> String {
    fx.load(options).unwrap_err().to_string()
}

#[test]
fn no_file_is_no_policy() {
    let fx = Fixture::new();
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert!(config.managed.is_none());
    assert!(config.blocked_servers.is_empty());
}

#[test]
fn an_unknown_key_names_the_file_line_key_and_the_closest_valid_one() {
    let fx = Fixture::new();
    let path = fx.managed("[policy]\ndenied_servers = [\"github\"]\nallowed_server = [\"fs\"]\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(
        message.starts_with(&format!("{}:3:", path.display())),
        "{message}"
    );
    assert!(
        message.contains("unknown key \"allowed_server\" in [policy]"),
        "{message}"
    );
    assert!(
        message.contains("hint: did you mean `allowed_servers`?"),
        "{message}"
    );
    // A table the policy does not have.
    fx.managed("[permissions]\ndeny = [\"x\"]\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(message.contains("unknown key \"permissions\""), "{message}");
}

#[test]
fn bad_values_are_errors_where_they_are_written() {
    let fx = Fixture::new();
    let path = fx.managed("[policy]\nsandbox = \"wide-open\"\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(
        message.starts_with(&format!("{}:2:", path.display())),
        "{message}"
    );
    assert!(message.contains("policy.sandbox"), "{message}");

    fx.managed("[policy]\ndeny = [\"shell__run(rm *\"]\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(message.contains("policy.deny"), "{message}");

    fx.managed("[policy]\ndenied_servers = [\"git hub\"]\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(message.contains("policy.denied_servers"), "{message}");

    fx.managed("[policy]\nallow_yolo = \"no\"\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(message.contains("allow_yolo"), "{message}");
}

#[test]
fn an_unreadable_policy_is_a_hard_error() {
    let fx = Fixture::new();
    // A directory where the file should be: it exists, it cannot be read.
    std::fs::create_dir_all(fx.root.join("etc/managed.toml")).unwrap();
    let message = err(&fx, &LoadOptions::default());
    assert!(message.contains("managed policy"), "{message}");
    assert!(message.contains("cannot be read"), "{message}");
    assert!(message.contains("hint:"), "{message}");
}

#[test]
fn forced_rules_come_after_every_flag() {
    let fx = Fixture::new();
    let path = fx.managed("[policy]\ndeny = [\"shell__run(curl *)\"]\nask = [\"web__fetch\"]\n");
    let options = LoadOptions {
        rules: vec![
            (RuleList::Allow, "shell__run".into()),
            (RuleList::Allow, "web__fetch".into()),
        ],
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    let deny = config.permissions.deny.last().unwrap();
    assert_eq!(deny.rule, "shell__run(curl *)");
    assert_eq!((deny.file.as_path(), deny.line), (path.as_path(), 2));
    let ask = config.permissions.ask.last().unwrap();
    assert_eq!(ask.rule, "web__fetch");
    assert_eq!(ask.line, 3);
    assert!(
        config
            .permissions
            .allow
            .iter()
            .any(|r| r.rule == "shell__run"),
        "the user's allow stays; the gateway's deny > ask > allow decides"
    );
}

#[test]
fn yolo_is_refused_from_the_flag_and_from_a_file() {
    let fx = Fixture::new();
    let path = fx.managed("[policy]\nallow_yolo = false\n");
    let flag = LoadOptions {
        mode: Some(PermissionMode::Yolo),
        ..LoadOptions::default()
    };
    let message = err(&fx, &flag);
    assert!(
        message.starts_with("--mode yolo is not allowed"),
        "{message}"
    );
    assert!(
        message.contains(&format!("allow_yolo = false ({}:2:", path.display())),
        "{message}"
    );
    assert!(
        message.contains("hint: use `--mode accept-edits`"),
        "{message}"
    );

    fx.user_config("[permissions]\nmode = \"yolo\"\n");
    let message = err(&fx, &LoadOptions::default());
    assert!(
        message.starts_with("permissions.mode = yolo is not allowed"),
        "{message}"
    );
    // Other modes load.
    fx.user_config("[permissions]\nmode = \"accept-edits\"\n");
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(config.permissions.mode, PermissionMode::AcceptEdits);
    assert_eq!(
        config.managed.as_ref().unwrap().max_mode(),
        PermissionMode::AcceptEdits
    );
}

#[test]
fn the_sandbox_is_bound_whatever_the_layers_and_flags_ask() {
    let fx = Fixture::new();
    fx.managed("[policy]\nsandbox = \"workspace-write\"\n");
    fx.user_config("[sandbox]\nmode = \"full-access\"\n");
    // `--sandbox full-access` is an override of the same key.
    let options = LoadOptions {
        overrides: vec!["sandbox.mode=\"full-access\"".into()],
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert!(
        config.notices.iter().any(|n| matches!(
            n,
            Notice::SandboxLowered {
                asked: SandboxMode::FullAccess,
                allowed: SandboxMode::WorkspaceWrite,
                ..
            }
        )),
        "{:?}",
        config.notices
    );
    // Tighter than the bound stays as it is, without a note.
    fx.user_config("[sandbox]\nmode = \"read-only\"\n");
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::ReadOnly);
    assert!(config.notices.is_empty(), "{:?}", config.notices);
}

#[test]
fn a_sub_run_is_bound_by_the_policy_and_its_parents_ceiling_together() {
    // The sub-run loads the same policy file; a parent ceiling looser than the policy does not
    // loosen it.
    let fx = Fixture::new();
    fx.managed(
        "[policy]\nsandbox = \"read-only\"\nallow_yolo = false\ndeny = [\"fs__write_file\"]\n",
    );
    let options = LoadOptions {
        ceiling: Some(Ceiling {
            mode: PermissionMode::Yolo,
            sandbox: SandboxMode::FullAccess,
            network: tern_sandbox::Network::On,
            git_writes: true,
            allow_sockets: Vec::new(),
        }),
        ..LoadOptions::default()
    };
    let config = fx.load(&options).unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::ReadOnly);
    assert_eq!(
        config.permissions.deny.last().unwrap().rule,
        "fs__write_file"
    );
}

#[test]
fn servers_outside_the_policy_are_disabled_with_the_reason() {
    let fx = Fixture::new();
    let bin = fx.write("opt/mcp/bin/corp-server", "#!/bin/sh\n");
    let path = fx.managed(&format!(
        "[policy]\nallowed_servers = [\"fs\", \"github\", \"{}/*\", \"https://*.corp.example/*\"]\n\
         denied_servers = [\"github\"]\n",
        fx.root.join("opt/mcp").display()
    ));
    fx.user_config(&format!(
        "[mcp_servers.github]\ncommand = \"github-mcp\"\n\
         [mcp_servers.corp]\ncommand = \"{}\"\n\
         [mcp_servers.fs]\ncommand = \"/tmp/not-the-builtin\"\n\
         [mcp_servers.wiki]\nurl = \"https://wiki.corp.example/mcp\"\n\
         [mcp_servers.other]\nurl = \"https://mcp.example.com/mcp\"\n",
        bin.display()
    ));
    let config = fx.load(&LoadOptions::default()).unwrap();
    let enabled: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(enabled, ["corp", "wiki"], "{:?}", config.blocked_servers);
    let file = path.display().to_string();
    assert_eq!(
        config.blocked_servers["github"],
        format!("blocked by managed policy ({file}:3:19: denied_servers \"github\")")
    );
    // Commands are listed, so the name `fs` does not admit a server with another command.
    assert!(
        config.blocked_servers["fs"]
            .contains("allowed_servers lists commands and \"/tmp/not-the-builtin\" is not one"),
        "{}",
        config.blocked_servers["fs"]
    );
    assert!(
        config.blocked_servers["other"].contains("allowed_servers lists URLs"),
        "{}",
        config.blocked_servers["other"]
    );
    // Built-ins are matched by name: `shell` is not listed.
    assert!(
        config.blocked_servers["shell"].contains("allowed_servers does not list \"shell\""),
        "{}",
        config.blocked_servers["shell"]
    );
    // A note for each server someone configured, not for the shipped ones.
    let noted: Vec<_> = config
        .notices
        .iter()
        .filter_map(|n| match n {
            Notice::ServerBlocked { server, .. } => Some(server.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(noted, ["fs", "github", "other"]);
}

#[test]
fn a_bare_command_is_matched_as_found_on_path() {
    let fx = Fixture::new();
    let bin = fx.write("opt/mcp/corp-server", "#!/bin/sh\n");
    let mut fx = fx;
    fx.env
        .insert("PATH".into(), bin.parent().unwrap().display().to_string());
    fx.managed(&format!(
        "[policy]\ndenied_servers = [\"{}/*\"]\n",
        fx.root.join("opt").display()
    ));
    fx.user_config("[mcp_servers.corp]\ncommand = \"corp-server\"\n");
    let config = fx.load(&LoadOptions::default()).unwrap();
    assert!(
        config.blocked_servers["corp"].contains("denied_servers"),
        "{:?}",
        config.blocked_servers
    );
}

#[test]
fn plugins_are_allowed_by_pattern() {
    let fx = Fixture::new();
    fx.managed("[policy]\nallowed_plugins = [\"corp-*\", \"formatter\"]\n");
    let config = fx.load(&LoadOptions::default()).unwrap();
    let policy = config.managed.unwrap();
    assert!(policy.allows_plugin("corp-tools"));
    assert!(policy.allows_plugin("formatter"));
    assert!(!policy.allows_plugin("formatter-pro"));
    let why = policy.plugin_blocked("random").unwrap();
    assert!(
        why.contains("allowed_plugins does not list \"random\""),
        "{why}"
    );
    // No list: every plugin.
    fx.managed("[policy]\n");
    let policy = fx.load(&LoadOptions::default()).unwrap().managed.unwrap();
    assert!(policy.allows_plugin("anything"));
}
