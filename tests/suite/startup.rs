//! Servers that are slow to start never hold the first answer back: `tern run` waits only a
//! short grace for servers that are not required, names the ones still starting to the model,
//! offers a known server's remembered tools at once, and still waits for `required` ones.

use std::time::{Duration, Instant};

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, of_type};
use tern_model::mock::script::AnthropicTurn;

/// The test server as `slow`, taking `delay_ms` to start (from its environment, so its command
/// line is the same whatever the delay).
fn slow_server(env: &RunEnv, delay_ms: u64, required: bool) {
    env.add_servers(&format!(
        "[mcp_servers.slow]\ncommand = {:?}\nenv = {{ TEST_SERVER_SLOW_START_MS = \"{delay_ms}\" }}\nrequired = {required}\nstartup_timeout_sec = 30\n",
        tern_e2e::bin("tern-test-server").to_string_lossy()
    ));
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_slow_server_does_not_hold_the_first_request_and_joins_later() {
    let env = RunEnv::new().await;
    slow_server(&env, 4_000, false);
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_wait", "shell__run", &[r#"{"command":"sleep 5"}"#])
            .finish("tool_use"),
    );
    env.answer("done");
    let started = Instant::now();
    let mut child = env
        .command(&["run", "go", "--mode", "yolo", "--output-format", "jsonl"])
        .spawn()
        .unwrap();
    assert_eq!(
        env.server
            .wait_for_requests(1, Duration::from_secs(20))
            .await,
        1
    );
    let first_at = started.elapsed();
    // The default grace is 2 s; the server takes 4.
    assert!(first_at < Duration::from_millis(3_500), "{first_at:?}");
    let status = child.wait().await.unwrap();
    assert!(status.success());
    let requests = env.server.model_requests();
    let first = requests[0].json();
    assert!(!tool_names(&first).iter().any(|n| n.starts_with("slow__")));
    assert!(
        first["messages"]
            .to_string()
            .contains("MCP servers still starting: slow"),
        "the model is told which servers are still coming"
    );
    let second = requests[1].json();
    assert!(
        tool_names(&second).iter().any(|n| n == "slow__echo"),
        "it joined"
    );
    assert!(!second["messages"].to_string().contains("still starting"));
    let events = env.events();
    let ready = events
        .iter()
        .position(|e| e["type"] == "server_ready" && e["server"] == "slow")
        .unwrap();
    let first_request = events
        .iter()
        .position(|e| e["type"] == "model_request")
        .unwrap();
    assert!(ready > first_request, "an event says when it joined");
}

#[tokio::test]
async fn a_known_servers_remembered_tools_are_offered_while_it_starts() {
    let env = RunEnv::new().await;
    // First run: the server is quick, and its tools are remembered.
    slow_server(&env, 0, false);
    env.answer("hello");
    let out = env.run(&["run", "hi"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.home.path().join("tool-cache.json").is_file());
    let before = env.server.model_requests().len();
    // Second run: the same server (same command line) is now slow to start.
    slow_server(&env, 3_000, false);
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_echo", "slow__echo", &[r#"{"text":"remembered"}"#])
            .finish("tool_use"),
    );
    env.answer("ok");
    let out = env
        .run(&[
            "run",
            "use the slow server",
            "--allow",
            "slow__echo",
            "--output-format",
            "jsonl",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.model_requests();
    let first = requests[before].json();
    assert!(
        tool_names(&first).iter().any(|n| n == "slow__echo"),
        "the remembered tools are offered before the server is up"
    );
    assert!(
        first["messages"]
            .to_string()
            .contains("still starting: slow")
    );
    // The call waited for the server and ran.
    let finished = of_type(&env.events(), "tool_call_finished")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(finished[0]["is_error"], false, "{finished:?}");
    assert!(
        finished[0]["output"]
            .as_str()
            .unwrap()
            .contains("remembered")
    );
}

#[tokio::test]
async fn a_required_server_is_still_waited_for() {
    let env = RunEnv::new().await;
    slow_server(&env, 3_000, true);
    env.answer("hello");
    let started = Instant::now();
    let out = env.run(&["run", "hi"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_secs(3));
    let first = env.server.model_requests()[0].json();
    assert!(tool_names(&first).iter().any(|n| n == "slow__echo"));
    assert!(!first["messages"].to_string().contains("still starting"));
}
