//! Annotations are hints from the server: only a server the user vouches for (a built-in, or
//! `trust_annotations = true`) gets its `readOnlyHint` calls allowed without asking.

use serde_json::json;
use tern_e2e::run_env::RunEnv;

use super::{decision, finished, run_ok, turn};

#[tokio::test]
async fn read_only_hint_allows_calls_only_for_trusted_servers() {
    let env = RunEnv::new().await;
    let server = tern_e2e::bin("tern-test-server");
    let audit = env.dir.path().join("plain-calls.jsonl");
    // The same program twice: once as configured by the user without vouching for it, once
    // vouched for. Both declare `echo` read-only.
    env.add_servers(&format!(
        "[mcp_servers.plain]\ncommand = {server:?}\nargs = [\"--audit\", {audit:?}]\n\
         [mcp_servers.vouched]\ncommand = {server:?}\ntrust_annotations = true\n"
    ));
    std::fs::write(env.dir.path().join("a.txt"), "alpha\n").unwrap();
    turn(
        &env,
        &[
            ("toolu_plain", "plain__echo", json!({"text": "hi"})),
            ("toolu_vouched", "vouched__echo", json!({"text": "hi"})),
            ("toolu_builtin", "fs__read_file", json!({"path": "a.txt"})),
        ],
    );
    env.answer("done");
    let events = run_ok(&env, "echo things", &[]).await;

    let plain = decision(&events, "toolu_plain");
    assert_eq!(plain["decision"], "deny", "{plain}");
    assert_ne!(plain["rule"], "annotation:readOnlyHint", "{plain}");
    assert_eq!(finished(&events, "toolu_plain")["error_type"], "denied");
    assert!(
        !audit.exists() || std::fs::read_to_string(&audit).unwrap().is_empty(),
        "the untrusted server received the call"
    );
    for id in ["toolu_vouched", "toolu_builtin"] {
        let d = decision(&events, id);
        assert_eq!(d["decision"], "allow", "{d}");
        assert_eq!(d["rule"], "annotation:readOnlyHint", "{d}");
        assert_eq!(finished(&events, id)["is_error"], false);
    }
}
