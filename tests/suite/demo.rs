//! `tern demo`: the shipped recording is what `tern run` records for the scripted session, and
//! `tern demo` replays it offline — no key, no config, any directory — leaving the fixed project.

use std::path::PathBuf;

use tern_e2e::record::{check_or_write, record};
use tern_model::mock::{MockResponse, script::AnthropicTurn};

fn demo_dir() -> PathBuf {
    tern_e2e::workspace_root().join("examples/demo")
}

/// A plausible session: look, run the check, find the cause, fix it, check again, report.
fn session() -> Vec<MockResponse> {
    vec![
        AnthropicTurn::with_usage(1850, 0, 3310)
            .text(&["I'll start by reading the script and its test."])
            .tool_use("toolu_01", "fs__read_file", &[r#"{"path":"median.sh"}"#])
            .tool_use("toolu_02", "fs__read_file", &[r#"{"path":"test.sh"}"#])
            .finish("tool_use"),
        AnthropicTurn::with_usage(620, 5160, 0)
            .text(&["Let me run the check to see what fails."])
            .tool_use("toolu_03", "shell__run", &[r#"{"command":"sh test.sh"}"#])
            .finish("tool_use"),
        AnthropicTurn::with_usage(240, 5780, 0)
            .text(&[
                "Two data sets fail, and both have numbers of different lengths. ",
                "`sort` without `-n` compares lines as text, so `100` sorts before `15` and ",
                "`9` after `88`: the middle element is not the median. Sorting numerically fixes it.",
            ])
            .tool_use(
                "toolu_04",
                "fs__edit_file",
                &[r#"{"path":"median.sh","old_string":"sort \"$1\" | awk","new_string":"sort -n \"$1\" | awk"}"#],
            )
            .finish("tool_use"),
        AnthropicTurn::with_usage(310, 6020, 0)
            .text(&["Now the check again."])
            .tool_use("toolu_05", "shell__run", &[r#"{"command":"sh test.sh"}"#])
            .finish("tool_use"),
        AnthropicTurn::with_usage(190, 6330, 0)
            .text(&[
                "Fixed. `median.sh` sorted the numbers as text (`sort`), which puts `100` before ",
                "`15`, so the middle value was wrong whenever the numbers had different lengths.\n\n",
                "- **Change:** `sort \"$1\"` → `sort -n \"$1\"` in `median.sh`\n",
                "- **Check:** `sh test.sh` — all four data sets pass\n",
            ])
            .finish("end_turn"),
    ]
}

#[tokio::test]
async fn the_demo_recording_is_what_tern_records_for_its_session() {
    let recorded = record(
        &demo_dir().join("median"),
        session(),
        &[
            "run",
            "The median script gives wrong answers for some inputs (`sh test.sh` fails). Find the bug and fix it.",
            "--mode",
            "accept-edits",
            "--allow",
            "shell__run(sh test.sh)",
        ],
        "/home/dev/median",
    )
    .await;
    assert_eq!(recorded.code, Some(0), "{}", recorded.stderr);
    let fixed = std::fs::read_to_string(recorded.env.dir.path().join("median.sh")).unwrap();
    assert!(fixed.contains("sort -n \"$1\" | awk"), "{fixed}");
    assert!(recorded.jsonl.contains("all passed"));
    assert!(
        !recorded
            .jsonl
            .contains(recorded.env.dir.path().to_str().unwrap())
    );
    check_or_write(&demo_dir().join("recording.jsonl"), &recorded.jsonl);
}

#[tokio::test]
async fn tern_demo_runs_offline_anywhere_and_leaves_the_fixed_project() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(tern_e2e::bin("tern"))
        .args(["demo", "--speed", "20"])
        .current_dir(elsewhere.path())
        .env("HOME", home.path())
        .env_remove("TERN_HOME")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TERN_LOG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It looks like a run: the calls, the diff, the check's output, the answer, the summary.
    for needle in [
        "⏺ fs__read_file(median.sh)",
        "⏺ shell__run(sh test.sh)",
        "FAIL  prices.txt: expected 12, got 15",
        "+sort -n \"$1\" | awk",
        "all passed",
        "Fixed.",
        "[run] success · 5 steps",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // The fixed project is left where it says, and its check passes.
    let line = stdout
        .lines()
        .find(|l| l.contains("The fixed project is in "))
        .unwrap_or_else(|| panic!("no project path in:\n{stdout}"));
    let dir = PathBuf::from(
        line.split("The fixed project is in ")
            .nth(1)
            .unwrap()
            .trim()
            .trim_end_matches(['.', ':']),
    );
    let check = std::process::Command::new("sh")
        .arg("test.sh")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    // The run was recorded in the default TERN_HOME under the temp HOME, like any run.
    assert!(home.path().join(".tern/runs").is_dir());
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}
