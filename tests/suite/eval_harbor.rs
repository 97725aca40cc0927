//! `tern eval` on Harbor task directories: the verifier runs as Harbor runs it (tests copied in
//! after the agent, `/logs/verifier/reward.{txt,json}`, `test-stdout.txt`, its timeout), the
//! trial's directory has the run as an ATIF trajectory, `--repeat` gives pass@1 and pass^k,
//! `--model A --model B` compares configurations, `--export swebench` writes predictions, a
//! task that names a container is skipped cleanly without Docker, and `tern eval convert`
//! makes Harbor tasks of tern's own.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tern_e2e::run_env::RunEnv;
use tern_model::mock::script::AnthropicTurn;

/// Writes a Harbor task: `task.toml`, `instruction.md`, `environment/` files, `tests/` files
/// (`test.sh` among them), `solution/solve.sh` when given.
pub(crate) fn harbor_task(
    suite: &Path,
    name: &str,
    toml: &str,
    instruction: &str,
    environment: &[(&str, &str)],
    tests: &[(&str, &str)],
    solve: Option<&str>,
) -> PathBuf {
    let dir = suite.join(name);
    let write = |rel: String, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("task.toml".into(), toml);
    write("instruction.md".into(), instruction);
    std::fs::create_dir_all(dir.join("environment")).unwrap();
    for (rel, text) in environment {
        write(format!("environment/{rel}"), text);
    }
    for (rel, text) in tests {
        write(format!("tests/{rel}"), text);
    }
    if let Some(s) = solve {
        write("solution/solve.sh".into(), s);
    }
    dir
}

