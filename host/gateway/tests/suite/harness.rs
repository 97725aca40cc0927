//! A temp project, a `$TERN_HOME` with a real config.toml, a pool of real servers, a gateway.

use std::{
    collections::{BTreeMap, VecDeque},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use async_trait::async_trait;
use serde_json::Value;
use tern_config::{Config, ConfigPaths, Launch, LoadOptions, Transport};
use tern_gateway::{
    Approval, ApprovalRequest, Approver, CallContext, Event, EventSink, Gateway, GatewaySettings,
    HeadlessApprover, Outcome, Recorders, Secret, ToolCall,
};
use tern_mcp::{PoolOptions, ServerPool, ServerSpec, TransportSpec, pins::PinStore};

/// A fake Anthropic key: it must never appear in any file the gateway writes.
pub const CANARY: &str = "sk-ant-api03-CANARY-0123456789abcdef";

/// Path of a workspace binary next to the test executable. Missing means the binaries were not
/// built: fail loudly, never skip.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap();
    let path = dir.join(name);
    assert!(
        path.exists(),
        "binary {} not built: run cargo build --workspace --bins",
        path.display()
    );
    path
}

/// Answers approvals from a script and records every request.
#[derive(Default)]
pub struct Scripted {
    pub answers: Mutex<VecDeque<Approval>>,
    pub requests: Mutex<Vec<ApprovalRequest>>,
    /// Never answer (to test cancellation while asking).
    pub hang: bool,
}

#[async_trait]
impl Approver for Scripted {
    async fn ask(&self, request: ApprovalRequest) -> Approval {
        self.requests.lock().unwrap().push(request);
        if self.hang {
            std::future::pending::<()>().await;
        }
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Approval::Deny { reason: None })
    }
}

pub struct Env {
    pub dir: tempfile::TempDir,
    pub project: PathBuf,
    pub tern_home: PathBuf,
    /// What `tern-test-server --audit` records: every call that reached it.
    pub server_audit: PathBuf,
}

