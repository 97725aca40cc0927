//! Elicitation: a server's request for input is asked in the REPL, field by field, answers
//! checked as they are typed — in both eras (a 2025-11-25 `elicitation/create` request, a
//! 2026-07-28 input request answered by retrying the call with `inputResponses`) — and a headless
//! run declines; every elicitation is an event and an audit line.

use serde_json::{Value, json};
use tern_e2e::run_env::{RunEnv, of_type};
use tern_model::mock::script::AnthropicTurn;

use super::repl::drive_with;

fn with_test_server(env: &RunEnv, extra_args: &[&str]) {
    with_test_server_and(env, extra_args, "");
}

/// The test server, with `extra` keys in its table.
fn with_test_server_and(env: &RunEnv, extra_args: &[&str], extra: &str) {
    env.add_servers(&format!(
        "[mcp_servers.shell]\nenabled = false\n[mcp_servers.ts]\ncommand = {:?}\nargs = {:?}\nrequired = true\n{extra}",
        tern_e2e::bin("tern-test-server").to_string_lossy(),
        extra_args
    ));
}

fn audit_lines(env: &RunEnv) -> Vec<Value> {
    std::fs::read_to_string(env.home.path().join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The REPL asks; the answers reach the server; the model gets what the server made of them.
/// The tool's timeout (2 s) is shorter than the person takes: their time does not count.
async fn form_in_the_repl(server_args: &[&str], protocol: &str) {
    let env = RunEnv::new().await;
    with_test_server_and(&env, server_args, "tool_timeout_sec = 2\n");
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "ts__ask", &["{}"])
            .finish("tool_use"),
    );
    env.answer("Noted.");
    let script = json!([
        {"expect": "tern> "},
        {"send": "/mcp\r"},
        {"expect": "ready"},
        {"expect": "tern> "},
        {"send": "ask me\r"},
        {"expect": "ts asks: Tell the test server about yourself"},
        // The server's order (its JSON sorts the keys).
        {"expect": "Age (a whole number) [30]: "},
        // The question stays on screen while the call waits (no spinner over it).
        // Longer than the tool's timeout.
        {"screen": "Age (a whole number) [30]:", "hold": 2.5},
        {"send": "200\r"},
        {"expect": "200 is outside 0 to 150"},
        {"send": "\r"},
        {"expect": "1) Red  2) Green"},
        {"expect": "Colour* (one of 1-2): "},
        {"send": "green\r"},
        {"expect": "Name* (text): "},
        {"send": "\r"},
        {"expect": "required"},
        {"expect": "Name* (text): "},
        {"send": "Ada\r"},
        {"expect": "Subscribe (yes or no) [no]: "},
        {"send": "\r"},
        {"expect": "Send this to ts? "},
        {"send": "y\r"},
        {"expect": "Noted."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &["--mode", "yolo"]).await;

    let events = env.events();
    let ready = of_type(&events, "server_ready");
    let ts = ready.iter().find(|e| e["server"] == "ts").unwrap();
    assert_eq!(ts["protocol_version"], protocol, "{ready:?}");
    let requests = env.server.requests();
    let results = requests.last().unwrap().json()["messages"].to_string();
    assert!(
        results.contains(
            r#"answer: accept {\"age\":30,\"color\":\"g\",\"name\":\"Ada\",\"subscribe\":false}"#
        ),
        "{results}"
    );
    let asked = of_type(&events, "elicitation");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["server"], "ts");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["action"], "accept");
    assert_eq!(asked[0]["answered_by"], "user");
    assert_eq!(
        asked[0]["fields"],
        json!(["age", "color", "name", "subscribe"])
    );
    // The values are in no event or audit line, only their digest.
    assert!(asked[0]["content_sha256"].as_str().unwrap().len() == 64);
    let audit = audit_lines(&env);
    let line = audit
        .iter()
        .find(|l| l["kind"] == "elicitation")
        .unwrap_or_else(|| panic!("{audit:?}"));
    assert_eq!(line["action"], "accept");
    assert_eq!(line["content_sha256"], asked[0]["content_sha256"]);
    assert!(!serde_json::to_string(&audit).unwrap().contains("Ada"));
}

#[tokio::test]
async fn a_form_is_asked_in_the_repl_in_the_2026_era_through_input_requests() {
    form_in_the_repl(&["--ask"], "2026-07-28").await;
}

#[tokio::test]
async fn a_form_is_asked_in_the_repl_in_the_2025_era_through_elicitation_create() {
    form_in_the_repl(&["--ask", "--legacy"], "2025-11-25").await;
}

#[tokio::test]
async fn a_headless_run_declines_and_says_so() {
    let env = RunEnv::new().await;
    with_test_server(&env, &["--ask"]);
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "ts__ask", &["{}"])
            .finish("tool_use"),
    );
    env.answer("Fine.");
    let out = env
        .run(&[
            "run",
            "ask me",
            "--mode",
            "yolo",
            "--accept-elicitation-defaults",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Required fields without defaults: even accepting defaults, nothing to accept with.
    let requests = env.server.requests();
    let results = requests.last().unwrap().json()["messages"].to_string();
    assert!(results.contains("answer: decline null"), "{results}");
    let events = env.events();
    let asked = of_type(&events, "elicitation");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["action"], "decline");
    assert_eq!(asked[0]["answered_by"], "policy");
    let notices = of_type(&events, "notice");
    assert!(
        notices
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains(
                "server `ts` asked for input: Tell the test server about yourself — declined"
            )),
        "{notices:?}"
    );
    assert!(
        audit_lines(&env)
            .iter()
            .any(|l| l["kind"] == "elicitation" && l["action"] == "decline")
    );
}

#[tokio::test]
async fn url_elicitations_are_shown_with_their_host_both_as_requests_and_as_a_required_error() {
    let env = RunEnv::new().await;
    let bin = tern_e2e::dep("npm/node_modules/.bin/mcp-server-everything");
    env.add_servers(&format!(
        "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.everything]\ncommand = {:?}\nstartup_timeout_sec = 90\nrequired = true\n",
        bin.to_string_lossy()
    ));
    // The error path: -32042 names a page to visit first; once visited, the call is retried
    // and takes the request path (an `elicitation/create` for the page it was given).
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_1",
                "everything__trigger-url-elicitation",
                &[r#"{"url":"https://example.com/consent","message":"Please consent","errorPath":true}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Consented.");
    let script = json!([
        {"expect": "tern> ", "timeout": 90},
        {"send": "consent please\r"},
        {"expect": "everything asks you to open a page on modelcontextprotocol.io: Open this link"},
        {"expect": "[o]pen it / [y]es, done / [n]o, decline / [c]ancel: "},
        {"send": "y\r"},
        {"expect": "everything asks you to open a page on example.com: Please consent"},
        {"expect": "https://example.com/consent"},
        {"send": "y\r"},
        {"expect": "Consented."},
        {"expect": "tern> "},
        {"send": "/exit\r"},
    ]);
    drive_with(&env, &script, &["--mode", "yolo"]).await;
    let requests = env.server.requests();
    let results = requests.last().unwrap().json()["messages"].to_string();
    assert!(
        results.contains("User completed the URL elicitation flow"),
        "{results}"
    );
    let events = env.events();
    let asked = of_type(&events, "elicitation");
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked
            .iter()
            .all(|e| e["mode"] == "url" && e["action"] == "accept")
    );
    assert_eq!(asked[1]["url"], "https://example.com/consent");
}
