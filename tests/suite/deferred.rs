//! Deferred tools: with 300 tools from a third-party server (the official Python SDK), the
//! first request carries only the core tools and `tern__tool_search`; the model searches, and
//! the tool it found is callable — on both providers.

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, assert_exit, of_type};
use tern_model::mock::{
    MockResponse,
    responses::ResponsesTurn,
    script::{AnthropicTurn, OpenAiTurn},
    simulate::Api,
};

fn many_tools(env: &RunEnv) {
    env.add_servers(&format!(
        "[mcp_servers.big]\ncommand = {:?}\nargs = [{:?}, \"300\"]\nstartup_timeout_sec = 60\nrequired = true\n",
        tern_e2e::dep("venv/bin/python").to_string_lossy(),
        tern_e2e::workspace_root()
            .join("tests/interop/many_tools.py")
            .to_string_lossy(),
    ));
}

fn call(api: Api, id: &str, name: &str, args: &str) -> MockResponse {
    match api {
        Api::Anthropic => AnthropicTurn::new()
            .tool_use(id, name, &[args])
            .finish("tool_use"),
        Api::Openai => OpenAiTurn::new()
            .tool_call(0, id, name, &[args])
            .finish("tool_calls"),
        Api::Responses => ResponsesTurn::new()
            .function_call(&format!("fc_{id}"), id, name, &[args])
            .completed(),
    }
}

fn answer(api: Api, text: &str) -> MockResponse {
    match api {
        Api::Anthropic => AnthropicTurn::new().text(&[text]).finish("end_turn"),
        Api::Openai => OpenAiTurn::new().text(&[text]).finish("stop"),
        Api::Responses => ResponsesTurn::new().message("msg", &[text]).completed(),
    }
}

/// The tool names a request offered, and the size of its tool table in bytes.
fn offered(body: &Value) -> (Vec<String>, usize) {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    let names = tools
        .iter()
        .map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect();
    (names, Value::Array(tools).to_string().len())
}

async fn a_deferred_tool_is_found_and_called(api: Api) {
    let env = RunEnv::new().await;
    many_tools(&env);
    env.server.enqueue(call(
        api,
        "t_search",
        "tern__tool_search",
        r#"{"query":"weather forecast"}"#,
    ));
    env.server.enqueue(call(
        api,
        "t_weather",
        "big__weather_forecast",
        r#"{"city":"Oslo"}"#,
    ));
    env.server.enqueue(answer(api, "Sunny in Oslo."));
    let mut cmd = env.command(&[
        "run",
        "what is the weather in Oslo?",
        "--output-format",
        "jsonl",
        "--allow",
        "big__weather_forecast",
    ]);
    if api == Api::Openai {
        cmd.env_remove("ANTHROPIC_API_KEY")
            .env("OPENAI_BASE_URL", env.server.url())
            .args(["--provider", "openai", "--model", "gpt-4o"]);
    }
    let out = cmd.output().await.unwrap();
    assert_exit(&out, 0);
    let requests = env.server.model_requests();
    assert_eq!(requests.len(), 3);
    let (first, first_bytes) = offered(&requests[0].json());
    assert!(
        first.contains(&"tern__tool_search".to_string()),
        "{first:?}"
    );
    assert!(
        first.iter().any(|n| n == "fs__read_file"),
        "the built-ins stay"
    );
    assert!(!first.iter().any(|n| n.starts_with("big__")), "{first:?}");
    // Within the share of the window the table may take (10% of 200k, in tokens ≈ bytes / 4).
    assert!(first_bytes / 4 <= 20_000, "{first_bytes} bytes of tools");
    let (second, _) = offered(&requests[1].json());
    assert!(
        second.contains(&"big__weather_forecast".to_string()),
        "{second:?}"
    );
    let results = requests[2].json().to_string();
    assert!(results.contains("Forecast for Oslo"), "{results}");
    // The search was a tool call like any other: through the gateway, into the audit.
    let events = env.events();
    let finished = of_type(&events, "tool_call_finished");
    assert_eq!(finished.len(), 2);
    assert!(
        finished.iter().all(|f| f["is_error"] == false),
        "{finished:?}"
    );
    let audited: Vec<&str> = of_type(&events, "audit")
        .iter()
        .filter_map(|a| a["record"]["tool"].as_str())
        .collect();
    assert_eq!(audited, ["tern__tool_search", "big__weather_forecast"]);
}

#[tokio::test]
async fn a_deferred_tool_is_found_and_called_on_the_anthropic_path() {
    a_deferred_tool_is_found_and_called(Api::Anthropic).await;
}

#[tokio::test]
async fn a_deferred_tool_is_found_and_called_on_the_openai_path() {
    a_deferred_tool_is_found_and_called(Api::Openai).await;
}
