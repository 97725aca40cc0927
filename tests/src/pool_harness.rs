//! The server pool with real processes under it, for tests that drive `tern_mcp::ServerPool`
//! directly: start specs, collect the events, wait for one, call `echo`.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::json;
use tern_mcp::{
    CallError, CallOptions, EventSink, PoolOptions, ServerPool, ServerSpec, ServerState,
    TransportSpec, pins::PinStore,
};
use tern_protocol::Event;

/// A started pool, the events it emitted, and the directory offered to it as its root.
pub struct Harness {
    pub pool: Arc<ServerPool>,
    pub events: Arc<Mutex<Vec<Event>>>,
    pub dir: tempfile::TempDir,
}

pub fn test_server_spec(name: &str, args: &[&str]) -> ServerSpec {
    stdio_spec(
        name,
        crate::bin("tern-test-server").to_string_lossy().as_ref(),
        args,
    )
}

pub fn stdio_spec(name: &str, program: &str, args: &[&str]) -> ServerSpec {
    let mut spec = ServerSpec::new(
        name,
        TransportSpec::Stdio {
            program: program.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            pass_env: Vec::new(),
            cwd: None,
        },
    );
    spec.startup_timeout = Duration::from_secs(20);
    spec.request_timeout = Duration::from_secs(20);
    spec
}

pub fn host_env() -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for k in ["PATH", "HOME"] {
        if let Ok(v) = std::env::var(k) {
            env.insert(k.to_string(), v);
        }
    }
    env.insert("ANTHROPIC_API_KEY".into(), "sk-ant-canary-0000".into());
    env.insert("PASSED_THROUGH".into(), "yes".into());
    env
}

impl Harness {
    pub async fn start(specs: Vec<ServerSpec>) -> Harness {
        Self::start_in(tempfile::tempdir().unwrap(), specs).await
    }

    /// Starts `specs` with `dir` as the root offered to servers (`roots/list`).
    pub async fn start_in(dir: tempfile::TempDir, specs: Vec<ServerSpec>) -> Harness {
        Self::start_with(dir, specs, PinStore::in_memory(), |_| {}).await
    }

    /// Starts `specs` with `dir` as the root, logs under `dir/logs`, `pins`, and the options
    /// `tweak` changes.
    pub async fn start_with(
        dir: tempfile::TempDir,
        specs: Vec<ServerSpec>,
        pins: PinStore,
        tweak: impl FnOnce(&mut PoolOptions),
    ) -> Harness {
        let events: Arc<Mutex<Vec<Event>>> = Arc::default();
        let sink_events = events.clone();
        let sink: EventSink = Arc::new(move |e| sink_events.lock().unwrap().push(e));
        let mut opts = PoolOptions {
            roots: vec![dir.path().to_path_buf()],
            log_dir: Some(dir.path().join("logs")),
            max_restarts_per_minute: 5,
            restart_base_delay: Duration::from_millis(20),
            host_env: host_env(),
            ..PoolOptions::default()
        };
        tweak(&mut opts);
        let pool = ServerPool::start(specs, opts, pins, sink);
        pool.wait_settled().await;
        Harness { pool, events, dir }
    }

    pub async fn wait_event(&self, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(e) = self.events.lock().unwrap().iter().find(|e| pred(e)) {
                return e.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no {what} event; got {:#?}",
                self.events.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn echo(&self, server: &str, text: &str) -> Result<String, CallError> {
        let args = json!({"text": text})
            .as_object()
            .cloned()
            .unwrap_or_default();
        self.pool
            .call(
                server,
                "echo",
                args,
                CallOptions::new(Duration::from_secs(60)),
            )
            .await
            .map(|o| o.text)
    }

    pub fn state(&self, server: &str) -> ServerState {
        self.pool
            .statuses()
            .into_iter()
            .find(|s| s.name == server)
            .unwrap()
            .state
    }
}

/// Starts `tern-test-server --http 127.0.0.1:0` and returns it with its URL.
pub fn http_test_server() -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(crate::bin("tern-test-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    (child, format!("http://{addr}/mcp"))
}
