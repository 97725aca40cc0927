//! `tern mcp import` and the REPL's "always": edits that keep the user's comments and order.

use std::time::Duration;

use tern_config::{ConfigError, LoadOptions, RuleList, Transport, append_rule, import_mcp_json};

use super::Fixture;

const EXISTING: &str = r#"# My tern config.
# Keep this comment.

[model]
name = "claude-sonnet-4-5" # trailing comment

[mcp_servers.local]
# a hand-written server
command = "local-mcp"

[permissions]
allow = ["fs__read_file"]
"#;

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"],
      "env": { "MEMORY_FILE_PATH": "${HOME}/memory.json" }
    },
    "api": {
      "type": "http",
      "url": "https://api.example.com/mcp",
      "headers": { "Authorization": "Bearer ${API_TOKEN}", "X-Team": "core" }
    },
    "legacy": { "type": "sse", "url": "https://old.example.com/sse" },
    "time": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-time"],
      "description": "clock"
    },
    "cursor-style": { "url": "https://c.example.com/mcp", "disabled": true },
    "stream": { "type": "streamable-http", "url": "https://s.example.com/mcp" }
  }
}"#;

#[test]
fn import_adds_servers_in_file_order_and_keeps_the_file() {
    let report = import_mcp_json(MCP_JSON, EXISTING).unwrap();
    assert_eq!(
        report.imported,
        ["memory", "api", "time", "cursor-style", "stream"]
    );
    assert_eq!(
        report.warnings,
        [
            "skipped \"legacy\": SSE transport is not supported (MCP replaced it with streamable HTTP); if the server offers streamable HTTP, add it with `url`",
            "\"time\": ignored key `description` (tern has no equivalent)",
        ]
    );
    // Every existing line is still there, in order; the new tables follow the existing server.
    let mut new_lines = report.config_text.lines();
    for line in EXISTING.lines() {
        assert!(
            new_lines.any(|new| new == line),
            "{line:?} lost or moved in:\n{}",
            report.config_text
        );
    }
    insta::assert_snapshot!(report.config_text);

    // Round trip: the written file loads into the servers the .mcp.json described.
    let mut fx = Fixture::new();
    fx.env.insert("HOME".into(), "/home/u".into());
    fx.env
        .insert("API_TOKEN".into(), "unused: read by the pool".into());
    fx.user_config(&report.config_text);
    let config = fx.load(&LoadOptions::default()).unwrap();
    let Transport::Stdio { args, env, .. } = &config.mcp_servers["memory"].transport else {
        panic!()
    };
    assert_eq!(args, &["-y", "@modelcontextprotocol/server-memory"]);
    assert_eq!(env["MEMORY_FILE_PATH"], "/home/u/memory.json");
    let Transport::Http {
        url,
        bearer_token_env_var,
        headers,
        ..
    } = &config.mcp_servers["api"].transport
    else {
        panic!()
    };
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(bearer_token_env_var.as_deref(), Some("API_TOKEN"));
    assert_eq!(headers.keys().collect::<Vec<_>>(), ["X-Team"]);
    assert!(!config.mcp_servers["cursor-style"].enabled);
    assert!(matches!(
        config.mcp_servers["stream"].transport,
        Transport::Http { .. }
    ));
    assert_eq!(
        config.mcp_servers["time"].startup_timeout,
        Duration::from_secs(10)
    );
    assert!(!config.mcp_servers.contains_key("legacy"));
    assert_eq!(config.model.name.as_deref(), Some("claude-sonnet-4-5"));
}

#[test]
fn import_into_an_empty_config() {
    let report = import_mcp_json(
        r#"{"mcpServers": {"b": {"command": "b"}, "a": {"command": "a", "args": []}}}"#,
        "",
    )
    .unwrap();
    assert_eq!(
        report.config_text,
        "[mcp_servers.b]\ncommand = \"b\"\n\n[mcp_servers.a]\ncommand = \"a\"\nargs = []\n"
    );
}

