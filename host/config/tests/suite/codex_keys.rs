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
