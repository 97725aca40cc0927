//! What a person reads, snapshotted: the terminal rendering of one scripted
//! run, and `tern trace` of it. Ids, times, durations and paths are redacted.

use tern_model::mock::script::AnthropicTurn;

use tern_e2e::run_env::{RunEnv, assert_exit};

pub(crate) fn filters(cwd: &str) -> Vec<(String, String)> {
    vec![
        (regex_escape(cwd), "[CWD]".into()),
        (r"\d{8}-\d{6}-[0-9a-f]{6}".into(), "[RUN_ID]".into()),
        (r"session [0-9a-f]{16}".into(), "session [SESSION]".into()),
        (r"\+\s*\d+\.\d{3}s".into(), "+[T]".into()),
        (r"\d+ ms".into(), "[N] ms".into()),
        // A call's duration on its line or its result's label: `· 9ms`, `· 2.3s`.
        (r"· \d+ms\b".into(), "· [N]ms".into()),
        (r"· \d+\.\ds\b".into(), "· [T]s".into()),
        (r"\d+\.\d s\b".into(), "[T] s".into()),
    ]
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[tokio::test]
async fn terminal_rendering_and_trace_of_a_scripted_run() {
    let env = RunEnv::new().await;
    let dir = env.dir.path();
    std::fs::write(dir.join("lib.txt"), "name = tern\nanswer = 41\n").unwrap();
    env.server.enqueue(
        AnthropicTurn::new()
            .text(&["I'll fix ", "the answer.\n"])
            .tool_use("toolu_1", "fs__read_file", &[r#"{"path":"lib.txt"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use(
                "toolu_2",
                "fs__edit_file",
                &[r#"{"path":"lib.txt","old_string":"answer = 41","new_string":"answer = 42"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_3", "shell__run", &[r#"{"command":"rm -rf build"}"#])
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(1200, 9800, 0)
            .text(&["## Done\n", "`answer` is now 42.\n"])
            .finish("end_turn"),
    );
    let out = env
        .run(&["run", "fix the answer", "--mode", "accept-edits"])
        .await;
    assert_exit(&out, 0);
    let cwd = dir.canonicalize().unwrap().to_string_lossy().into_owned();
    let rendered = String::from_utf8_lossy(&out.stdout).into_owned();
    let settings_filters = filters(&cwd);
    insta::with_settings!({filters => settings_filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect::<Vec<_>>()}, {
        insta::assert_snapshot!("terminal_run", rendered);
    });

    let runs = std::fs::read_dir(env.home.path().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let run_id = runs.file_name().to_string_lossy().into_owned();
    let trace = tern_e2e::tern(env.home.path(), dir)
        .args(["trace", &run_id[..12]])
        .output()
        .unwrap();
    assert!(
        trace.status.success(),
        "{}",
        String::from_utf8_lossy(&trace.stderr)
    );
    let trace = String::from_utf8_lossy(&trace.stdout).into_owned();
    insta::with_settings!({filters => settings_filters.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect::<Vec<_>>()}, {
        insta::assert_snapshot!("trace", trace);
    });

    let runs = tern_e2e::tern(env.home.path(), dir)
        .args(["runs"])
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&runs.stdout);
    assert!(
        listing.contains(&run_id)
            && listing.contains("success")
            && listing.contains("fix the answer"),
        "{listing}"
    );
}