#[test]
fn import_refuses_an_existing_name_and_writes_nothing() {
    let json = r#"{"mcpServers": {"new": {"command": "n"}, "local": {"command": "other"}}}"#;
    let err = import_mcp_json(json, EXISTING).unwrap_err();
    assert!(matches!(err, ConfigError::Import { .. }));
    assert_eq!(
        err.to_string(),
        "import: a server named \"local\" already exists; remove or rename one of them, then import again"
    );

    // The built-in names are not in the user's file, so importing "fs" overrides the default (by
    // design: the user's entry replaces the built-in transport).
    let report = import_mcp_json(r#"{"mcpServers": {"fs": {"command": "my-fs"}}}"#, "").unwrap();
    assert_eq!(report.imported, ["fs"]);
}

#[test]
fn import_rejects_what_it_cannot_represent() {
    for (json, want) in [
        ("{", "not a valid .mcp.json"),
        (r#"{"servers": {}}"#, "missing field `mcpServers`"),
        (
            r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
            "may only use letters",
        ),
        (
            r#"{"mcpServers": {"x": {"args": ["a"]}}}"#,
            "a stdio server needs `command`",
        ),
        (
            r#"{"mcpServers": {"x": {"type": "http"}}}"#,
            "an HTTP server needs `url`",
        ),
        (
            r#"{"mcpServers": {"x": {"type": "ws", "url": "u"}}}"#,
            "unknown type \"ws\"",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "c", "args": [1]}}}"#,
            "`args` must be strings",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "c", "env": {"A": 1}}}}"#,
            "`env` must map names to strings",
        ),
    ] {
        let err = import_mcp_json(json, "").unwrap_err().to_string();
        assert!(err.contains(want), "{json}: {err}");
    }
    let err = import_mcp_json(r#"{"mcpServers": {}}"#, "mcp_servers = 3\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("`mcp_servers` in the config is not a table"),
        "{err}"
    );
}

#[test]
fn append_rule_keeps_comments_and_layout() {
    let text = append_rule(EXISTING, RuleList::Allow, "shell__run(cargo test *)").unwrap();
    assert_eq!(
        text,
        EXISTING.replace(
            "allow = [\"fs__read_file\"]",
            "allow = [\"fs__read_file\", \"shell__run(cargo test *)\"]"
        )
    );
    // A new list goes in the existing [permissions] table.
    let text = append_rule(&text, RuleList::Deny, "shell__run(rm -rf *)").unwrap();
    assert!(text.ends_with(
        "allow = [\"fs__read_file\", \"shell__run(cargo test *)\"]\ndeny = [\"shell__run(rm -rf *)\"]\n"
    ), "{text}");
    // Appending twice changes nothing.
    assert_eq!(
        append_rule(&text, RuleList::Deny, "shell__run(rm -rf *)").unwrap(),
        text
    );

    // A multi-line array stays multi-line, comments included.
    let multi = "[permissions]\n# why we allow these\nallow = [\n  \"a\", # first\n  \"b\",\n]\n";
    assert_eq!(
        append_rule(multi, RuleList::Allow, "c").unwrap(),
        "[permissions]\n# why we allow these\nallow = [\n  \"a\", # first\n  \"b\",\n  \"c\",\n]\n"
    );

    // No [permissions] yet: one is added at the end.
    assert_eq!(
        append_rule(
            "# only a comment\n[agent]\nmax_steps = 3\n",
            RuleList::Ask,
            "web__*"
        )
        .unwrap(),
        "# only a comment\n[agent]\nmax_steps = 3\n\n[permissions]\nask = [\"web__*\"]\n"
    );

    // The result loads, with the rule at the line it was written on.
    let fx = Fixture::new();
    let file = fx.user_config(&append_rule(multi, RuleList::Allow, "c").unwrap());
    let config = fx.load(&LoadOptions::default()).unwrap();
    let last = config.permissions.allow.last().unwrap();
    assert_eq!((last.rule.as_str(), &last.file, last.line), ("c", &file, 6));
}

#[test]
fn append_rule_refuses_bad_rules_and_shapes() {
    assert!(matches!(
        append_rule("", RuleList::Allow, "shell__run(x"),
        Err(ConfigError::Edit { .. })
    ));
    let err = append_rule("[permissions]\nallow = \"x\"\n", RuleList::Allow, "y").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot edit config: `permissions.allow` is not an array"
    );
    let err = append_rule("permissions = 1\n", RuleList::Allow, "y").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot edit config: `permissions` is not a table"
    );
}
