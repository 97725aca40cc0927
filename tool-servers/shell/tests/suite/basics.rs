//! What a caller sees for ordinary commands: output, exit code, ordering,
//! environment, and the tool's advertised shape.

use serde_json::json;

use super::support::{field, is_error, start, text};

#[tokio::test]
async fn output_and_exit_code_are_reported() {
    let s = start(&[], &[]).await;
    let r = s.run(json!({"command": "echo hello; exit 3"})).await;
    let t = text(&r);
    assert!(!is_error(&r), "{t}");
    assert!(t.starts_with("hello\n"), "{t}");
    assert!(t.contains("[exit code 3"), "{t}");
    assert_eq!(field(&r, "exit_code"), 3);
    assert_eq!(field(&r, "timed_out"), false);
    assert_eq!(field(&r, "truncated"), false);
    assert_eq!(field(&r, "total_bytes"), 6);
    assert!(field(&r, "duration_ms").is_u64());
}

#[tokio::test]
async fn stderr_is_interleaved_with_stdout_in_arrival_order() {
    let s = start(&[], &[]).await;
    let r = s
        .run(json!({"command": "echo one; echo two >&2; echo three; echo four >&2"}))
        .await;
    let t = text(&r);
    assert!(t.starts_with("one\ntwo\nthree\nfour\n"), "{t}");
}

#[tokio::test]
async fn bash_runs_in_a_session_of_its_own_with_empty_stdin() {
    // `cat` would hang forever on an inherited stdin; /dev/null ends it at once.
    // Fields 5 and 6 of /proc/PID/stat are the process group and the session.
    let probe = "cat; echo \"$BASH_VERSION\"; echo $$ $PPID; cut -d' ' -f5,6 /proc/$$/stat";
    // Sandboxed: bash is pid 2 under the namespace's init; its group and
    // session were made outside the namespace, so they read as 0 inside.
    let s = start(&[], &[]).await;
    let t = text(&s.run(json!({ "command": probe })).await);
    let lines: Vec<&str> = t.lines().collect();
    assert!(!lines[0].is_empty(), "not bash: {t}");
    assert_eq!(lines[1], "2 1", "{t}");
    assert_eq!(lines[2], "0 0", "{t}");
    // Full access: the supervisor (bash's parent) leads the group and session.
    let s = start(&["--sandbox", "full-access"], &[]).await;
    let t = text(&s.run(json!({ "command": probe })).await);
    let lines: Vec<&str> = t.lines().collect();
    let parent = lines[1].split(' ').nth(1).unwrap();
    assert_eq!(lines[2], format!("{parent} {parent}"), "{t}");
    assert_ne!(parent, s.pid.to_string(), "{t}");
}

#[tokio::test]
async fn environment_is_an_allow_list() {
    let s = start(
        &["--env-allow", "TERN_TEST_ALLOWED"],
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-canary"),
            ("TERN_TEST_ALLOWED", "visible-value"),
            ("TERN_TEST_OTHER", "hidden-value"),
            ("PAGER", "less"),
        ],
    )
    .await;
    let r = s.run(json!({"command": "env"})).await;
    let t = text(&r);
    assert!(!t.contains("sk-ant-canary"), "API key leaked: {t}");
    assert!(!t.contains("ANTHROPIC_API_KEY"), "{t}");
    assert!(!t.contains("hidden-value"), "{t}");
    assert!(t.contains("TERN_TEST_ALLOWED=visible-value"), "{t}");
    assert!(t.contains("PAGER=cat\n"), "{t}");
    assert!(t.contains("GIT_TERMINAL_PROMPT=0\n"), "{t}");
    assert!(t.contains("GIT_EDITOR=true\n"), "{t}");
    assert!(t.lines().any(|l| l.starts_with("PATH=")), "{t}");
}

#[tokio::test]
async fn tool_is_listed_with_honest_annotations_and_server_info() {
    let s = start(&[], &[]).await;
    let info = s.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "tern-shell");
    let tools = s.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, "run");
    let schema = serde_json::to_value(&*tool.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["command"]), "{schema}");
    assert!(schema["properties"]["timeout_sec"]["description"].is_string());
    let a = tool.annotations.as_ref().unwrap();
    assert_eq!(a.read_only_hint, Some(false));
    assert_eq!(a.destructive_hint, Some(true));
    assert_eq!(a.open_world_hint, Some(true));
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let s = start(&["--max-output-chars", "100"], &[]).await;
    let r = s.run(json!({"command": "seq 1 10000"})).await;
    let t = text(&r);
    assert!(t.starts_with("1\n2\n3\n"), "{t}");
    assert!(t.contains("9999\n10000\n"), "{t}");
    assert!(t.contains("characters omitted"), "{t}");
    assert!(t.contains("[output truncated:"), "{t}");
    assert_eq!(field(&r, "truncated"), true);
    assert!(t.len() < 400, "{} chars kept", t.len());
}

#[tokio::test]
async fn a_timeout_above_the_maximum_is_clamped_and_said() {
    let s = start(&["--timeout-max", "5"], &[]).await;
    let r = s.run(json!({"command": "true", "timeout_sec": 9999})).await;
    let t = text(&r);
    assert!(
        t.contains("timeout_sec 9999 is outside the allowed range; used 5 s"),
        "{t}"
    );
    assert_eq!(field(&r, "exit_code"), 0);
}

#[tokio::test]
async fn the_input_schema_is_portable_and_the_command_argument_is_named() {
    let s = start(&[], &[]).await;
    let tools = s.client.list_all_tools().await.unwrap();
    let tool = serde_json::to_value(&tools[0]).unwrap();
    // Optional arguments are plain optional properties: not required, no
    // `null` type, no `default: null`, no Rust-only formats such as `uint64`.
    let description = |p: &str| tool["inputSchema"]["properties"][p]["description"].clone();
    assert_eq!(
        tool["inputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "required": ["command"],
            "properties": {
                "command": {"type": "string", "description": description("command")},
                "cwd": {"type": "string", "description": description("cwd")},
                "timeout_sec": {"type": "integer", "minimum": 0, "description": description("timeout_sec")},
            }
        }),
        "{tool:#}"
    );
    assert!(description("cwd").is_string());
    assert_eq!(
        tool["_meta"],
        json!({"tern/command_arg": "command"}),
        "{tool:#}"
    );
}
