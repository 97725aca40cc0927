//! Resources, through real MCP with the reference server-everything: `/mcp` lists them,
//! `@server:uri` (Tab-completed) attaches one to a REPL message, and the resource links and
//! embedded resources of tool results reach the model.

use serde_json::json;
use tern_e2e::{
    dep,
    run_env::{RunEnv, of_type},
};
use tern_model::mock::script::AnthropicTurn;

use super::repl::drive_with;

fn everything(env: &RunEnv) {
    let bin = dep("npm/node_modules/.bin/mcp-server-everything");
    env.add_servers(&format!(
        "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.everything]\ncommand = {:?}\nstartup_timeout_sec = 90\nrequired = true\n",
        bin.to_string_lossy()
    ));
}

/// The first line of server-everything's `features.md`, as the server serves it.
const FEATURES_HEAD: &str = "# Everything Server - Features";

#[tokio::test]
async fn a_mentioned_resource_is_attached_and_mcp_lists_resources() {
    let env = RunEnv::new().await;
    everything(&env);
    env.answer("It lists tools, prompts and resources.");
    let uri = "demo://resource/static/document/features.md";
    let script = json!([
        {"expect": "tern> ", "timeout": 90},
        {"send": "/mcp\r"},
        {"expect": format!("@everything:{uri} (text/markdown)")},
        {"expect": "tern> "},
        // Tab completes the URI (the only one with this prefix).
        {"send": "what does @everything:demo://resource/static/document/fea"},
        {"send": "\t"},
        {"send": " say?\r"},
        {"expect": format!("(attached @everything:{uri})")},
        {"expect": "It lists tools, prompts and resources."},
        {"expect": "tern> "},
        // A resource the server does not have: said, and nothing is sent.
        {"send": "and @everything:demo://resource/static/document/nope.md\r"},
        {"expect": "cannot read @everything:demo://resource/static/document/nope.md"},
        {"expect": "tern> "},
        {"send": "\u{15}/exit\r"},
    ]);
    drive_with(&env, &script, &[]).await;
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1, "the failed mention reached no model");
    let body = requests[0].json();
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        last.contains(&format!("what does @everything:{uri} say?")),
        "{last}"
    );
    assert!(
        last.contains(&format!(
            "<resource server=\\\"everything\\\" uri=\\\"{uri}\\\" mime_type=\\\"text/markdown\\\">"
        )),
        "{last}"
    );
    assert!(last.contains(FEATURES_HEAD), "{last}");
    let events = env.events();
    let attached = of_type(&events, "resource_attached");
    assert_eq!(attached.len(), 1);
    assert_eq!(attached[0]["uri"], uri);
    assert!(attached[0]["chars"].as_u64().unwrap() > 1000);
}

#[tokio::test]
async fn resource_links_and_embedded_resources_of_tool_results_reach_the_model() {
    let env = RunEnv::new().await;
    everything(&env);
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_1",
                "everything__get-resource-reference",
                &[r#"{"resourceType":"Text","resourceId":3}"#],
            )
            .tool_use(
                "toolu_2",
                "everything__get-resource-links",
                &[r#"{"count":2}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Read them.");
    let out = env
        .run(&["run", "look at the resources", "--mode", "yolo"])
        .await;
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = env.server.requests();
    let results = requests.last().unwrap().json()["messages"].to_string();
    // The embedded resource: named, with its text.
    assert!(
        results.contains("[resource demo://resource/dynamic/text/3 (text/plain)]"),
        "{results}"
    );
    assert!(results.contains("Resource 3"), "{results}");
    // The links: each URI, its type and what the server says it is.
    for link in [
        "[resource link: demo://resource/dynamic/blob/1 (text/plain) \u{2014} Blob Resource 1: Resource 1",
        "[resource link: demo://resource/dynamic/text/2 (text/plain) \u{2014} Text Resource 2: Resource 2",
    ] {
        assert!(results.contains(link), "{link} in {results}");
    }
}
