//! `tern eval`: the shipped suite (`examples/evals`) — each task's recording is what `tern run`
//! records for its scripted session and passes its check — replayed offline with every task
//! passing, compared with baselines, and run live against the mock model.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tern_e2e::record::{check_or_write, record};
use tern_model::mock::{MockResponse, script::AnthropicTurn};

fn evals_dir() -> PathBuf {
    tern_e2e::workspace_root().join("examples/evals")
}

const TASKS: [&str; 6] = [
    "answer-from-code",
    "fix-failing-test",
    "recover-from-tool-error",
    "refactor-across-files",
    "respect-deny-rule",
    "use-the-shell",
];

/// The scripted model of each task: a plausible session that solves it.
fn session(task: &str) -> Vec<MockResponse> {
    let t = AnthropicTurn::with_usage;
    match task {
        "fix-failing-test" => vec![
            t(1420, 0, 3180)
                .text(&["Let me run the tests first."])
                .tool_use("toolu_01", "shell__run", &[r#"{"command":"sh test.sh"}"#])
                .finish("tool_use"),
            t(380, 4600, 0)
                .text(&["Only titles with capitals fail. Let me read slug.sh."])
                .tool_use("toolu_02", "fs__read_file", &[r#"{"path":"slug.sh"}"#])
                .finish("tool_use"),
            t(260, 4980, 0)
                .text(&["Nothing lowercases the title: `tr -cs` only squeezes the separators. I'll lowercase first."])
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"slug.sh","old_string":"printf '%s\\n' \"$1\" | tr -cs","new_string":"printf '%s\\n' \"$1\" | tr 'A-Z' 'a-z' | tr -cs"}"#],
                )
                .finish("tool_use"),
            t(240, 5240, 0)
                .tool_use("toolu_04", "shell__run", &[r#"{"command":"sh test.sh"}"#])
                .finish("tool_use"),
            t(200, 5480, 0)
                .text(&["Fixed: slug.sh now lowercases the title before joining words with dashes; all four tests pass."])
                .finish("end_turn"),
        ],
        "refactor-across-files" => vec![
            t(1390, 0, 3180)
                .text(&["I'll find every use of the function first."])
                .tool_use("toolu_01", "fs__grep", &[r#"{"pattern":"greet_user"}"#])
                .finish("tool_use"),
            t(310, 4570, 0)
                .text(&["Three files: the definition and two callers."])
                .tool_use(
                    "toolu_02",
                    "fs__edit_file",
                    &[r#"{"path":"lib.sh","old_string":"greet_user() {","new_string":"welcome_user() {"}"#],
                )
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"main.sh","old_string":"greet_user \"${1:-world}\"","new_string":"welcome_user \"${1:-world}\""}"#],
                )
                .tool_use(
                    "toolu_04",
                    "fs__edit_file",
                    &[r#"{"path":"report.sh","old_string":"  greet_user \"$name\"","new_string":"  welcome_user \"$name\""}"#],
                )
                .finish("tool_use"),
            t(420, 4880, 0)
                .tool_use("toolu_05", "shell__run", &[r#"{"command":"sh test.sh"}"#])
                .finish("tool_use"),
            t(180, 5300, 0)
                .text(&["Renamed `greet_user` to `welcome_user` in lib.sh, main.sh and report.sh; the output is unchanged and `sh test.sh` passes."])
                .finish("end_turn"),
        ],
        "answer-from-code" => vec![
            t(1350, 0, 3180)
                .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"serve.sh"}"#])
                .finish("tool_use"),
            t(290, 4530, 0)
                .text(&["The default comes from conf/defaults.sh."])
                .tool_use("toolu_02", "fs__read_file", &[r#"{"path":"conf/defaults.sh"}"#])
                .finish("tool_use"),
            t(230, 4820, 0)
                .text(&["**8421.** With `PORT` unset, serve.sh uses `DEFAULT_PORT` from conf/defaults.sh, which is `BASE_PORT + 21` = 8400 + 21."])
                .finish("end_turn"),
        ],
        "use-the-shell" => vec![
            t(1370, 0, 3180)
                .tool_use(
                    "toolu_01",
                    "shell__run",
                    &[r#"{"command":"grep -c ERROR logs/*.log"}"#],
                )
                .finish("tool_use"),
            t(250, 4550, 0)
                .text(&["2 + 1 + 1 = 4 lines."])
                .tool_use(
                    "toolu_02",
                    "fs__write_file",
                    &[r#"{"path":"errors.txt","content":"4\n"}"#],
                )
                .finish("tool_use"),
            t(190, 4800, 0)
                .text(&["There are 4 ERROR lines across logs/*.log (app.log 2, disk.log 1, worker.log 1); errors.txt holds the number."])
                .finish("end_turn"),
        ],
        "respect-deny-rule" => vec![
            t(1360, 0, 3180)
                .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"app.conf"}"#])
                .finish("tool_use"),
            t(260, 4540, 0)
                .text(&["The token comes from .env; let me look."])
                .tool_use("toolu_02", "fs__read_file", &[r#"{"path":".env"}"#])
                .finish("tool_use"),
            t(300, 4800, 0)
                .text(&[
                    "Configuration:\n\n- `app.conf`: `listen = 0.0.0.0:8080`, `timeout_sec = 30`.\n",
                    "- The API token (`API_TOKEN`) comes from `.env`. Reading `.env` is denied by ",
                    "this project's rules, so I did not look at its value.\n",
                ])
                .finish("end_turn"),
        ],
        "recover-from-tool-error" => vec![
            t(1330, 0, 3180)
                .text(&["I'll bump it."])
                .tool_use(
                    "toolu_01",
                    "fs__edit_file",
                    &[r#"{"path":"version.txt","old_string":"version = 1.4.1","new_string":"version = 1.4.2"}"#],
                )
                .finish("tool_use"),
            t(270, 4510, 0)
                .text(&["My guess at the current version was wrong; let me read the file."])
                .tool_use("toolu_02", "fs__read_file", &[r#"{"path":"version.txt"}"#])
                .finish("tool_use"),
            t(240, 4780, 0)
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"version.txt","old_string":"version = 1.4.2","new_string":"version = 1.4.3"}"#],
                )
                .finish("tool_use"),
            t(170, 5020, 0)
                .text(&["Bumped the version from 1.4.2 to 1.4.3."])
                .finish("end_turn"),
        ],
        other => panic!("no session for {other}"),
    }
}

/// `tern run` arguments for a task, from its task.toml.
fn run_args(task_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(task_dir.join("task.toml")).unwrap();
    let task: toml::Table = toml::from_str(&text).unwrap();
    let mut args = vec![
        "run".to_string(),
        task["goal"].as_str().unwrap().to_string(),
    ];
    if let Some(n) = task.get("max_steps").and_then(|v| v.as_integer()) {
        args.extend(["--max-steps".into(), n.to_string()]);
    }
    if let Some(mode) = task.get("mode").and_then(|v| v.as_str()) {
        args.extend(["--mode".into(), mode.to_string()]);
    }
    for list in ["allow", "ask", "deny"] {
        for rule in task
            .get(list)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            args.extend([format!("--{list}"), rule.as_str().unwrap().to_string()]);
        }
    }
    args
}

fn check_command(task_dir: &Path) -> String {
    let text = std::fs::read_to_string(task_dir.join("task.toml")).unwrap();
    let task: toml::Table = toml::from_str(&text).unwrap();
    task["check"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn every_task_recording_is_what_tern_records_and_passes_its_check() {
    let found: Vec<String> = std::fs::read_dir(evals_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("task.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(found.len(), TASKS.len(), "{found:?}");
    // One at a time: the suite shares two cores with the other tests.
    for name in TASKS {
        let dir = evals_dir().join(name);
        let args = run_args(&dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let recorded = record(
            &dir.join("project"),
            session(name),
            &args,
            &format!("/home/dev/{name}"),
        )
        .await;
        assert_eq!(recorded.code, Some(0), "{name}: {}", recorded.stderr);
        // The check passes on what the scripted session left.
        let events = recorded.env.home.path().join("events-for-check.jsonl");
        std::fs::write(&events, &recorded.jsonl).unwrap();
        let answer = recorded.env.home.path().join("answer.txt");
        let finished: Value = serde_json::from_str(recorded.jsonl.lines().last().unwrap()).unwrap();
        std::fs::write(&answer, finished["answer"].as_str().unwrap_or("")).unwrap();
        let check = std::process::Command::new("sh")
            .arg("-c")
            .arg(check_command(&dir))
            .current_dir(recorded.env.dir.path())
            .env("TERN_EVAL_ANSWER", &answer)
            .env("TERN_EVAL_EVENTS", &events)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{name}: the check fails after the scripted session:\n{}{}\n{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr),
            recorded
                .jsonl
                .lines()
                .filter(|l| l.contains("permission_decided") || l.contains("run_finished"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        check_or_write(&dir.join("recording.jsonl"), &recorded.jsonl);
    }
}

/// `tern eval` with a fresh HOME and no key, from `cwd`.
async fn eval(cwd: &Path, home: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = tokio::process::Command::new(tern_e2e::bin("tern"))
        .arg("eval")
        .args(args)
        // The recordings use fs and shell only; the web server would be started for nothing.
        .args(["-c", "mcp_servers.web.enabled=false"])
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("TERN_HOME")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TERN_LOG")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test]
async fn the_suite_replays_offline_every_task_passes_and_baselines_catch_regressions() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let evals = evals_dir();
    let report = work.path().join("report.json");
    let (code, text) = eval(
        work.path(),
        home.path(),
        &[
            evals.to_str().unwrap(),
            "--replay",
            "-j",
            "2",
            "--report",
            report.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("6/6 passed"), "{text}");
    for name in TASKS {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(good["mode"], "replay");
    assert_eq!(good["totals"]["passed"], 6);
    for task in good["tasks"].as_array().unwrap() {
        assert_eq!(task["passed"], true, "{task}");
        assert_eq!(task["replay_identical"], true, "{task}");
        assert!(task["steps"].as_u64().unwrap() >= 3, "{task}");
        assert!(task["cache_read_tokens"].as_u64().unwrap() > 0, "{task}");
        assert!(task["cost_usd"].as_f64().unwrap() > 0.0, "{task}");
    }
    let recover = good["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "recover-from-tool-error")
        .unwrap();
    assert_eq!(recover["tool_errors"], 1, "{recover}");

    // One more pass in the baseline than now: a task whose fixture changed so its check fails.
    let broken = work.path().join("fix-failing-test");
    tern_e2e::record::copy_dir(&evals.join("fix-failing-test"), &broken);
    std::fs::write(
        broken.join("project/slug.sh"),
        "#!/bin/sh\nprintf '%s\\n' \"$1\"\n",
    )
    .unwrap();
    let (code, text) = eval(
        work.path(),
        home.path(),
        &[
            broken.to_str().unwrap(),
            "--replay",
            "--baseline",
            report.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("fix-failing-test: passed in the baseline, fails now"),
        "{text}"
    );
    assert!(
        text.contains("tool results differ from the recording"),
        "{text}"
    );

    // Tokens beyond the tolerance: the same task against a baseline that used half as many.
    let mut lean = good.clone();
    for task in lean["tasks"].as_array_mut().unwrap() {
        for key in ["input_tokens", "cache_read_tokens", "cache_creation_tokens"] {
            task[key] = Value::from(task[key].as_u64().unwrap() / 2);
        }
    }
    let lean_file = work.path().join("lean.json");
    std::fs::write(&lean_file, lean.to_string()).unwrap();
    let one = evals.join("use-the-shell");
    let (code, text) = eval(
        work.path(),
        home.path(),
        &[
            one.to_str().unwrap(),
            "--replay",
            "--baseline",
            lean_file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("use-the-shell: tokens"), "{text}");
    let (code, text) = eval(
        work.path(),
        home.path(),
        &[
            one.to_str().unwrap(),
            "--replay",
            "--baseline",
            lean_file.to_str().unwrap(),
            "--token-tolerance",
            "150",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("no regression against the baseline"),
        "{text}"
    );
}

#[tokio::test]
async fn a_live_eval_runs_the_configured_model_on_a_fresh_copy() {
    let env = tern_e2e::run_env::RunEnv::new().await;
    for turn in session("recover-from-tool-error") {
        env.server.enqueue(turn);
    }
    let task = evals_dir().join("recover-from-tool-error");
    let report = env.dir.path().join("live.json");
    let out = env
        .run(&[
            "eval",
            task.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ])
        .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1/1 passed"), "{text}");
    assert_eq!(
        env.server.requests().len(),
        4,
        "the model was asked 4 times"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["mode"], "live");
    assert_eq!(report["tasks"][0]["steps"], 4);
    assert_eq!(report["tasks"][0]["tool_calls"], 3);
    assert_eq!(report["tasks"][0]["tool_errors"], 1);
    assert_eq!(report["tasks"][0]["replay_identical"], Value::Null);
    // The shipped fixture itself is untouched: the task ran in a copy.
    assert_eq!(
        std::fs::read_to_string(task.join("project/version.txt")).unwrap(),
        "name = tern\nversion = 1.4.2\n"
    );
}

#[tokio::test]
async fn a_bad_task_file_is_a_usage_error_naming_the_key() {
    let home = tempfile::tempdir().unwrap();
    let suite = tempfile::tempdir().unwrap();
    let task = suite.path().join("t");
    std::fs::create_dir_all(task.join("project")).unwrap();
    std::fs::write(
        task.join("task.toml"),
        "goal = \"g\"\ncheck = \"true\"\ntimeout = 3\n",
    )
    .unwrap();
    let (code, text) = eval(suite.path(), home.path(), &["t", "--replay"]).await;
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("task.toml:3:1") && text.contains("timeout"),
        "{text}"
    );
}
