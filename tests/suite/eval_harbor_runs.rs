//! `tern eval` on Harbor suites, run by run: `--repeat` gives pass@1 and pass^k, `--model A --model
//! B` compares configurations, `--export swebench` writes predictions, a task that names a
//! container is skipped cleanly without Docker, `tern eval convert` makes Harbor tasks of tern's
//! own, and `--trace-format atif` embeds sub-agents. (One task's verifier and trial: `eval_harbor.rs`.)

use std::path::{Path, PathBuf};

use serde_json::Value;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

use super::eval_harbor::{REWARD_IF_HELLO, eval, harbor_task, report, validate_atif};

/// The task the repeat and comparison tests run: write `done` to result.txt.
fn write_done_task(suite: &Path) -> PathBuf {
    harbor_task(
        suite,
        "write-done",
        "version = \"1.0\"\n",
        "Write done to result.txt.\n",
        &[],
        &[(
            "test.sh",
            "#!/bin/bash\n[ \"$(cat result.txt)\" = done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
        )],
        None,
    )
}

fn write_turns(content: &str) -> Vec<tern_model::mock::MockResponse> {
    vec![
        AnthropicTurn::with_usage(1000, 0, 2000)
            .tool_use(
                "toolu_01",
                "fs__write_file",
                &[&format!(r#"{{"path":"result.txt","content":"{content}"}}"#)],
            )
            .finish("tool_use"),
        AnthropicTurn::with_usage(100, 3000, 0)
            .text(&["Written."])
            .finish("end_turn"),
    ]
}

#[tokio::test]
async fn repeats_report_pass_at_1_and_pass_hat_k() {
    let env = RunEnv::new().await;
    let task = write_done_task(&env.dir.path().join("suite"));
    // The second of three repeats writes the wrong word.
    for content in ["done", "dome", "done"] {
        for turn in write_turns(content) {
            env.server.enqueue(turn);
        }
    }
    let report_file = env.dir.path().join("report.json");
    let (code, text) = eval(
        &env,
        &[
            task.to_str().unwrap(),
            "--repeat",
            "3",
            "--report",
            report_file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("× 3 repeats"), "{text}");
    assert!(
        text.contains("✓ write-done #1") && text.contains("✗ write-done #2"),
        "{text}"
    );
    assert!(text.contains("PASS^3"), "{text}");
    assert!(text.contains("0.67") && text.contains("FAIL"), "{text}");
    assert!(text.contains("0/1 0.00"), "{text}");
    let r = report(&report_file);
    assert_eq!(r["repeat"], 3);
    assert_eq!(r["tasks"].as_array().unwrap().len(), 3);
    let s = &r["summary"][0];
    assert_eq!(s["trials"], 3);
    assert_eq!(s["passed"], 2);
    assert!((s["pass_at_1"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(s["pass_hat_k"], false);

    // A baseline where all three passed: losing pass^3 is a regression.
    let mut all_pass = r.clone();
    for t in all_pass["tasks"].as_array_mut().unwrap() {
        t["passed"] = Value::Bool(true);
    }
    let base = env.dir.path().join("base.json");
    std::fs::write(&base, all_pass.to_string()).unwrap();
    for content in ["done", "done", "dome"] {
        for turn in write_turns(content) {
            env.server.enqueue(turn);
        }
    }
    let (code, text) = eval(
        &env,
        &[
            task.to_str().unwrap(),
            "--repeat",
            "3",
            "--baseline",
            base.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("write-done: pass^k lost: 3/3 passed in the baseline, 2/3 passed now"),
        "{text}"
    );
}

#[tokio::test]
async fn several_models_run_the_same_suite_side_by_side() {
    let env = RunEnv::new().await;
    let task = write_done_task(&env.dir.path().join("suite"));
    // One at a time, model-a's trial first: it passes, model-b's fails.
    for content in ["done", "nope"] {
        for turn in write_turns(content) {
            env.server.enqueue(turn);
        }
    }
    let report_file = env.dir.path().join("report.json");
    let (code, text) = eval(
        &env,
        &[
            task.to_str().unwrap(),
            "--model",
            "model-a",
            "--model",
            "model-b",
            "--report",
            report_file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("× 2 configurations"), "{text}");
    let table = &text[text.find("CONFIG").unwrap()..];
    for needle in [
        "model-a", "model-b", "PASS@1", "PASS^1", "1/1 1.00", "0/1 0.00",
    ] {
        assert!(table.contains(needle), "{needle} missing:\n{text}");
    }
    let models: Vec<String> = env
        .server
        .model_requests()
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["model"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(models, ["model-a", "model-a", "model-b", "model-b"]);
    let r = report(&report_file);
    let configs: Vec<&str> = r["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["config"].as_str().unwrap())
        .collect();
    assert_eq!(configs, ["model-a", "model-b"]);
    assert_eq!(r["configs"][0]["pass_hat_k"], 1.0);
    assert_eq!(r["configs"][1]["pass_hat_k"], 0.0);
    // Each configuration's trials have their own directories.
    let job = PathBuf::from(r["job_dir"].as_str().unwrap());
    assert!(
        job.join("model-a/write-done__1/agent/trajectory.json")
            .is_file()
    );
    assert!(
        job.join("model-b/write-done__1/agent/trajectory.json")
            .is_file()
    );
}

#[tokio::test]
async fn swebench_predictions_hold_the_workspace_diff() {
    let env = RunEnv::new().await;
    let task = harbor_task(
        &env.dir.path().join("suite"),
        "fix-greeting",
        "version = \"1.0\"\n[metadata]\ninstance_id = \"tern__demo-1\"\n",
        "Fix the greeting.\n",
        &[
            ("greet.sh", "#!/bin/sh\necho 'helo world'\n"),
            ("README", "demo\n"),
        ],
        &[(
            "test.sh",
            "#!/bin/bash\n[ \"$(sh greet.sh)\" = 'hello world' ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
        )],
        None,
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(1000, 0, 2000)
            .tool_use(
                "toolu_01",
                "fs__edit_file",
                &[r#"{"path":"greet.sh","old_string":"helo","new_string":"hello"}"#],
            )
            .tool_use(
                "toolu_02",
                "fs__write_file",
                &[r#"{"path":"NOTES.md","content":"fixed a typo\n"}"#],
            )
            .finish("tool_use"),
    );
    env.answer("Fixed the typo.");
    let (code, text) = eval(&env, &[task.to_str().unwrap(), "--export", "swebench"]).await;
    assert_eq!(code, Some(0), "{text}");
    let file = text
        .lines()
        .find_map(|l| l.strip_prefix("predictions: "))
        .unwrap_or_else(|| panic!("no predictions line:\n{text}"));
    let lines: Vec<Value> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    let p = &lines[0];
    assert_eq!(p["instance_id"], "tern__demo-1");
    assert!(
        p["model_name_or_path"]
            .as_str()
            .unwrap()
            .starts_with("tern-"),
        "{p}"
    );
    let patch = p["model_patch"].as_str().unwrap();
    assert_eq!(
        patch,
        "diff --git a/NOTES.md b/NOTES.md\nnew file mode 100644\n--- /dev/null\n+++ b/NOTES.md\n\
         @@ -0,0 +1 @@\n+fixed a typo\n\
         diff --git a/greet.sh b/greet.sh\n--- a/greet.sh\n+++ b/greet.sh\n@@ -1,2 +1,2 @@\n \
         #!/bin/sh\n-echo 'helo world'\n+echo 'hello world'\n"
    );
    // The patch applies to a pristine copy with git, as SWE-bench's harness applies it.
    let pristine = env.dir.path().join("pristine");
    tern_e2e::record::copy_dir(&task.join("environment"), &pristine);
    std::fs::write(pristine.join("model.patch"), patch).unwrap();
    let apply = std::process::Command::new("git")
        .args(["apply", "model.patch"])
        .current_dir(&pristine)
        .output()
        .unwrap();
    assert!(
        apply.status.success(),
        "{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(pristine.join("greet.sh")).unwrap(),
        "#!/bin/sh\necho 'hello world'\n"
    );
}

#[tokio::test]
async fn a_task_naming_a_container_is_skipped_without_docker_and_runs_with_local() {
    let env = RunEnv::new().await;
    let suite = env.dir.path().join("suite");
    harbor_task(
        &suite,
        "in-a-container",
        "version = \"1.0\"\n",
        "Write hello to greeting.txt.\n",
        &[(
            "Dockerfile",
            "FROM debian:bookworm-slim\nWORKDIR /app\nCOPY . /app\n",
        )],
        &[("test.sh", REWARD_IF_HELLO)],
        Some("#!/bin/bash\nls > /logs/agent/listing.txt\necho hello > greeting.txt\n"),
    );
    let mut cmd = env.command(&["eval", suite.to_str().unwrap(), "--oracle"]);
    let out = cmd
        .env("TERN_EVAL_DOCKER", "/nonexistent/docker")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "nothing ran:\n{text}");
    assert!(text.contains("- in-a-container (skipped)"), "{text}");
    assert!(text.contains("0/0 passed (1 skipped)"), "{text}");
    assert!(
        text.contains("skipped: the task names a container and no Docker here")
            && text.contains("hint: `--local`"),
        "{text}"
    );
    let report_file = env.dir.path().join("local.json");
    let mut cmd = env.command(&[
        "eval",
        suite.to_str().unwrap(),
        "--oracle",
        "--local",
        "--report",
        report_file.to_str().unwrap(),
    ]);
    let out = cmd
        .env("TERN_EVAL_DOCKER", "/nonexistent/docker")
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let r = report(&report_file);
    let trial = PathBuf::from(r["tasks"][0]["trial_dir"].as_str().unwrap());
    // The workspace is environment/ without the Dockerfile.
    assert_eq!(
        std::fs::read_to_string(trial.join("agent/listing.txt")).unwrap(),
        ""
    );
}

#[tokio::test]
async fn converted_tern_tasks_replay_as_harbor_tasks() {
    let env = RunEnv::new().await;
    let evals = tern_e2e::workspace_root().join("examples/evals");
    let dest = env.dir.path().join("converted");
    let (code, text) = eval(
        &env,
        &["convert", evals.to_str().unwrap(), dest.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("6 task(s) converted"), "{text}");
    assert!(dest.join("fix-failing-test/instruction.md").is_file());
    let (code, text) = eval(&env, &[dest.to_str().unwrap(), "--replay", "-j", "2"]).await;
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("6/6 passed"), "{text}");
    // Converting into an existing directory is a usage error.
    let (code, text) = eval(
        &env,
        &["convert", evals.to_str().unwrap(), dest.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("exists"), "{text}");
}

#[tokio::test]
async fn trace_format_atif_embeds_sub_agents_and_harbor_accepts_it() {
    let env = RunEnv::new().await;
    let (parent, child) = ("20261201-000000-parent", "20261201-000001-child1");
    let write = |id: &str, session: &str, events: &[Value]| {
        let dir = env.home.path().join("runs").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let lines: Vec<String> = events
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut e = e.clone();
                e["run_id"] = Value::from(id);
                e["session_id"] = Value::from(session);
                e["seq"] = Value::from(i + 1);
                e["ts"] = Value::from(format!("2026-12-01T00:00:0{i}.000Z"));
                e.to_string()
            })
            .collect();
        std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    };
    let finished = |answer: &str, cost: f64| {
        serde_json::json!({"type": "run_finished", "status": "success", "steps": 1,
            "duration_ms": 20, "input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 4,
            "cache_creation_tokens": 0, "cost_usd": cost, "answer": answer, "error": null})
    };
    write(
        child,
        "s-child",
        &[
            serde_json::json!({"type": "run_started", "goal": "count the files",
                "model": "claude-haiku-4-5", "provider": "anthropic", "servers": ["fs"],
                "cwd": "/w", "parent_run_id": parent}),
            serde_json::json!({"type": "model_response", "step": 1, "stop_reason": "end_turn",
                "input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 4,
                "cache_creation_tokens": 0, "latency_ms": 1, "request_id": null,
                "text": "3 files", "tool_calls": 0}),
            finished("3 files", 0.002),
        ],
    );
    write(
        parent,
        "s-parent",
        &[
            serde_json::json!({"type": "run_started", "goal": "how many files?",
                "model": "claude-sonnet-4-5", "provider": "anthropic", "servers": ["agent"],
                "cwd": "/w"}),
            serde_json::json!({"type": "model_response", "step": 1, "stop_reason": "tool_use",
                "input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 4,
                "cache_creation_tokens": 0, "latency_ms": 1, "request_id": null, "text": "",
                "tool_calls": 1, "calls": [{"id": "c1", "name": "agent__run",
                "arguments": {"goal": "count the files"}}]}),
            serde_json::json!({"type": "tool_call_finished", "call_id": "c1",
                "tool": "agent__run", "is_error": false, "error_type": null, "duration_ms": 9,
                "summary": "3 files",
                "output": format!("3 files\n\n[sub-agent run {child} · success · 1 step(s)]"),
                "diff": null}),
            finished("There are 3 files.", 0.001),
        ],
    );
    let out = env
        .run(&["trace", "20261201-000000", "--format", "atif"])
        .await;
    tern_e2e::run_env::assert_exit(&out, 0);
    let file = env.dir.path().join("trajectory.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trajectory_id"], parent);
    assert_eq!(v["subagent_trajectories"][0]["trajectory_id"], child);
    assert_eq!(
        v["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"][0]["trajectory_id"],
        child
    );
    validate_atif(&file);
}
