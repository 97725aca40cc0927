//! From config to running servers: turns `[mcp_servers]` into pool specs and
//! starts the pool.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
};

use tern_config::{Config, ConfigPaths, Launch, ServerConfig, ServerRoots, Transport};
use tern_mcp::{
    DEFAULT_MAX_TOOL_BYTES, ElicitationPolicy, EventSink, PoolOptions, RootsSetting, ServerPool,
    ServerSpec, ToolFilter, TransportSpec, pins::PinStore,
};
use tern_protocol::Event;

/// Errors turning config into specs.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A bearer token or header variable named in the config is not set.
    #[error("mcp_servers.{server}: environment variable {var} (named by {key}) is not set")]
    MissingEnv {
        server: String,
        key: &'static str,
        var: String,
    },
    /// The pin file is unreadable.
    #[error(transparent)]
    Pins(#[from] tern_mcp::pins::PinError),
}

/// The specs of every enabled server (optionally only `only`), by name. A
/// server whose spec cannot be completed (an unset token variable) becomes an
/// `Unavailable` spec: the pool reports it failed and the others carry on.
pub fn specs(
    config: &Config,
    tern_exe: &Path,
    env: &BTreeMap<String, String>,
    only: Option<&str>,
) -> Result<Vec<ServerSpec>, SpecError> {
    config
        .enabled_servers()
        .filter(|s| only.is_none_or(|o| o == s.name))
        .map(|s| match spec(s, tern_exe, env) {
            Err(e @ SpecError::MissingEnv { .. }) => {
                let transport = TransportSpec::Unavailable {
                    kind: match s.transport {
                        Transport::Stdio { .. } => "stdio",
                        Transport::Http { .. } => "http",
                    },
                    reason: e.to_string(),
                };
                let mut spec = ServerSpec::new(s.name.clone(), transport);
                spec.required = s.required;
                spec.startup_timeout = s.startup_timeout;
                spec.request_timeout = s.tool_timeout;
                Ok(spec)
            }
            other => other,
        })
        .collect()
}

fn spec(
    server: &ServerConfig,
    tern_exe: &Path,
    env: &BTreeMap<String, String>,
) -> Result<ServerSpec, SpecError> {
    let transport = match &server.transport {
        Transport::Stdio {
            launch,
            args,
            env: explicit,
            env_vars,
            cwd,
        } => {
            let (program, args) = match launch {
                Launch::Command(cmd) => (cmd.clone(), args.clone()),
                Launch::Builtin(b) => {
                    let mut full = vec!["serve".to_string(), b.name().to_string()];
                    full.extend(args.iter().cloned());
                    (tern_exe.to_string_lossy().into_owned(), full)
                }
            };
            TransportSpec::Stdio {
                program,
                args,
                env: explicit.clone(),
                pass_env: env_vars.clone(),
                cwd: cwd.clone(),
            }
        }
        Transport::Http {
            url,
            bearer_token_env_var,
            headers,
            env_headers,
        } => {
            let bearer_token = match bearer_token_env_var {
                Some(var) => Some(env.get(var).cloned().ok_or_else(|| SpecError::MissingEnv {
                    server: server.name.clone(),
                    key: "bearer_token_env_var",
                    var: var.clone(),
                })?),
                None => None,
            };
            let mut headers = headers.clone();
            for (header, var) in env_headers {
                let value = env.get(var).cloned().ok_or_else(|| SpecError::MissingEnv {
                    server: server.name.clone(),
                    key: "env_http_headers",
                    var: var.clone(),
                })?;
                headers.insert(header.clone(), value);
            }
            TransportSpec::Http {
                url: url.clone(),
                bearer_token,
                headers,
            }
        }
    };
    let config = server.clone();
    let mut spec = ServerSpec::new(server.name.clone(), transport);
    spec.required = server.required;
    spec.startup_timeout = server.startup_timeout;
    spec.request_timeout = server.tool_timeout;
    spec.tool_filter = ToolFilter::new(move |tool| config.tool_enabled(tool));
    spec.roots = match &server.roots {
        ServerRoots::WorkingDirectory => RootsSetting::Pool,
        ServerRoots::Off => RootsSetting::Off,
        ServerRoots::Paths(paths) => RootsSetting::Paths(paths.clone()),
    };
    spec.max_tool_bytes = server.max_tool_bytes.unwrap_or(DEFAULT_MAX_TOOL_BYTES);
    Ok(spec)
}

/// A started pool and the events it has reported so far.
pub struct StartedPool {
    pub pool: Arc<ServerPool>,
    pub events: Arc<Mutex<Vec<Event>>>,
}

/// Starts `specs` with tern's standard options (roots = `cwd`, logs and pins under `$TERN_HOME`,
/// elicitation as `[agent]` says).
pub fn start_pool(
    specs: Vec<ServerSpec>,
    config: &Config,
    paths: &ConfigPaths,
    cwd: &Path,
    env: BTreeMap<String, String>,
    extra_sink: Option<EventSink>,
) -> Result<StartedPool, SpecError> {
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let collected = events.clone();
    let sink: EventSink = Arc::new(move |e: Event| {
        if let Some(extra) = &extra_sink {
            extra(e.clone());
        }
        if let Ok(mut v) = collected.lock() {
            v.push(e);
        }
    });
    let pins = PinStore::load(&paths.pins_file())?;
    let opts = PoolOptions {
        roots: vec![cwd.to_path_buf()],
        log_dir: Some(paths.logs_dir()),
        host_env: env,
        elicitation: if config.agent.accept_elicitation_defaults {
            ElicitationPolicy::AcceptDefaults
        } else {
            ElicitationPolicy::Decline
        },
        ..PoolOptions::default()
    };
    Ok(StartedPool {
        pool: ServerPool::start(specs, opts, pins, sink),
        events,
    })
}
