//! Eval harness benchmark (issue 22): what `tern eval` costs per trial beyond the agent's run,
//! on the shipped Terminal-Bench-style suite (`examples/evals-tb`) replayed from its
//! recordings — the workspace copy, the Harbor verifier in its own root (`/app`, `/tests`,
//! `/logs`), the ATIF trajectory, the trial's files — and the suite's wall time with `-j 1` and
//! `-j 2`. The overhead is each trial's time minus its agent's run (`duration_ms - agent_ms` of
//! the report); the agent's run in a replay is the tool servers and the tools, no model.
//! Not a timed test: prints a table of medians.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench eval`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use serde_json::Value;
use tern_e2e::{median, release_bin, workspace_root};

const RUNS: usize = 3;
/// Goal: harness overhead per task (setup + verifier + teardown, the model excluded).
const GOAL_MS: f64 = 150.0;

/// One `tern eval --replay` of the suite: (wall ms, per-trial overheads ms, per-trial agent ms).
fn run_suite(jobs: usize) -> (f64, Vec<f64>, Vec<f64>) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n",
    )
    .unwrap();
    let report = home.path().join("report.json");
    let suite = workspace_root().join("examples/evals-tb");
    let started = Instant::now();
    let out = std::process::Command::new(release_bin("tern"))
        .args(["eval", suite.to_str().unwrap(), "--replay", "-j"])
        .arg(jobs.to_string())
        .arg("--report")
        .arg(&report)
        .current_dir(home.path())
        .env("TERN_HOME", home.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut overhead = Vec::new();
    let mut agent = Vec::new();
    for t in r["tasks"].as_array().unwrap() {
        let total = t["duration_ms"].as_f64().unwrap();
        let a = t["agent_ms"].as_f64().unwrap();
        overhead.push(total - a);
        agent.push(a);
    }
    (wall, overhead, agent)
}

fn main() {
    let mut rows = Vec::new();
    let mut all_overheads = Vec::new();
    for jobs in [1, 2] {
        let mut walls = Vec::new();
        let mut agents = Vec::new();
        for _ in 0..RUNS {
            let (wall, overhead, agent) = run_suite(jobs);
            walls.push(wall);
            if jobs == 1 {
                all_overheads.extend(overhead);
            }
            agents.extend(agent);
        }
        rows.push((jobs, median(walls), median(agents)));
    }
    let tasks = std::fs::read_dir(workspace_root().join("examples/evals-tb"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("task.toml").is_file())
        .count();
    println!("tern eval examples/evals-tb --replay ({tasks} tasks), median of {RUNS} runs\n");
    println!("| {:<28} | {:>12} |", "what", "median");
    println!("|{:-<30}|{:->14}|", "", "");
    let overhead = median(all_overheads.clone());
    let worst = all_overheads.iter().cloned().fold(0.0, f64::max);
    println!(
        "| {:<28} | {:>9.1} ms |",
        "harness overhead per task", overhead
    );
    println!("| {:<28} | {:>9.1} ms |", "  worst trial", worst);
    for (jobs, wall, agent) in &rows {
        println!(
            "| {:<28} | {:>9.1} ms |",
            format!("agent run per task (-j {jobs})"),
            agent
        );
        println!(
            "| {:<28} | {:>9.1} ms |",
            format!("suite wall time, -j {jobs}"),
            wall
        );
    }
    println!(
        "\ngoal: harness overhead per task ≤ {GOAL_MS:.0} ms (median, -j 1): {:.1} ms — {}",
        overhead,
        if overhead <= GOAL_MS { "met" } else { "MISSED" }
    );
}
