//! tern's Harbor agent (`integrations/harbor`): its Python unit tests, run against Harbor's own
//! base classes (the `harbor` package from PyPI in `.deps/harbor-venv`), with the end-to-end
//! test driving the real `tern` binaries against this test's mock model server.

use tern_model::mock::{MockModelServer, script::AnthropicTurn};

#[tokio::test]
async fn the_harbor_agent_installs_runs_tern_and_returns_its_trajectory() {
    let python = tern_e2e::dep("harbor-venv/bin/python");
    let server = MockModelServer::start().await.unwrap();
    server.enqueue(
        AnthropicTurn::with_usage(1100, 0, 2500)
            .tool_use(
                "toolu_01",
                "shell__run",
                &[r#"{"command":"sort -n numbers.txt > sorted.txt"}"#],
            )
            .finish("tool_use"),
    );
    server.enqueue(
        AnthropicTurn::with_usage(150, 3600, 0)
            .text(&["sorted.txt holds the numbers in order."])
            .finish("end_turn"),
    );
    let bin_dir = tern_e2e::bin("tern").parent().unwrap().to_path_buf();
    let version = std::process::Command::new(tern_e2e::bin("tern"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout)
        .trim()
        .trim_start_matches("tern")
        .trim()
        .to_string();
    let package = tern_e2e::workspace_root().join("integrations/harbor");
    let out = tokio::process::Command::new(python)
        .args(["-m", "unittest", "discover", "-v", "-s", "tests"])
        .current_dir(&package)
        .env("PYTHONPATH", &package)
        .env("TERN_E2E_MOCK_URL", server.url())
        .env("TERN_E2E_BIN_DIR", &bin_dir)
        .env("TERN_E2E_VERSION", &version)
        // No fetch of LiteLLM's price table from the network (Harbor resolves model info
        // through LiteLLM).
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TERN_HOME")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Ran 5 tests"), "{text}");
    assert!(!text.contains("skipped"), "no test may skip:\n{text}");
    let models: Vec<String> = server
        .model_requests()
        .iter()
        .map(|r| {
            serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["model"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(models, ["claude-sonnet-4-5", "claude-sonnet-4-5"], "{text}");
}
