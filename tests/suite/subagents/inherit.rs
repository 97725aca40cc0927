//! A parent run's command line binds the sub-agents it delegates to (security round 3, finding 3):
//! `--deny`, `--ask`, `--config FILE`, `-c`, `--mode` and `--sandbox` given to `tern run` reach
//! every sub-run started through `agent__run`, which may only be narrower. Written as attacks: a
//! sub-agent tries to read a file its parent denied (or write where its parent may not), and
//! each test also runs the same script without the flag to show the attack works there.

use tern_e2e::run_env::{RunEnv, assert_exit};
use tern_model::mock::{MockResponse, RecordedRequest, script::AnthropicTurn};

use super::{goal_of, messages, tool_results};

const PARENT: &str = "Ask a sub-agent what the secret is.";
const CHILD: &str = "Read .env and tell me the secret.";
/// Not shaped like a secret, so the redactor leaves it: what reaches a model is the file itself.
const SECRET: &str = "bluebird-7f3a9c";

fn turn_calls(id: &str, tool: &str, args: &str) -> MockResponse {
    AnthropicTurn::new()
        .tool_use(id, tool, &[args])
        .finish("tool_use")
}

fn answer(text: &str) -> MockResponse {
    AnthropicTurn::new().text(&[text]).finish("end_turn")
}

fn at_step(
    env: &RunEnv,
    goal: &'static str,
    step: usize,
    respond: impl Fn() -> MockResponse + Send + Sync + 'static,
) {
    env.server.respond_when(
        move |r: &RecordedRequest| goal_of(r) == goal && messages(r) == 2 * step - 1,
        move |_| respond(),
    );
}

/// A parent that delegates once; a child that makes `call` at its first step.
fn script(env: &RunEnv, agent_args: &str, call: (&'static str, &'static str)) {
    env.add_servers(&format!(
        "[mcp_servers.agent]\nenabled = true\nargs = [{agent_args}]\n"
    ));
    std::fs::write(
        env.dir.path().join(".env"),
        format!("codename = {SECRET}\n"),
    )
    .unwrap();
    at_step(env, PARENT, 1, || {
        turn_calls(
            "p1",
            "agent__run",
            &serde_json::json!({ "goal": CHILD }).to_string(),
        )
    });
    let (tool, args) = call;
    at_step(env, CHILD, 1, move || turn_calls("c1", tool, args));
    at_step(env, CHILD, 2, || answer("done"));
    at_step(env, PARENT, 2, || answer("The sub-agent answered."));
}

/// What the child's model was given for its call, and whether it was an error.
fn child_result(env: &RunEnv) -> (String, bool) {
    let reqs = env.server.model_requests();
    let step2 = reqs
        .iter()
        .find(|r| goal_of(r) == CHILD && messages(r) == 3)
        .unwrap_or_else(|| {
            let seen: Vec<_> = reqs
                .iter()
                .map(|r| (goal_of(r), messages(r), tool_results(r)))
                .collect();
            panic!("no second request of the child; requests: {seen:?}")
        });
    let results = tool_results(step2);
    assert_eq!(results.len(), 1, "{results:?}");
    (results[0].1.clone(), results[0].2)
}

/// Whether the secret reached any model request (the child's or, through its answer, the
/// parent's).
fn leaked(env: &RunEnv) -> bool {
    env.server
        .model_requests()
        .iter()
        .any(|r| r.json().to_string().contains(SECRET))
}

