//! The shipped Terminal-Bench-style suite (`examples/evals-tb`, Harbor's task format): each
//! task's recording is what `tern run` records for its scripted session, the suite replays
//! offline with every task passing and every tool result identical, each task's reference
//! solution passes its verifier, and no verifier passes the untouched workspace.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tern_e2e::{
    record::{check_or_write, copy_dir, record},
    run_env::RunEnv,
};
use tern_model::mock::{MockResponse, script::AnthropicTurn};

fn suite_dir() -> PathBuf {
    tern_e2e::workspace_root().join("examples/evals-tb")
}

const TASKS: [&str; 11] = [
    "apply-the-patch",
    "errors-by-service",
    "extract-shared-function",
    "fix-python-median",
    "fix-the-build",
    "git-first-commit",
    "hottest-city",
    "json-to-csv",
    "list-large-files",
    "rename-env-var",
    "sed-config-migration",
];

fn shell(id: &str, command: &str) -> (String, String) {
    (
        id.to_string(),
        serde_json::json!({ "command": command }).to_string(),
    )
}

/// The scripted model of each task: a plausible session that solves it.
fn session(task: &str) -> Vec<MockResponse> {
    let t = AnthropicTurn::with_usage;
    let call = |turn: AnthropicTurn, (id, args): (String, String), tool: &str| {
        turn.tool_use(&id, tool, &[&args])
    };
    match task {
        "errors-by-service" => vec![
            call(
                t(1410, 0, 3260).text(&["Let me look at the log's format."]),
                shell("toolu_01", "head -n 3 app.log"),
                "shell__run",
            )
            .finish("tool_use"),
            call(
                t(290, 4670, 0).text(&["The level is the second field, the service the third."]),
                shell(
                    "toolu_02",
                    "awk '$2==\"ERROR\"{n[$3]++} END{for(s in n) print s\",\"n[s]}' app.log | sort -t, -k2,2nr -k1,1 | { echo service,errors; cat; } > errors.csv && cat errors.csv",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(210, 4960, 0)
                .text(&["errors.csv lists db (3), api (2) and worker (1)."])
                .finish("end_turn"),
        ],
        "fix-the-build" => vec![
            call(
                t(1400, 0, 3260).text(&["Let me see how the build fails."]),
                shell("toolu_01", "make 2>&1 | grep -E 'undefined reference|Error' | head -n 3"),
                "shell__run",
            )
            .finish("tool_use"),
            t(320, 4660, 0)
                .text(&["`sqrt` is in libm and the link line does not ask for it. I'll add -lm."])
                .tool_use(
                    "toolu_02",
                    "fs__edit_file",
                    &[r#"{"path":"Makefile","old_string":"-o $@ main.o geometry.o","new_string":"-o $@ main.o geometry.o -lm"}"#],
                )
                .finish("tool_use"),
            call(
                t(260, 4980, 0),
                shell("toolu_03", "make >/dev/null && ./hypot 3 4"),
                "shell__run",
            )
            .finish("tool_use"),
            t(190, 5240, 0)
                .text(&["Fixed the Makefile: the link step now passes -lm; `./hypot 3 4` prints 5."])
                .finish("end_turn"),
        ],
        "git-first-commit" => vec![
            call(
                t(1420, 0, 3260),
                shell(
                    "toolu_01",
                    "git init -q -b main && git add -A && git -c user.name=tern -c user.email=tern@example.com commit -q -m 'Initial import' && git branch release && git log --all --format='%s%d' && git ls-files",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(240, 4680, 0)
                .text(&["Committed the three files as `Initial import` on main; `release` points at it."])
                .finish("end_turn"),
        ],
        "apply-the-patch" => vec![
            call(
                t(1380, 0, 3260),
                shell("toolu_01", "patch -p1 < fix.patch && rm fix.patch && sh check.sh"),
                "shell__run",
            )
            .finish("tool_use"),
            t(200, 4640, 0)
                .text(&["Applied fix.patch (the greeting's typo) and removed it; check.sh prints ok."])
                .finish("end_turn"),
        ],
        "rename-env-var" => vec![
            t(1400, 0, 3260)
                .tool_use("toolu_01", "fs__grep", &[r#"{"pattern":"APP_PORT"}"#])
                .finish("tool_use"),
            t(330, 4660, 0)
                .text(&["Three files use it."])
                .tool_use(
                    "toolu_02",
                    "fs__edit_file",
                    &[r#"{"path":"lib/config.sh","old_string":"APP_PORT","new_string":"SERVICE_PORT","replace_all":true}"#],
                )
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"README.md","old_string":"`APP_PORT`","new_string":"`SERVICE_PORT`"}"#],
                )
                .tool_use(
                    "toolu_04",
                    "fs__edit_file",
                    &[r#"{"path":"deploy/env.sh","old_string":"export APP_PORT=80","new_string":"export SERVICE_PORT=80"}"#],
                )
                .finish("tool_use"),
            call(
                t(280, 5010, 0),
                shell("toolu_05", "SERVICE_PORT=9000 sh serve.sh && sh serve.sh"),
                "shell__run",
            )
            .finish("tool_use"),
            t(200, 5300, 0)
                .text(&["Renamed APP_PORT to SERVICE_PORT in lib/config.sh, README.md and deploy/env.sh."])
                .finish("end_turn"),
        ],
        "json-to-csv" => vec![
            t(1390, 0, 3260)
                .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"users.json"}"#])
                .finish("tool_use"),
            call(
                t(350, 4650, 0).text(&["Python's csv module will quote the name with a comma."]),
                shell(
                    "toolu_02",
                    "python3 -c \"import csv, json; u = sorted((x for x in json.load(open('users.json')) if x['active']), key=lambda x: x['id']); w = csv.writer(open('users.csv', 'w', newline=''), lineterminator='\\n'); w.writerow(['id', 'name', 'email']); [w.writerow([x['id'], x['name'], x['email']]) for x in u]\" && cat users.csv",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(210, 5010, 0)
                .text(&["users.csv has the three active users, sorted by id."])
                .finish("end_turn"),
        ],
        "fix-python-median" => vec![
            call(
                t(1400, 0, 3260),
                shell(
                    "toolu_01",
                    "python3 -B -m unittest 2>&1 | grep -E '^(FAIL|ERROR|AssertionError)'",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(300, 4660, 0)
                .tool_use("toolu_02", "fs__read_file", &[r#"{"path":"stats.py"}"#])
                .finish("tool_use"),
            t(330, 4960, 0)
                .text(&["For an even count the middle pair is at n//2 - 1 and n//2."])
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"stats.py","old_string":"return (s[n // 2] + s[n // 2 + 1]) / 2","new_string":"return (s[n // 2 - 1] + s[n // 2]) / 2"}"#],
                )
                .finish("tool_use"),
            call(
                t(260, 5290, 0),
                shell("toolu_04", "python3 -B -m unittest 2>&1 | tail -n 1"),
                "shell__run",
            )
            .finish("tool_use"),
            t(190, 5550, 0)
                .text(&["Fixed median's even case in stats.py; the tests pass."])
                .finish("end_turn"),
        ],
        "extract-shared-function" => vec![
            t(1410, 0, 3260)
                .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"backup.sh"}"#])
                .finish("tool_use"),
            t(380, 4670, 0)
                .text(&["I'll move log_line into lib/log.sh and source it relative to each script."])
                .tool_use(
                    "toolu_02",
                    "fs__write_file",
                    &[r#"{"path":"lib/log.sh","content":"log_line() {\n  printf '[%s] %s\\n' \"$1\" \"$2\"\n}\n"}"#],
                )
                .tool_use(
                    "toolu_03",
                    "fs__edit_file",
                    &[r#"{"path":"backup.sh","old_string":"log_line() {\n  printf '[%s] %s\\n' \"$1\" \"$2\"\n}\n","new_string":". \"$(dirname \"$0\")/lib/log.sh\"\n"}"#],
                )
                .tool_use(
                    "toolu_04",
                    "fs__edit_file",
                    &[r#"{"path":"cleanup.sh","old_string":"log_line() {\n  printf '[%s] %s\\n' \"$1\" \"$2\"\n}\n","new_string":". \"$(dirname \"$0\")/lib/log.sh\"\n"}"#],
                )
                .finish("tool_use"),
            call(
                t(300, 5060, 0),
                shell("toolu_05", "sh backup.sh && sh cleanup.sh"),
                "shell__run",
            )
            .finish("tool_use"),
            t(200, 5370, 0)
                .text(&["log_line now lives in lib/log.sh; both scripts source it and print as before."])
                .finish("end_turn"),
        ],
        "list-large-files" => vec![
            call(
                t(1400, 0, 3260),
                shell(
                    "toolu_01",
                    "find data -type f -size +1024c | sort > big.txt && cat big.txt",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(210, 4660, 0)
                .text(&["big.txt lists the three files over 1 KiB."])
                .finish("end_turn"),
        ],
        "hottest-city" => vec![
            t(1390, 0, 3260)
                .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"readings.csv"}"#])
                .finish("tool_use"),
            t(300, 4650, 0)
                .text(&["Averages: Oslo 5.33, Lima 19.5, Cairo 22.5."])
                .tool_use(
                    "toolu_02",
                    "fs__write_file",
                    &[r#"{"path":"answer.txt","content":"Cairo\n"}"#],
                )
                .finish("tool_use"),
            t(180, 4950, 0)
                .text(&["Cairo has the highest average temperature (22.5 °C)."])
                .finish("end_turn"),
        ],
        "sed-config-migration" => vec![
            call(
                t(1410, 0, 3260),
                shell("toolu_01", "head -n 20 conf/*.conf"),
                "shell__run",
            )
            .finish("tool_use"),
            call(
                t(330, 4670, 0).text(&["Only `key: value` lines change; comments and blanks stay."]),
                shell(
                    "toolu_02",
                    "sed -i -E 's/^([A-Za-z_][A-Za-z0-9_]*): (.*)$/\\1 = \\2/' conf/*.conf && cat conf/app.conf conf/db.conf",
                ),
                "shell__run",
            )
            .finish("tool_use"),
            t(200, 5000, 0)
                .text(&["Rewrote conf/app.conf and conf/db.conf to `key = value`; conf/README is untouched."])
                .finish("end_turn"),
        ],
        other => panic!("no session for {other}"),
    }
}

/// The goal as Harbor gives it: `instruction.md` without its trailing newline.
fn goal(task: &Path) -> String {
    std::fs::read_to_string(task.join("instruction.md"))
        .unwrap()
        .trim_end()
        .to_string()
}

#[tokio::test]
async fn every_tb_recording_is_what_tern_records_for_its_session() {
    let found: Vec<String> = std::fs::read_dir(suite_dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("task.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(found.len(), TASKS.len(), "{found:?}");
    // One at a time: the suite shares two cores with the other tests.
    for name in TASKS {
        let dir = suite_dir().join(name);
        let goal = goal(&dir);
        let recorded = record(
            &dir.join("environment"),
            session(name),
            &["run", &goal, "--mode", "yolo"],
            &format!("/home/dev/{name}"),
        )
        .await;
        assert_eq!(recorded.code, Some(0), "{name}: {}", recorded.stderr);
        check_or_write(&dir.join("recording.jsonl"), &recorded.jsonl);
    }
}

async fn eval(env: &RunEnv, args: &[&str]) -> (Option<i32>, String) {
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

#[tokio::test]
async fn the_tb_suite_replays_offline_with_every_task_passing() {
    let env = RunEnv::new().await;
    let report = env.dir.path().join("report.json");
    let suite = suite_dir();
    let (code, text) = eval(
        &env,
        &[
            suite.to_str().unwrap(),
            "--replay",
            "-j",
            "2",
            "--report",
            report.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("11/11 passed"), "{text}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for task in r["tasks"].as_array().unwrap() {
        assert_eq!(task["passed"], true, "{task}");
        assert_eq!(task["replay_identical"], true, "{task}");
        assert_eq!(task["rewards"]["reward"], 1.0, "{task}");
        let trial = PathBuf::from(task["trial_dir"].as_str().unwrap());
        assert!(trial.join("agent/trajectory.json").is_file(), "{task}");
    }
    let json = r["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json-to-csv")
        .unwrap();
    assert_eq!(
        json["rewards"],
        serde_json::json!({"reward": 1.0, "header": 1.0, "rows": 1.0, "order": 1.0})
    );
    // One trajectory of the suite through Harbor's own validator.
    let trial = PathBuf::from(json["trial_dir"].as_str().unwrap());
    super::eval_harbor::validate_atif(&trial.join("agent/trajectory.json"));
}

#[tokio::test]
async fn every_tb_solution_passes_and_no_verifier_passes_the_untouched_workspace() {
    let env = RunEnv::new().await;
    let (code, text) = eval(
        &env,
        &[suite_dir().to_str().unwrap(), "--oracle", "-j", "2"],
    )
    .await;
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("11/11 passed"), "{text}");
    // The same tasks with solutions that do nothing: every verifier must fail.
    let nop = env.dir.path().join("nop");
    copy_dir(&suite_dir(), &nop);
    for name in TASKS {
        std::fs::write(
            nop.join(name).join("solution/solve.sh"),
            "#!/bin/bash\ntrue\n",
        )
        .unwrap();
    }
    let (code, text) = eval(&env, &[nop.to_str().unwrap(), "--oracle", "-j", "2"]).await;
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("0/11 passed"), "{text}");
}
