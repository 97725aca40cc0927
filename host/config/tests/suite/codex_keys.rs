//! A `[mcp_servers.NAME]` block pasted from Codex's `config.toml` loads, each key with its
//! meaning (issue 23: `startup_timeout_ms`, `scopes` or `oauth_resource` used to make every
//! command exit 2), unknown keys are still errors naming the closest valid one, and
//! `protocol` pins a server's MCP era.

use std::time::Duration;

use tern_config::{Protocol, Transport};

use super::Fixture;

fn load(text: &str) -> tern_config::Config {
    let fx = Fixture::new();
    fx.user_config(text);
    fx.load(&Default::default()).unwrap()
}

fn error(text: &str) -> String {
    let fx = Fixture::new();
    fx.user_config(text);
    fx.load(&Default::default()).unwrap_err().to_string()
}

#[test]
fn a_codex_http_block_loads_with_every_key_meaning_what_it_means_there() {
    let config = load(
        "[mcp_servers.docs]\nurl = \"https://mcp.example.com/mcp\"\n\
         startup_timeout_ms = 2500\ntool_timeout_sec = 45\n\
         scopes = [\"read\", \"search\"]\noauth_resource = \"https://api.example.com\"\n\
         enabled_tools = [\"search\", \"fetch\"]\ndisabled_tools = [\"fetch\"]\n\
         http_headers = { \"X-Team\" = \"core\" }\nenv_http_headers = { \"X-Key\" = \"DOCS_KEY\" }\n\
         name = \"Docs (display name)\"\n",
    );
    let docs = &config.mcp_servers["docs"];
    assert_eq!(docs.startup_timeout, Duration::from_millis(2500));
    assert_eq!(docs.tool_timeout, Duration::from_secs(45));
    assert!(docs.tool_enabled("search") && !docs.tool_enabled("fetch") && !docs.tool_enabled("x"));
    let Transport::Http {
        oauth,
        headers,
        env_headers,
        ..
    } = &docs.transport
    else {
        panic!("{:?}", docs.transport)
    };
    let oauth = oauth.as_ref().unwrap();
    assert_eq!(
        oauth.scopes.as_deref(),
        Some(&["read".to_string(), "search".to_string()][..])
    );
    assert_eq!(oauth.resource.as_deref(), Some("https://api.example.com"));
    assert_eq!(headers["X-Team"], "core");
    assert_eq!(env_headers["X-Key"], "DOCS_KEY");
}

#[test]
fn a_codex_stdio_block_loads_and_seconds_win_over_milliseconds() {
    let config = load(
        "[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\n\
         env_vars = [\"GIT_TOKEN\"]\nstartup_timeout_sec = 3\nstartup_timeout_ms = 9000\n",
    );
    let git = &config.mcp_servers["git"];
    assert_eq!(git.startup_timeout, Duration::from_secs(3));
    let Transport::Stdio { env_vars, .. } = &git.transport else {
        panic!("{:?}", git.transport)
    };
    assert_eq!(env_vars, &["GIT_TOKEN".to_string()]);
}

#[test]
fn codex_keys_keep_tern_strictness() {
    let message = error("[mcp_servers.git]\ncommand = \"g\"\noauth_resource = \"https://a\"\n");
    assert!(
        message.contains("applies to HTTP servers (`url`) only"),
        "{message}"
    );
    let message = error(
        "[mcp_servers.d]\nurl = \"https://h/mcp\"\nscopes = [\"a\"]\n[mcp_servers.d.oauth]\nscopes = [\"b\"]\n",
    );
    assert!(
        message.contains("mcp_servers.d.scopes: is also set as `oauth.scopes`"),
        "{message}"
    );
    let message = error("[mcp_servers.d]\nurl = \"https://h/mcp\"\noauth_resource = \"api\"\n");
    assert!(
        message.contains("is not an absolute http(s) URL"),
        "{message}"
    );
    let message = error("[mcp_servers.d]\nurl = \"https://h/mcp\"\nstartup_timeout_ms = 0\n");
    assert!(
        message.contains("must be a positive number of milliseconds"),
        "{message}"
    );
}

#[test]
fn an_unknown_key_is_an_error_that_names_the_closest_valid_one() {
    let message = error("[mcp_servers.git]\ncommand = \"g\"\nstartup_timeout_secs = 5\n");
    assert!(
        message.contains("unknown key \"startup_timeout_secs\" in [mcp_servers.git]"),
        "{message}"
    );
    assert!(
        message.ends_with("hint: did you mean `startup_timeout_sec`?"),
        "{message}"
    );
    let message = error("[mcp_servers.git]\ncommand = \"g\"\noauth_resorce = \"x\"\n");
    assert!(
        message.ends_with("hint: did you mean `oauth_resource`?"),
        "{message}"
    );
}

