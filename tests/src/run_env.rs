//! `RunEnv`: the real `tern` binary against a local mock model server, in a scratch project
//! with its own `$TERN_HOME`.

use std::{path::Path, process::Output, time::Duration};

use serde_json::Value;
use tern_model::mock::{MockModelServer, script::AnthropicTurn};

/// A fake key that must never appear in any file tern writes.
pub const CANARY: &str = "sk-ant-api03-canary-DO-NOT-LEAK-0123456789abcdef";

pub struct RunEnv {
    pub home: tempfile::TempDir,
    pub dir: tempfile::TempDir,
    pub server: MockModelServer,
}

impl RunEnv {
    pub async fn new() -> Self {
        let env = Self {
            home: tempfile::tempdir().unwrap(),
            dir: tempfile::tempdir().unwrap(),
            server: MockModelServer::start().await.unwrap(),
        };
        env.add_servers("");
        env
    }

    /// Writes `$TERN_HOME/config.toml`: fs and shell (web off; lsp off, so no test depends on
    /// the language servers a machine has — `-c mcp_servers.lsp.enabled=true` turns it on),
    /// one model retry, plus `extra` (more `[mcp_servers.NAME]` tables).
    pub fn add_servers(&self, extra: &str) {
        std::fs::write(
            self.home.path().join("config.toml"),
            format!(
                "[mcp_servers.web]\nenabled = false\n[mcp_servers.lsp]\nenabled = false\n\
                 [model]\nmax_retries = 1\n{extra}"
            ),
        )
        .unwrap();
    }

    /// Queues a final text answer from the model.
    pub fn answer(&self, text: &str) {
        self.server
            .enqueue(AnthropicTurn::new().text(&[text]).finish("end_turn"));
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(crate::bin("tern"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("TERN_HOME", self.home.path())
            .env("ANTHROPIC_API_KEY", CANARY)
            .env("ANTHROPIC_BASE_URL", self.server.url())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("TERN_LOG")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        tokio::time::timeout(Duration::from_secs(120), self.command(args).output())
            .await
            .expect("tern run did not finish in 120 s")
            .unwrap()
    }

    /// The only run's events, parsed (every line must be JSON).
    pub fn events(&self) -> Vec<Value> {
        let runs = self.home.path().join("runs");
        // The newest run: run ids sort by the second they started, so two runs within one
        // second are told apart by their first event's timestamp (milliseconds).
        let started = |dir: &std::path::Path| -> String {
            let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap_or_default();
            let first: Value = text
                .lines()
                .next()
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or(Value::Null);
            first["ts"].as_str().unwrap_or("").to_string()
        };
        let mut dirs: Vec<_> = std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|d| d.join("events.jsonl").is_file())
            .map(|d| (started(&d), d))
            .collect();
        dirs.sort();
        let text = std::fs::read_to_string(dirs.last().unwrap().1.join("events.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }
}

/// Fails the test unless `out` (a finished `tern` process) exited with `code`, showing its
/// stderr.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

/// Every file under `dir`, for canary scans.
pub fn all_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Live processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
                && alive(*pid)
        })
        .collect()
}

pub fn alive(pid: u32) -> bool {
    // A zombie has exited; only a live process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
