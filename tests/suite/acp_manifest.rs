//! `integrations/acp/agent.json`, tern's entry for the ACP agent registry (issue 21): valid against
//! the registry's own schema (`tests/fixtures/acp-registry/`, copied from the registry with its
//! source named), of this version, with the icon the registry requires — and the command it
//! names really starts tern's ACP agent.

use std::time::Duration;

use serde_json::{Value, json};
use tern_e2e::run_env::RunEnv;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn read_json(rel: &str) -> Value {
    let path = tern_e2e::workspace_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn the_registry_manifest_is_valid_current_and_starts_the_acp_agent() {
    let manifest = read_json("integrations/acp/agent.json");
    let schema = read_json("tests/fixtures/acp-registry/agent.schema.json");
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the registry's schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&manifest)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The schema alone cannot fail on what matters to a user: the version and the command.
    assert_eq!(
        manifest["version"],
        env!("CARGO_PKG_VERSION"),
        "the entry names this release"
    );
    let icon =
        std::fs::read_to_string(tern_e2e::workspace_root().join("integrations/acp/icon.svg"))
            .expect("the registry requires icon.svg beside agent.json");
    assert!(
        icon.contains("viewBox=\"0 0 16 16\""),
        "16×16, as FORMAT.md prefers"
    );

    let targets = manifest["distribution"]["binary"].as_object().unwrap();
    assert!(targets.contains_key("linux-x86_64"));
    for (platform, target) in targets {
        assert_eq!(target["cmd"], "./tern", "{platform}");
        let archive = target["archive"].as_str().unwrap();
        assert!(
            archive.contains(&format!("v{}", env!("CARGO_PKG_VERSION"))),
            "{platform}: {archive}"
        );
    }
    // The arguments start the agent an editor talks to: `initialize` is answered on stdout.
    let args: Vec<&str> = targets["linux-x86_64"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let env = RunEnv::new().await;
    let mut child = env
        .command(&args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("no answer to initialize in 30 s")
        .unwrap()
        .expect("stdout closed");
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}
