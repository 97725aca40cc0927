//! The rule layer against the walk-arounds of the attack run: other spellings and wrappers
//! (F5), globs into protected config (F1), links and other tools around a path deny (F4).

use serde_json::json;
use tern_e2e::run_env::RunEnv;

use super::{decision, run_ok, turn};

/// F5: `--deny 'shell__run(rm -rf *)'` holds for every spelling and wrapper of `rm -rf`,
/// even in yolo mode where nothing else would stop the command.
#[tokio::test]
async fn a_deny_rule_catches_other_spellings_and_wrapped_commands() {
    let env = RunEnv::new().await;
    let commands = [
        "rm -fr v0",
        "rm -r -f v1",
        "rm --recursive --force v2",
        "nice rm -rf v3",
        "timeout 5 rm -rf v4",
        "echo v5 | xargs rm -rf",
        "env X=1 rm -rf v6",
        "command rm -rf v7",
        "sudo -n rm -rf v8",
        "busybox rm -rf v9",
        "sh -c 'rm -R -f v10'",
        "find . -name v11 -exec rm -rf {} +",
    ];
    let mut calls = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        std::fs::create_dir(env.dir.path().join(format!("v{i}"))).unwrap();
        calls.push((format!("toolu_{i}"), json!({ "command": command })));
    }
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "shell__run", args.clone()))
        .collect();
    turn(&env, &calls);
    env.answer("done");
    let events = run_ok(
        &env,
        "clean up",
        &["--mode", "yolo", "--deny", "shell__run(rm -rf *)"],
    )
    .await;
    for (i, command) in commands.iter().enumerate() {
        let d = decision(&events, &format!("toolu_{i}"));
        assert_eq!(d["decision"], "deny", "{command}: {d}");
        assert_eq!(d["rule"], "--deny:1", "{command}: {d}");
        assert!(
            env.dir.path().join(format!("v{i}")).is_dir(),
            "{command} removed its directory"
        );
    }
}