const READ_ENV: (&str, &str) = ("fs__read_file", r#"{"path":".env"}"#);

async fn read_with(flags: &[&str]) -> (RunEnv, String, bool) {
    let env = RunEnv::new().await;
    // The agent server's own mode would let its sub-runs read anything.
    script(&env, r#""--mode", "yolo""#, READ_ENV);
    // The parent may delegate (its agent server is not read-only).
    let mut args = vec!["--allow", "agent__run"];
    args.extend(flags);
    args.extend(["run", PARENT]);
    let out = env.run(&args).await;
    assert_exit(&out, 0);
    let (text, is_error) = child_result(&env);
    (env, text, is_error)
}

#[tokio::test]
async fn without_a_flag_the_sub_agent_reads_the_file() {
    let (env, text, is_error) = read_with(&[]).await;
    assert!(!is_error && text.contains(SECRET), "{text}");
    assert!(leaked(&env));
}

#[tokio::test]
async fn a_parents_deny_binds_the_sub_agent() {
    let (env, text, is_error) = read_with(&["--deny", "fs__read_file(**/.env)"]).await;
    assert!(is_error && text.contains("permission denied"), "{text}");
    assert!(!leaked(&env));
}

#[tokio::test]
async fn a_parents_ask_binds_the_sub_agent() {
    // Headless, ask is deny.
    let (env, text, is_error) = read_with(&["--ask", "fs__read_file(**/.env)"]).await;
    assert!(is_error && text.contains("permission denied"), "{text}");
    assert!(!leaked(&env));
}

#[tokio::test]
async fn a_parents_config_file_binds_the_sub_agent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    std::fs::write(
        &file,
        "[permissions]\ndeny = [\"fs__read_file(**/.env)\"]\n",
    )
    .unwrap();
    let (env, text, is_error) = read_with(&["--config", file.to_str().unwrap()]).await;
    assert!(is_error && text.contains("permission denied"), "{text}");
    assert!(!leaked(&env));
}

#[tokio::test]
async fn a_parents_override_binds_the_sub_agent() {
    let (env, text, is_error) =
        read_with(&["-c", r#"permissions.deny=["fs__read_file(**/.env)"]"#]).await;
    assert!(is_error && text.contains("permission denied"), "{text}");
    assert!(!leaked(&env));
}

const WRITE: (&str, &str) = ("fs__write_file", r#"{"path":"planted.txt","content":"x"}"#);

#[tokio::test]
async fn a_parents_mode_is_the_loosest_a_sub_agent_may_have() {
    for (mode, written) in [("yolo", true), ("read-only", false)] {
        let env = RunEnv::new().await;
        script(&env, r#""--mode", "yolo""#, WRITE);
        let args = ["--mode", mode, "--allow", "agent__run", "run", PARENT];
        let out = env.run(&args).await;
        assert_exit(&out, 0);
        let (text, is_error) = child_result(&env);
        assert_eq!(
            env.dir.path().join("planted.txt").exists(),
            written,
            "{mode}: {text}"
        );
        assert_eq!(is_error, !written, "{mode}: {text}");
    }
}

#[tokio::test]
async fn a_parents_sandbox_is_the_loosest_a_sub_agents_shell_may_have() {
    const TOUCH: (&str, &str) = ("shell__run", r#"{"command":"touch planted.txt"}"#);
    for (flags, written) in [(&[][..], true), (&["--sandbox", "read-only"][..], false)] {
        let env = RunEnv::new().await;
        script(&env, r#""--mode", "yolo""#, TOUCH);
        let mut args = vec!["--mode", "yolo", "run"];
        args.extend(flags);
        args.push(PARENT);
        let out = env.run(&args).await;
        assert_exit(&out, 0);
        let (text, _) = child_result(&env);
        assert_eq!(
            env.dir.path().join("planted.txt").exists(),
            written,
            "{flags:?}: {text}"
        );
    }
}

/// The managed policy binds every sub-run too: each loads it (the agent server has tern's
/// environment, `TERN_MANAGED_CONFIG` included), whatever its own flags and mode say.
#[tokio::test]
async fn the_managed_policy_binds_the_sub_agent() {
    let env = RunEnv::new().await;
    script(&env, r#""--mode", "yolo""#, READ_ENV);
    let policy = env.home.path().join("managed.toml");
    std::fs::write(
        &policy,
        "[policy]\ndeny = [\"fs__read_file(**/.env)\"]\nsandbox = \"read-only\"\n",
    )
    .unwrap();
    let mut cmd = env.command(&["--allow", "agent__run", "run", PARENT]);
    cmd.env("TERN_MANAGED_CONFIG", &policy);
    let out = cmd.output().await.unwrap();
    assert_exit(&out, 0);
    let (text, is_error) = child_result(&env);
    assert!(is_error && text.contains("permission denied"), "{text}");
    assert!(!leaked(&env));
}

#[tokio::test]
async fn the_managed_sandbox_binds_a_sub_agents_shell() {
    const TOUCH: (&str, &str) = ("shell__run", r#"{"command":"touch planted.txt"}"#);
    let env = RunEnv::new().await;
    script(&env, r#""--mode", "yolo""#, TOUCH);
    let policy = env.home.path().join("managed.toml");
    std::fs::write(&policy, "[policy]\nsandbox = \"read-only\"\n").unwrap();
    let mut cmd = env.command(&["--mode", "yolo", "run", PARENT]);
    cmd.env("TERN_MANAGED_CONFIG", &policy);
    let out = cmd.output().await.unwrap();
    assert_exit(&out, 0);
    let (text, _) = child_result(&env);
    assert!(!env.dir.path().join("planted.txt").exists(), "{text}");
}
