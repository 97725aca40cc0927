//! Bad plugins and sources (issue 19, item 4): each refused with a clear error naming what is
//! wrong, and nothing half-installed left behind.

use tern_e2e::run_env::{RunEnv, assert_exit};

use super::{stderr, write};

/// Bad inputs, each refused with what is wrong and where, and nothing installed.
#[tokio::test]
async fn bad_plugins_and_sources_are_refused_with_clear_errors() {
    let env = RunEnv::new().await;
    let work = tempfile::tempdir().unwrap();

    let empty = work.path().join("empty");
    std::fs::create_dir_all(empty.join("skills")).unwrap();
    let out = env
        .run(&["plugin", "add", empty.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("is not a plugin: it has neither .claude-plugin/plugin.json"),
        "{}",
        stderr(&out)
    );

    let broken = work.path().join("broken");
    write(
        &broken.join(".claude-plugin/plugin.json"),
        "{\n  \"name\": \"broken\",\n  \"version\": 1.0.0\n}\n",
    );
    let out = env
        .run(&["plugin", "add", broken.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(".claude-plugin/plugin.json:3:"),
        "file and line: {err}"
    );
    assert!(err.contains("malformed JSON"), "{err}");

    let bad_hooks = work.path().join("bad-hooks");
    write(
        &bad_hooks.join(".claude-plugin/plugin.json"),
        r#"{"name": "bad-hooks"}"#,
    );
    write(
        &bad_hooks.join("hooks/hooks.json"),
        "{\"hooks\": {\n\"PreToolUse\": [,]}}",
    );
    let out = env
        .run(&["plugin", "add", bad_hooks.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("hooks/hooks.json:2:"),
        "{}",
        stderr(&out)
    );

    // A server name that the config already has.
    let clash = work.path().join("clash");
    write(
        &clash.join(".claude-plugin/plugin.json"),
        r#"{"name": "clash"}"#,
    );
    write(
        &clash.join(".mcp.json"),
        r#"{"mcpServers": {"fs": {"command": "true"}}}"#,
    );
    let out = env
        .run(&["plugin", "add", clash.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out)
            .contains("adds an MCP server `fs`, but a server of that name is already configured"),
        "{}",
        stderr(&out)
    );

    // The same plugin twice.
    let fine = work.path().join("fine");
    write(
        &fine.join(".claude-plugin/plugin.json"),
        r#"{"name": "fine", "version": "1.0.0"}"#,
    );
    assert_exit(
        &env.run(&["plugin", "add", fine.to_str().unwrap(), "--yes"])
            .await,
        0,
    );
    let out = env
        .run(&["plugin", "add", fine.to_str().unwrap(), "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("a plugin named `fine` is already installed"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("hint: `tern plugin update fine`"),
        "{}",
        stderr(&out)
    );

    let out = env
        .run(&["plugin", "add", "nowhere/some-plugin", "--yes"])
        .await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("unknown marketplace `nowhere`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("tern plugin marketplace add"),
        "{}",
        stderr(&out)
    );

    // An installed plugin broken behind tern's back: every run says which and how to go on,
    // and `remove` still works (it needs no loaded config).
    std::fs::write(
        env.home
            .path()
            .join("plugins/fine@1.0.0/.claude-plugin/plugin.json"),
        "{\"name\": ",
    )
    .unwrap();
    let out = env.run(&["run", "hi"]).await;
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("plugin fine: "), "{err}");
    assert!(err.contains("plugin.json:1:"), "{err}");
    assert!(
        err.contains("`tern plugin remove fine` removes it"),
        "{err}"
    );
    assert_exit(&env.run(&["plugin", "remove", "fine"]).await, 0);
    assert_exit(
        &env.run(&["plugin", "add", fine.to_str().unwrap(), "--yes"])
            .await,
        0,
    );

    let missing = format!("file://{}/no-such-repo", work.path().display());
    let out = env.run(&["plugin", "add", &missing, "--yes"]).await;
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains(&format!("git clone {missing} failed: ")),
        "{}",
        stderr(&out)
    );

    let out = env.run(&["plugin", "remove", "ghost"]).await;
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no plugin named `ghost` is installed (installed: fine)"),
        "{}",
        stderr(&out)
    );
    let dirs: Vec<_> = std::fs::read_dir(env.home.path().join("plugins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut dirs = dirs;
    dirs.sort();
    assert_eq!(
        dirs,
        ["fine@1.0.0", "installed.json"],
        "nothing half-installed"
    );
}