impl Env {
    /// A temp project and `$TERN_HOME` whose config.toml is `user_config` plus the test server.
    pub fn new(user_config: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        let tern_home = dir.path().join("home/.tern");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&tern_home).unwrap();
        let server_audit = dir.path().join("server-audit.jsonl");
        let test_server = format!(
            "[mcp_servers.web]\nenabled = false\n\n[mcp_servers.test]\ncommand = {:?}\nargs = [\"--audit\", {:?}]\nenv_vars = [\"ANTHROPIC_API_KEY\"]\ntrust_annotations = true\n\n",
            bin("tern-test-server").display().to_string(),
            server_audit.display().to_string(),
        );
        std::fs::write(
            tern_home.join("config.toml"),
            format!("{test_server}{user_config}"),
        )
        .unwrap();
        Env {
            dir,
            project,
            tern_home,
            server_audit,
        }
    }

    pub fn paths(&self) -> ConfigPaths {
        ConfigPaths::with_home(self.tern_home.clone(), &self.project)
    }

    pub fn load(&self, options: &LoadOptions) -> Config {
        let home = self.dir.path().join("home").display().to_string();
        let env = move |name: &str| (name == "HOME").then(|| home.clone());
        Config::load(&self.paths(), options, &env).unwrap()
    }

    /// Pool specs from config: built-in servers run as their own binaries in the project.
    pub fn specs(&self, config: &Config) -> Vec<ServerSpec> {
        config
            .enabled_servers()
            .map(|s| {
                let Transport::Stdio {
                    launch,
                    args,
                    env_vars,
                    ..
                } = &s.transport
                else {
                    panic!("stdio only")
                };
                let program = match launch {
                    Launch::Builtin(b) => bin(&format!("tern-{}", b.name())),
                    Launch::Command(c) => PathBuf::from(c),
                };
                let mut spec = ServerSpec::new(
                    s.name.clone(),
                    TransportSpec::Stdio {
                        program: program.display().to_string(),
                        args: args.clone(),
                        env: BTreeMap::new(),
                        pass_env: env_vars.clone(),
                        cwd: Some(self.project.clone()),
                    },
                );
                spec.required = true;
                spec.startup_timeout = Duration::from_secs(30);
                spec.request_timeout = s.tool_timeout;
                spec.tool_filter = {
                    let s = s.clone();
                    tern_mcp::ToolFilter::new(move |t| s.tool_enabled(t))
                };
                spec
            })
            .collect()
    }

    pub async fn pool(&self, config: &Config) -> Arc<ServerPool> {
        let mut host_env = BTreeMap::new();
        for k in ["PATH"] {
            if let Ok(v) = std::env::var(k) {
                host_env.insert(k.to_string(), v);
            }
        }
        host_env.insert(
            "HOME".into(),
            self.dir.path().join("home").display().to_string(),
        );
        host_env.insert("ANTHROPIC_API_KEY".into(), CANARY.into());
        let opts = PoolOptions {
            roots: vec![self.project.clone()],
            log_dir: None,
            max_restarts_per_minute: 5,
            restart_base_delay: Duration::from_millis(20),
            host_env,
            ..PoolOptions::default()
        };
        let pool = ServerPool::start(
            self.specs(config),
            opts,
            PinStore::in_memory(),
            Arc::new(|_| {}),
        );
        pool.wait_settled().await;
        if let Some(failed) = pool.required_failure() {
            panic!("a server failed to start: {failed:?}");
        }
        pool
    }

    pub fn settings(&self, config: &Config) -> GatewaySettings {
        GatewaySettings::from_config(
            config,
            &self.paths(),
            self.project.clone(),
            vec![self.project.clone()],
            Some(self.dir.path().join("home")),
        )
    }

    /// The run's recorders: `events`, the audit log under `$TERN_HOME`, the canary redacted.
    pub fn recorders(&self, events: EventSink) -> Recorders {
        Recorders::open(
            &self.tern_home.join("audit.jsonl"),
            [Secret::new(CANARY)],
            events,
        )
        .unwrap()
    }

    pub fn audit_lines(&self) -> Vec<Value> {
        match std::fs::read_to_string(self.tern_home.join("audit.jsonl")) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    pub fn server_calls(&self) -> Vec<Value> {
        match std::fs::read_to_string(&self.server_audit) {
            Ok(text) => text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// A running gateway with its events.
pub struct Rig {
    pub env: Env,
    pub pool: Arc<ServerPool>,
    pub gateway: Gateway,
    pub events: Arc<Mutex<Vec<Event>>>,
}

pub fn sink() -> (EventSink, Arc<Mutex<Vec<Event>>>) {
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let e = events.clone();
    (Arc::new(move |ev| e.lock().unwrap().push(ev)), events)
}

impl Rig {
    pub async fn start(user_config: &str) -> Rig {
        Self::with(
            user_config,
            LoadOptions::default(),
            Arc::new(HeadlessApprover),
            |_| {},
        )
        .await
    }

    pub async fn with(
        user_config: &str,
        options: LoadOptions,
        approver: Arc<dyn Approver>,
        tweak: impl FnOnce(&mut GatewaySettings),
    ) -> Rig {
        let env = Env::new(user_config);
        let config = env.load(&options);
        let pool = env.pool(&config).await;
        let mut settings = env.settings(&config);
        tweak(&mut settings);
        let (events, log) = sink();
        let recorders = env.recorders(events);
        let gateway = Gateway::new(pool.clone(), settings, approver, recorders).unwrap();
        Rig {
            env,
            pool,
            gateway,
            events: log,
        }
    }

    pub async fn call(&self, id: &str, name: &str, arguments: Value) -> Outcome {
        self.gateway
            .call(
                ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments,
                },
                ctx(),
            )
            .await
    }

    pub async fn shutdown(self) -> Env {
        self.pool.shutdown().await;
        self.env
    }
}

pub fn ctx() -> CallContext {
    CallContext {
        run_id: "run-1".into(),
        session_id: "session-1".into(),
        ..Default::default()
    }
}

/// The audit line of `call_id` (exactly one).
pub fn audit_of<'a>(lines: &'a [Value], call_id: &str) -> &'a Value {
    let found: Vec<&Value> = lines.iter().filter(|l| l["call_id"] == call_id).collect();
    assert_eq!(found.len(), 1, "audit lines for {call_id}: {lines:#?}");
    found[0]
}
