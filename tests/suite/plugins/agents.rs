//! A plugin's `agents/*.md` (Claude Code sub-agents) become agent profiles while the plugin is
//! enabled (issue 19, item 4): `tern plugin add` lists them, the agent server offers them as a
//! `profile` of `agent__run`, a delegation with one runs a sub-agent with the agent's
//! instructions and only its tools, and disabling the plugin takes the profile away.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::script::AnthropicTurn;

use super::{plugin_repo, stdout};

/// `agent__run`'s description as `tern tools --json` shows it (agent server on).
async fn run_tool_description(env: &RunEnv) -> String {
    let out = env
        .run(&["-c", "mcp_servers.agent.enabled=true", "tools", "--json"])
        .await;
    assert_exit(&out, 0);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "agent__run")
        .unwrap_or_else(|| panic!("agent__run listed: {rows:#}"))["description"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn agents_become_profiles(layout: &str, name: &str) {
    let env = RunEnv::new().await;
    let repos = tempfile::tempdir().unwrap();
    let repo = plugin_repo(repos.path(), name, layout);
    let out = env
        .run(&["plugin", "add", repo.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 0);
    let profile = format!("{name}-reviewer");
    assert!(
        stdout(&out).contains(&format!("agents (profiles for agent__run): {profile}")),
        "{}",
        stdout(&out)
    );

    let described = run_tool_description(&env).await;
    assert!(
        described.contains(&profile) && described.contains(&format!("Reviews diffs for {name}.")),
        "{described}"
    );

    // A delegation with the profile: the sub-agent is told the agent's body and offered only
    // its tools (Read, Grep → fs__read_file, fs__grep).
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "d1",
                "agent__run",
                &[
                    &serde_json::json!({"goal": "Review the diff.", "profile": profile})
                        .to_string(),
                ],
            )
            .finish("tool_use"),
    );
    env.answer("Reviewed: fine.");
    env.answer("The reviewer says it is fine.");
    let out = env
        .run(&[
            "-c",
            "mcp_servers.agent.enabled=true",
            "run",
            "have it reviewed",
        ])
        .await;
    assert_exit(&out, 0);
    let requests = env.server.model_requests();
    let sub = requests
        .iter()
        .find(|r| {
            r.json()["system"]
                .to_string()
                .contains(&format!("REVIEWER-INSTRUCTIONS-{name}"))
        })
        .unwrap_or_else(|| panic!("a sub-run was told the agent's instructions"));
    let mut tools: Vec<String> = sub.json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        ["fs__grep", "fs__read_file"],
        "the agent's tools only"
    );

    // Disabled, the profile is gone (approve the changed tool first: the pin guard holds a
    // tool whose description changed).
    assert_exit(&env.run(&["plugin", "disable", name]).await, 0);
    let out = env
        .run(&[
            "-c",
            "mcp_servers.agent.enabled=true",
            "mcp",
            "approve",
            "agent",
        ])
        .await;
    assert_exit(&out, 0);
    let described = run_tool_description(&env).await;
    assert!(!described.contains(&profile), "{described}");
    assert!(
        described.contains("explore"),
        "the shipped profiles stay: {described}"
    );
}

#[tokio::test]
async fn a_claude_code_plugins_agents_are_profiles_until_it_is_disabled() {
    agents_become_profiles("claude", "cc-agents").await;
}

#[tokio::test]
async fn a_codex_layout_plugins_agents_are_profiles_until_it_is_disabled() {
    agents_become_profiles("codex", "cx-agents").await;
}
