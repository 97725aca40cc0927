//! A `[mcp_servers]` block pasted from Codex's `config.toml`, with every key of its current
//! `RawMcpServerConfig` (`codex-rs/config/src/mcp_types.rs`) that a stdio server takes, runs
//! under the real `tern` (issue 23, item 4): `default_tools_approval_mode = "approve"` lets its
//! tools run without asking, a tool's `approval_mode = "prompt"` asks (headless: refused with
//! the reason), `experimental_environment = "remote"` is said on stderr, and the same server
//! without the key is asked about like any untrusted server.

use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::script::AnthropicTurn;

use super::run::tool_results;

#[tokio::test]
async fn a_pasted_codex_block_runs_with_each_key_meaning_what_it_means_in_codex() {
    let env = RunEnv::new().await;
    let server = tern_e2e::bin("tern-test-server")
        .to_string_lossy()
        .into_owned();
    env.add_servers(&format!(
        r#"
[mcp_servers.docs]
command = {server:?}
args = []
env = {{ "DOCS_MODE" = "pasted" }}
env_vars = ["HOME", {{ name = "DOCS_TOKEN", source = "local" }}]
startup_timeout_ms = 20000
tool_timeout_sec = 30
enabled = true
required = true
supports_parallel_tool_calls = true
default_tools_approval_mode = "approve"
experimental_environment = "remote"
enabled_tools = ["echo", "env", "sleep"]
disabled_tools = ["sleep"]
name = "Docs"

[mcp_servers.docs.tools.env]
approval_mode = "prompt"

[mcp_servers.plain]
command = {server:?}
"#
    ));
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_echo",
                "docs__echo",
                &[r#"{"text":"approved by codex key"}"#],
            )
            .tool_use("toolu_env", "docs__env", &[r#"{"name":"DOCS_MODE"}"#])
            .tool_use("toolu_plain", "plain__echo", &[r#"{"text":"x"}"#])
            .finish("tool_use"),
    );
    env.answer("done");
    let out = env
        .command(&["run", "use the docs", "--output-format", "jsonl"])
        .env("DOCS_TOKEN", "t0k")
        .output()
        .await
        .unwrap();
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("notice: mcp_servers.docs.experimental_environment ignored (")
            && stderr.contains(
                "config.toml:19:28): tern has no remote executor; the server is started on this machine"
            ),
        "{stderr}"
    );

    let requests = env.server.requests();
    // enabled_tools / disabled_tools: only echo and env of docs are offered.
    let offered: Vec<String> = requests[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .filter(|n| n.starts_with("docs__"))
        .collect();
    assert_eq!(offered, ["docs__echo", "docs__env"]);

    let results = tool_results(&requests[1]);
    let by_id = |id: &str| {
        results
            .iter()
            .find(|(i, _, _)| i == id)
            .unwrap_or_else(|| panic!("{id}: {results:?}"))
            .clone()
    };
    let (_, text, is_error) = by_id("toolu_echo");
    assert!(
        !is_error && text.contains("approved by codex key"),
        "{text}"
    );
    let (_, text, is_error) = by_id("toolu_env");
    assert!(is_error, "{text}");
    // Asked for by the pasted rule, and nobody to ask in a headless run.
    assert!(
        text.contains("`docs__env` needs approval (rule `docs__env` asks)"),
        "{text}"
    );
    let (_, text, is_error) = by_id("toolu_plain");
    assert!(is_error && text.contains("no rule allows it"), "{text}");

    // The rule that decided each call names the pasted line.
    let events = env.events();
    let decided = of_type(&events, "permission_decided");
    let rule_of = |tool: &str| -> String {
        decided
            .iter()
            .find(|d| d["tool"] == tool)
            .unwrap_or_else(|| panic!("{tool}: {decided:?}"))["rule"]
            .to_string()
    };
    assert!(
        rule_of("docs__echo").contains("config.toml:18"),
        "{decided:?}"
    );
    let env_decision = decided.iter().find(|d| d["tool"] == "docs__env").unwrap();
    assert_eq!(env_decision["asked"], true, "{env_decision}");
    assert!(
        env_decision["reason"]
            .as_str()
            .unwrap()
            .contains("(rule `docs__env` asks)"),
        "{env_decision}"
    );
}

#[tokio::test]
async fn a_pasted_literal_bearer_token_stops_tern_with_the_key_to_use() {
    let env = RunEnv::new().await;
    env.add_servers(
        "[mcp_servers.remote]\nurl = \"https://mcp.example.com/mcp\"\nbearer_token = \"sk-live-123\"\n",
    );
    let out = env.run(&["run", "hi", "--output-format", "jsonl"]).await;
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mcp_servers.remote.bearer_token")
            && stderr.contains("hint: put the token in an environment variable"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-live-123"), "{stderr}");
    assert!(env.server.requests().is_empty());
}

/// `supports_parallel_tool_calls = true`: two calls of a server whose tools are not read-only
/// run at the same time (the test server's `rendezvous` answers `met` only when both are in
/// flight at once); without the key the same calls run one after the other.
#[tokio::test]
async fn supports_parallel_tool_calls_lets_a_servers_calls_run_side_by_side() {
    for (parallel, expected) in [(true, "met"), (false, "alone")] {
        let env = RunEnv::new().await;
        env.add_servers(&format!(
            "[mcp_servers.db]\ncommand = {:?}\nargs = [\"--destructive\"]\n\
             supports_parallel_tool_calls = {parallel}\n",
            tern_e2e::bin("tern-test-server").to_string_lossy()
        ));
        let call = r#"{"group":"g","n":2,"ms":1500}"#;
        env.server.enqueue(
            AnthropicTurn::new()
                .tool_use("toolu_a", "db__rendezvous", &[call])
                .tool_use("toolu_b", "db__rendezvous", &[call])
                .finish("tool_use"),
        );
        env.answer("done");
        let out = env
            .run(&[
                "run",
                "both",
                "--allow",
                "db__*",
                "--output-format",
                "jsonl",
            ])
            .await;
        assert_exit(&out, 0);
        let results = tool_results(&env.server.requests()[1]);
        assert_eq!(results.len(), 2, "{results:?}");
        assert!(
            results.iter().any(|(_, text, _)| text.contains(expected)),
            "supports_parallel_tool_calls = {parallel}: {results:?}"
        );
        if parallel {
            assert!(
                results.iter().all(|(_, text, _)| text.contains("met")),
                "{results:?}"
            );
        }
    }
}