#[test]
fn protocol_pins_the_era_and_a_wrong_value_says_the_choices() {
    let config = load(
        "[mcp_servers.a]\ncommand = \"a\"\nprotocol = \"2025-11-25\"\n\
         [mcp_servers.b]\ncommand = \"b\"\nprotocol = \"2026-07-28\"\n\
         [mcp_servers.c]\ncommand = \"c\"\nprotocol = \"auto\"\n[mcp_servers.d]\ncommand = \"d\"\n",
    );
    assert_eq!(config.mcp_servers["a"].protocol, Protocol::Initialize);
    assert_eq!(config.mcp_servers["b"].protocol, Protocol::Discover);
    assert_eq!(config.mcp_servers["c"].protocol, Protocol::Auto);
    assert_eq!(config.mcp_servers["d"].protocol, Protocol::Auto);
    let message = error("[mcp_servers.a]\ncommand = \"a\"\nprotocol = \"2025\"\n");
    assert!(
        message.contains("mcp_servers.a.protocol: \"2025\" is not one of \"2025-11-25\""),
        "{message}"
    );
}

/// The rules of a loaded config, as `(rule, line)` pairs.
fn rules(list: &[tern_config::RuleSource]) -> Vec<(String, usize)> {
    list.iter().map(|r| (r.rule.clone(), r.line)).collect()
}

#[test]
fn approval_modes_become_allow_and_ask_rules_at_their_line() {
    // Codex's `AppToolApproval` (codex-rs/config/src/mcp_types.rs): approve = never ask,
    // prompt = always ask, auto = the client's own decision.
    let config = load(
        "[mcp_servers.docs]\ncommand = \"docs\"\ndefault_tools_approval_mode = \"approve\"\n\
         [mcp_servers.docs.tools.delete_page]\napproval_mode = \"prompt\"\n\
         [mcp_servers.git]\ncommand = \"git-mcp\"\ndefault_tools_approval_mode = \"prompt\"\n\
         [mcp_servers.web]\ncommand = \"w\"\ndefault_tools_approval_mode = \"auto\"\n\
         [mcp_servers.web.tools.\"get.page\"]\napproval_mode = \"approve\"\n\
         [mcp_servers.web.tools.post]\napproval_mode = \"auto\"\n",
    );
    let allow = rules(&config.permissions.allow);
    let ask = rules(&config.permissions.ask);
    assert!(allow.contains(&("docs__*".into(), 3)), "{allow:?}");
    // The tool table's sanitized name, so the rule matches what the model calls.
    assert!(allow.contains(&("web__get_page".into(), 13)), "{allow:?}");
    assert!(ask.contains(&("docs__delete_page".into(), 5)), "{ask:?}");
    assert!(ask.contains(&("git__*".into(), 8)), "{ask:?}");
    assert!(
        !allow
            .iter()
            .chain(&ask)
            .any(|(r, _)| r.starts_with("web__post") || r == "web__*"),
        "auto adds no rule: {allow:?} {ask:?}"
    );
}

#[test]
fn a_later_layer_replaces_an_approval_mode_instead_of_adding_to_it() {
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.docs]\ncommand = \"docs\"\ndefault_tools_approval_mode = \"approve\"\n",
    );
    fx.project_config("[mcp_servers.docs]\ndefault_tools_approval_mode = \"auto\"\n");
    fx.trust();
    let config = fx.load(&Default::default()).unwrap();
    assert!(
        !config.permissions.allow.iter().any(|r| r.rule == "docs__*"),
        "{:?}",
        config.permissions.allow
    );
}

#[test]
fn an_approve_never_beats_a_deny_rule_and_a_looser_tool_mode_is_refused() {
    let config = load(
        "[permissions]\ndeny = [\"docs__drop\"]\n\
         [mcp_servers.docs]\ncommand = \"docs\"\ndefault_tools_approval_mode = \"approve\"\n",
    );
    // Both are there; the gateway checks deny rules before allow rules.
    assert!(
        config
            .permissions
            .deny
            .iter()
            .any(|r| r.rule == "docs__drop")
    );
    assert!(config.permissions.allow.iter().any(|r| r.rule == "docs__*"));
    let message = error(
        "[mcp_servers.docs]\ncommand = \"docs\"\ndefault_tools_approval_mode = \"prompt\"\n\
         [mcp_servers.docs.tools.search]\napproval_mode = \"approve\"\n",
    );
    assert!(
        message.contains(
            "mcp_servers.docs.tools.search.approval_mode: \"approve\" loosens the \
                          server's default_tools_approval_mode = \"prompt\""
        ),
        "{message}"
    );
    assert!(
        message.contains("\nhint: leave out default_tools_approval_mode"),
        "{message}"
    );
    let message =
        error("[mcp_servers.docs]\ncommand = \"docs\"\ndefault_tools_approval_mode = \"always\"\n");
    assert!(
        message.contains(":3:") && message.contains("\"always\" is not one of \"auto\""),
        "{message}"
    );
}

