//! A running `tern-shell` under test, and helpers to call it and inspect processes.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::handler::client::progress::ProgressDispatcher;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, MetaObject, ProgressNotificationParam,
    Request, RequestMetaObject,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;

/// Generous bound on any single call in these tests: a hang fails, never blocks CI.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The client side: forwards progress notifications to subscribers.
#[derive(Clone, Default)]
pub struct TestClient {
    pub progress: ProgressDispatcher,
}

impl ClientHandler for TestClient {
    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        // rmcp 3.11 leaves the notification's `_meta` in `context.extensions` (not in
        // `context.meta` nor in params): subscribers see it in params.
        if let Some(meta) = context
            .extensions
            .get::<rmcp::model::NotificationMetaObject>()
        {
            params.meta = Some(meta.clone());
        }
        self.progress.handle_notification(params).await;
    }
}

pub struct Server {
    pub client: RunningService<RoleClient, TestClient>,
    /// Pid of the server process, for memory measurements.
    pub pid: u32,
    /// The server's `--root` (canonical), inside `dir`.
    pub root: PathBuf,
    /// Owns the temporary tree; removed on drop.
    pub dir: tempfile::TempDir,
}

/// Starts `tern-shell --root <tmp>/root EXTRA...` with `envs` added to its environment.
pub async fn start(extra: &[&str], envs: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir_all(&root).unwrap();
    // Commands' TMPDIR (writable in the sandbox) is a sibling of the root, so
    // the rest of the temporary tree is "outside" for write tests.
    let tmp = dir.path().canonicalize().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_tern-shell"));
    cmd.arg("--root").arg(&root).args(extra).env("TMPDIR", &tmp);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let transport = TokioChildProcess::new(cmd).unwrap();
    let pid = transport.id().unwrap();
    let client = tokio::time::timeout(CALL_TIMEOUT, TestClient::default().serve(transport))
        .await
        .unwrap()
        .unwrap();
    Server {
        client,
        pid,
        root,
        dir,
    }
}

fn params(args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("run").with_arguments(args.as_object().unwrap().clone())
}

impl Server {
    /// Calls `run` with `args` and waits for the result.
    pub async fn run(&self, args: Value) -> CallToolResult {
        tokio::time::timeout(CALL_TIMEOUT, self.client.peer().call_tool(params(args)))
            .await
            .expect("call did not return in time")
            .unwrap()
    }

    /// Calls `run` with `args` and the request `_meta` object `meta`.
    pub async fn run_with_meta(&self, args: Value, meta: Value) -> CallToolResult {
        let mut p = params(args);
        p.meta = Some(RequestMetaObject(MetaObject(
            meta.as_object().unwrap().clone(),
        )));
        tokio::time::timeout(CALL_TIMEOUT, self.client.peer().call_tool(p))
            .await
            .expect("call did not return in time")
            .unwrap()
    }

    /// Calls `run` and returns a handle that can be cancelled.
    pub async fn run_cancellable(&self, args: Value) -> RequestHandle<RoleClient> {
        self.run_cancellable_with_meta(args, Value::Object(Default::default()))
            .await
    }

    /// [`Server::run_cancellable`] with the request `_meta` object `meta` (the progress token
    /// is added to it).
    pub async fn run_cancellable_with_meta(
        &self,
        args: Value,
        meta: Value,
    ) -> RequestHandle<RoleClient> {
        let mut options = PeerRequestOptions::with_timeout(CALL_TIMEOUT);
        if let Some(meta) = meta.as_object().filter(|m| !m.is_empty()) {
            options.meta = Some(RequestMetaObject(MetaObject(meta.clone())));
        }
        self.client
            .peer()
            .send_cancellable_request(
                ClientRequest::CallToolRequest(Request::new(params(args))),
                options,
            )
            .await
            .unwrap()
    }
}

/// The text content of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `structuredContent[key]`.
pub fn field<'a>(result: &'a CallToolResult, key: &str) -> &'a Value {
    &result
        .structured_content
        .as_ref()
        .expect("structuredContent")[key]
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// True when `pid` runs (exists and is not a zombie).
pub fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        // The state follows the parenthesised command name.
        Ok(stat) => {
            !matches!(stat.rsplit(')').next().map(str::trim_start), Some(s) if s.starts_with('Z') || s.starts_with('X'))
        }
    }
}

/// Resident memory of `pid` in KiB, from /proc.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A `sleep` argument no other process on the machine uses, so a test can
/// find the processes it started from outside any namespace.
pub fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}.{:06}{n:03}", 3000 + n, std::process::id() % 1_000_000)
}

/// Host pids of running processes with `arg` as one of their arguments.
pub fn processes_with_arg(arg: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == arg.as_bytes()))
        })
        .filter(|pid| is_running(*pid))
        .collect()
}

/// Waits up to `within` for every process with `arg` to end; returns those left.
pub async fn survivors(arg: &str, within: Duration) -> Vec<u32> {
    let end = tokio::time::Instant::now() + within;
    loop {
        let alive = processes_with_arg(arg);
        if alive.is_empty() || tokio::time::Instant::now() >= end {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Kills leftover test processes by pid (never by name).
pub fn kill_pids(pids: &[u32]) {
    for pid in pids {
        let _ = std::process::Command::new("kill")
            .arg("-9")
            .arg(pid.to_string())
            .status();
    }
}