/// `tern eval ARGS` in `env`, returning the exit code and stdout + stderr.
pub(crate) async fn eval(env: &RunEnv, args: &[&str]) -> (Option<i32>, String) {
    let out = env.run(&[&["eval"], args].concat()).await;
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

pub(crate) fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub(crate) const REWARD_IF_HELLO: &str = "#!/bin/bash\n\
    echo \"verifier in $(pwd)\"\n\
    if [ \"$(cat greeting.txt 2>/dev/null)\" = hello ]; then echo 1 > /logs/verifier/reward.txt; \
    else echo 0 > /logs/verifier/reward.txt; fi\n";

#[tokio::test]
async fn harbor_verifiers_run_as_harbor_runs_them() {
    let env = RunEnv::new().await;
    let suite = env.dir.path().join("suite");
    // Passes: the solution writes what the test wants, in the workdir the test runs in.
    harbor_task(
        &suite,
        "passing",
        "version = \"1.0\"\n[metadata]\ncategory = \"shell\"\n",
        "Write hello to greeting.txt.\n",
        &[("README", "a task\n")],
        &[("test.sh", REWARD_IF_HELLO)],
        Some("#!/bin/bash\necho hello > greeting.txt\n"),
    );
    // Fails: the solution is wrong; the reward is 0.
    harbor_task(
        &suite,
        "failing",
        "version = \"1.0\"\n",
        "Write hello to greeting.txt.\n",
        &[],
        &[("test.sh", REWARD_IF_HELLO)],
        Some("#!/bin/bash\necho goodbye > greeting.txt\n"),
    );
    // The verifier hangs past [verifier] timeout_sec.
    harbor_task(
        &suite,
        "verifier-timeout",
        "version = \"1.0\"\n[verifier]\ntimeout_sec = 1.0\n",
        "Nothing.\n",
        &[],
        &[(
            "test.sh",
            "#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n",
        )],
        Some("#!/bin/bash\ntrue\n"),
    );
    // Several rewards in reward.json, one of them partial.
    harbor_task(
        &suite,
        "reward-json",
        "version = \"1.0\"\n",
        "Nothing.\n",
        &[],
        &[(
            "test.sh",
            "#!/bin/bash\necho '{\"tests\": 1, \"style\": 0.5, \"lint\": 1}' > /logs/verifier/reward.json\n",
        )],
        Some("#!/bin/bash\ntrue\n"),
    );
    // The verifier's own files come with it (copied to /tests after the agent ran) and its
    // [verifier] env reaches it, `${VAR:-default}` resolved.
    harbor_task(
        &suite,
        "tests-files",
        "version = \"1.0\"\n[verifier]\nenv = { EXPECTED_FILE = \"${TERN_TEST_UNSET_VAR:-/tests/expected.txt}\" }\n",
        "Copy the numbers.\n",
        &[("numbers.txt", "1\n2\n3\n")],
        &[
            (
                "test.sh",
                "#!/bin/bash\nls -la /tests\nif diff out.txt \"$EXPECTED_FILE\"; then echo 1 > /logs/verifier/reward.txt; \
                 else echo 0 > /logs/verifier/reward.txt; fi\n",
            ),
            ("expected.txt", "3\n2\n1\n"),
        ],
        Some("#!/bin/bash\ntac numbers.txt > out.txt\n"),
    );
    let report_file = env.dir.path().join("report.json");
    let (code, text) = eval(
        &env,
        &[
            suite.to_str().unwrap(),
            "--oracle",
            "-j",
            "2",
            "--report",
            report_file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(1), "two tasks fail:\n{text}");
    assert!(text.contains("2/5 passed"), "{text}");
    let r = report(&report_file);
    assert_eq!(r["mode"], "oracle");
    let task = |name: &str| -> Value {
        r["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {r}"))
            .clone()
    };
    let passing = task("passing");
    assert_eq!(passing["passed"], true, "{passing}");
    assert_eq!(passing["kind"], "shell");
    assert_eq!(passing["rewards"]["reward"], 1.0);
    let trial = PathBuf::from(passing["trial_dir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(trial.join("verifier/reward.txt")).unwrap(),
        "1\n"
    );
    // The verifier ran in Harbor's workdir, with its stdout where Harbor keeps it.
    assert_eq!(
        std::fs::read_to_string(trial.join("verifier/test-stdout.txt")).unwrap(),
        "verifier in /app\n"
    );
    assert!(trial.join("result.json").is_file());

    let failing = task("failing");
    assert_eq!(failing["passed"], false);
    assert_eq!(failing["rewards"]["reward"], 0.0);
    assert!(
        failing["error"].as_str().unwrap().contains("reward 0"),
        "{failing}"
    );

    let timeout = task("verifier-timeout");
    assert_eq!(timeout["passed"], false);
    assert!(
        timeout["error"]
            .as_str()
            .unwrap()
            .contains("the verifier did not finish in 1 s ([verifier] timeout_sec)"),
        "{timeout}"
    );
    assert!(
        timeout["duration_ms"].as_u64().unwrap() < 10_000,
        "the hung verifier was killed: {timeout}"
    );

    let rewards = task("reward-json");
    assert_eq!(rewards["rewards"]["tests"], 1.0);
    assert_eq!(rewards["rewards"]["style"], 0.5);
    assert_eq!(rewards["rewards"]["lint"], 1.0);
    assert_eq!(
        rewards["passed"], false,
        "no `reward` key: every key must be 1"
    );
    assert!(
        rewards["error"]
            .as_str()
            .unwrap()
            .contains("lint=1, style=0.5, tests=1"),
        "{rewards}"
    );

    let files = task("tests-files");
    assert_eq!(files["passed"], true, "{files}");
    let stdout = std::fs::read_to_string(
        PathBuf::from(files["trial_dir"].as_str().unwrap()).join("verifier/test-stdout.txt"),
    )
    .unwrap();
    assert!(
        stdout.contains("expected.txt") && stdout.contains("test.sh"),
        "{stdout}"
    );
    // The shipped tasks themselves are untouched: every trial worked on a copy.
    assert!(!suite.join("passing/environment/greeting.txt").exists());
}

#[tokio::test]
async fn the_agent_runs_before_the_tests_exist_and_leaves_an_atif_trajectory() {
    let env = RunEnv::new().await;
    let suite = env.dir.path().join("suite");
    let task = harbor_task(
        &suite,
        "sort-numbers",
        "version = \"1.0\"\n[agent]\ntimeout_sec = 60\n",
        "Sort numbers.txt in reverse into out.txt.\n",
        &[("numbers.txt", "1\n2\n3\n")],
        &[
            (
                "test.sh",
                "#!/bin/bash\nif diff out.txt /tests/expected.txt; then echo 1 > /logs/verifier/reward.txt; \
                 else echo 0 > /logs/verifier/reward.txt; fi\n",
            ),
            ("expected.txt", "3\n2\n1\n"),
        ],
        None,
    );
    // The model peeks for the tests first: they are not there while the agent runs.
    env.server.enqueue(
        AnthropicTurn::with_usage(1200, 0, 3000)
            .text(&["Let me look for the tests."])
            .tool_use(
                "toolu_01",
                "shell__run",
                &[r#"{"command":"ls /tests 2>&1; ls"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(300, 4200, 0)
            .tool_use(
                "toolu_02",
                "shell__run",
                &[r#"{"command":"sort -r numbers.txt > out.txt"}"#],
            )
            .finish("tool_use"),
    );
    env.server.enqueue(
        AnthropicTurn::with_usage(200, 4500, 0)
            .text(&["out.txt holds the numbers in reverse."])
            .finish("end_turn"),
    );
    let report_file = env.dir.path().join("report.json");
    let (code, text) = eval(
        &env,
        &[
            task.to_str().unwrap(),
            "--report",
            report_file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    let r = report(&report_file);
    let t = &r["tasks"][0];
    assert_eq!(t["passed"], true, "{t}");
    assert_eq!(t["steps"], 3);
    let trial = PathBuf::from(t["trial_dir"].as_str().unwrap());
    let trajectory: Value = serde_json::from_str(
        &std::fs::read_to_string(trial.join("agent/trajectory.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(trajectory["schema_version"], "ATIF-v1.7");
    assert_eq!(trajectory["trajectory_id"], t["run_id"]);
    let steps = trajectory["steps"].as_array().unwrap();
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(
        steps[0]["message"],
        "Sort numbers.txt in reverse into out.txt."
    );
    let peek = steps[1]["observation"]["results"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        peek.contains("No such file or directory") && peek.contains("numbers.txt"),
        "the agent saw no /tests: {peek}"
    );
    assert_eq!(steps[3]["message"], "out.txt holds the numbers in reverse.");
    assert_eq!(trajectory["final_metrics"]["total_prompt_tokens"], 13_400);
    assert_eq!(
        std::fs::read_to_string(trial.join("agent/answer.txt")).unwrap(),
        "out.txt holds the numbers in reverse."
    );
    assert!(trial.join("agent/events.jsonl").is_file());
    // Harbor's own validator accepts it.
    validate_atif(&trial.join("agent/trajectory.json"));
}

/// Validates an ATIF file with Harbor's `TrajectoryValidator` (the `harbor` package from PyPI,
/// in `.deps/harbor-venv`).
pub fn validate_atif(file: &Path) {
    let python = tern_e2e::dep("harbor-venv/bin/python");
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import sys\n\
             from harbor.utils.trajectory_validator import TrajectoryValidator\n\
             v = TrajectoryValidator()\n\
             ok = v.validate(sys.argv[1])\n\
             print('\\n'.join(v.errors))\n\
             sys.exit(0 if ok else 1)\n",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "Harbor's validator refuses {}:\n{}{}",
        file.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