#[test]
fn parallel_calls_environment_and_sourced_env_vars_load_with_their_meaning() {
    let config = load(
        "[mcp_servers.git]\ncommand = \"g\"\nsupports_parallel_tool_calls = true\n\
         experimental_environment = \"local\"\n\
         env_vars = [\"A\", { name = \"B\", source = \"local\" }, { name = \"C\" }]\n\
         [mcp_servers.other]\ncommand = \"o\"\n",
    );
    let git = &config.mcp_servers["git"];
    assert!(git.parallel_tool_calls);
    assert!(!config.mcp_servers["other"].parallel_tool_calls);
    let Transport::Stdio { env_vars, .. } = &git.transport else {
        panic!("{:?}", git.transport)
    };
    assert_eq!(env_vars, &["A", "B", "C"]);
    assert!(config.notices.is_empty(), "{:?}", config.notices);
}

#[test]
fn remote_environment_and_remote_env_vars_are_said_not_dropped() {
    let config = load(
        "[mcp_servers.git]\ncommand = \"g\"\nexperimental_environment = \"remote\"\n\
         env_vars = [{ name = \"TOKEN\", source = \"remote\" }]\n",
    );
    let notices: Vec<String> = config.notices.iter().map(|n| n.to_string()).collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[0].starts_with("mcp_servers.git.experimental_environment ignored (")
            && notices[0].contains("config.toml:3")
            && notices[0]
                .ends_with("tern has no remote executor; the server is started on this machine"),
        "{notices:?}"
    );
    assert!(
        notices[1].starts_with("mcp_servers.git.env_vars[0].source ignored (")
            && notices[1].contains("TOKEN is read from this machine's environment"),
        "{notices:?}"
    );
    // A disabled server's keys are not worth a notice; a later layer's new transport drops the
    // old transport's env_vars note.
    let config = load(
        "[mcp_servers.git]\ncommand = \"g\"\nexperimental_environment = \"remote\"\nenabled = false\n",
    );
    assert!(config.notices.is_empty(), "{:?}", config.notices);
    let fx = Fixture::new();
    fx.user_config(
        "[mcp_servers.git]\ncommand = \"g\"\nenv_vars = [{ name = \"T\", source = \"remote\" }]\n",
    );
    fx.project_config("[mcp_servers.git]\nurl = \"https://h/mcp\"\n");
    fx.trust();
    let config = fx.load(&Default::default()).unwrap();
    assert!(config.notices.is_empty(), "{:?}", config.notices);
    for (text, expected) in [
        (
            "experimental_environment = \"mars\"",
            "\"mars\" is not \"local\" or \"remote\"",
        ),
        (
            "env_vars = [{ name = \"T\", source = \"cloud\" }]",
            "source \"cloud\" is not",
        ),
        (
            "env_vars = [{ source = \"local\" }]",
            "env_vars[0]: needs `name",
        ),
        (
            "env_vars = [{ name = \"T\", from = \"x\" }]",
            "unknown key \"from\"",
        ),
        ("env_vars = [3]", "must be a variable name or a table"),
    ] {
        let message = error(&format!("[mcp_servers.git]\ncommand = \"g\"\n{text}\n"));
        assert!(message.contains(expected), "{text}: {message}");
    }
}

#[test]
fn a_literal_bearer_token_is_refused_with_the_key_to_use() {
    let message = error("[mcp_servers.d]\nurl = \"https://h/mcp\"\nbearer_token = \"sk-secret\"\n");
    assert!(
        message.contains("config.toml:3") && message.contains("mcp_servers.d.bearer_token"),
        "{message}"
    );
    assert!(
        message.contains(
            "hint: put the token in an environment variable and name it: \
                          bearer_token_env_var"
        ),
        "{message}"
    );
    assert!(
        !message.contains("sk-secret"),
        "the secret is not echoed: {message}"
    );
}

#[test]
fn unknown_keys_are_still_errors_with_the_closest_codex_key() {
    let message =
        error("[mcp_servers.d]\ncommand = \"d\"\ndefault_tool_approval_mode = \"approve\"\n");
    assert!(
        message.ends_with("hint: did you mean `default_tools_approval_mode`?"),
        "{message}"
    );
    let message = error(
        "[mcp_servers.d]\ncommand = \"d\"\n[mcp_servers.d.tools.x]\napproval = \"approve\"\n",
    );
    assert!(message.contains("unknown key \"approval\""), "{message}");
}
