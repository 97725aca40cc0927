//! Opening one connection: spawn (or dial), agree on a protocol revision, list tools.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use rmcp::{
    ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, RoleClient,
    model::{ProtocolVersion, Tool},
    service::{Peer, RunningService},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde::Serialize;

use crate::{
    client::TernClient,
    env::child_env,
    error::{StartError, init_error},
    oauth::http::AuthHttpClient,
    spec::{Lifecycle, PoolOptions, ServerSpec, TransportSpec},
    stderr::StderrTail,
    transport::{StdoutNoise, TaskSupport, guard::Guarded, stdio::StdioTransport},
};

/// Which of MCP's two eras a connection is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// Revisions up to 2025-11-25: an `initialize` handshake and a session.
    Initialize,
    /// 2026-07-28 on: no handshake; every request carries its own `_meta`.
    Stateless,
}

impl Era {
    fn of(version: &ProtocolVersion) -> Self {
        if version.has_initialize() {
            Era::Initialize
        } else {
            Era::Stateless
        }
    }
}

/// A live, initialized connection.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, TernClient>,
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) pid: Option<u32>,
    pub(crate) protocol_version: String,
    pub(crate) era: Era,
    /// Tools the server says must be called as tasks (stdio only: see [`TaskSupport`]).
    pub(crate) task_support: TaskSupport,
    pub(crate) server_name: String,
    pub(crate) server_version: String,
    /// What the server says about itself (`instructions` of its initialize result).
    pub(crate) instructions: Option<String>,
    pub(crate) startup: Duration,
}

/// The lifecycle to open with: the configured one, or for `Auto`, what this server turned out
/// to speak last time (so a restart does not probe again).
fn lifecycle_mode(configured: Lifecycle, remembered: Option<Era>) -> ClientLifecycleMode {
    let discover = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match (configured, remembered) {
        (Lifecycle::Initialize, _) | (Lifecycle::Auto, Some(Era::Initialize)) => {
            ClientLifecycleMode::Initialize
        }
        (Lifecycle::Discover, _) | (Lifecycle::Auto, Some(Era::Stateless)) => discover(),
        (Lifecycle::Auto, None) => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
    }
}

/// Connects to `spec` within its startup timeout.
pub(crate) async fn connect(
    spec: &ServerSpec,
    opts: &PoolOptions,
    handler: TernClient,
    stderr: &StderrTail,
    noise: &StdoutNoise,
    remembered: Option<Era>,
    tools_changing: Arc<dyn Fn() + Send + Sync>,
) -> Result<Connection, StartError> {
    let started = Instant::now();
    let mode = lifecycle_mode(spec.lifecycle, remembered);
    let task_support = TaskSupport::default();
    // Long enough for a slow start, short enough to leave most of the startup timeout to the
    // `initialize` that follows.
    // A server known to speak 2026-07-28 gets the whole startup timeout to answer the probe:
    // there is nothing to fall back to.
    let probe_timeout = match mode {
        ClientLifecycleMode::Discover { .. } => spec.startup_timeout,
        _ => (spec.startup_timeout / 3).clamp(Duration::from_secs(1), Duration::from_secs(5)),
    };
    // An HTTP server that asks for OAuth gets its token from its authorizer (none when a
    // static bearer token is configured).
    let auth = match &spec.transport {
        TransportSpec::Http {
            url,
            bearer_token: None,
            ..
        } => {
            let events = handler.answers.events.clone();
            let notify: crate::oauth::Notify =
                Arc::new(move |message| events(tern_protocol::Event::Notice { message }));
            opts.oauth
                .authorizer(&spec.name, url, spec.oauth.as_ref(), notify)
        }
        _ => None,
    };
    let attempt = async {
        let (service, pid) = match &spec.transport {
            TransportSpec::Stdio {
                program,
                args,
                env,
                pass_env,
                cwd,
            } => {
                let env = child_env(&opts.host_env, pass_env, env);
                let program_path = resolve_program(program, env.get("PATH"), cwd.as_deref())?;
                if let Some(dir) = cwd
                    && !dir.is_dir()
                {
                    return Err(StartError::Spawn {
                        command: program.clone(),
                        reason: format!("working directory {} does not exist", dir.display()),
                    });
                }
                let mut cmd = tokio::process::Command::new(&program_path);
                cmd.args(args).env_clear().envs(&env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                // Its own process group, so `npx`-style grandchildren die with it.
                let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
                wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
                let (transport, pipe) =
                    StdioTransport::spawn(wrap, task_support.clone(), noise.clone()).map_err(
                        |e| StartError::Spawn {
                            command: program.clone(),
                            reason: e.to_string(),
                        },
                    )?;
                let pid = transport.id();
                if let Some(pipe) = pipe {
                    let log = opts
                        .log_dir
                        .as_ref()
                        .map(|d| d.join(format!("{}.log", spec.name)));
                    stderr.drain(pipe, log, spec.name.clone(), opts.max_log_bytes);
                }
                let service = handler
                    .serve_with_lifecycle(
                        Guarded::new(transport, probe_timeout, tools_changing.clone()),
                        mode,
                    )
                    .await
                    .map_err(|e| init_error(&e))?;
                (service, pid)
            }
            TransportSpec::Unavailable { reason, .. } => {
                return Err(StartError::Config(reason.clone()));
            }
            TransportSpec::Http {
                url,
                bearer_token,
                headers,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = bearer_token {
                    config = config.auth_header(token.clone());
                }
                let mut map = HashMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::try_from(k.as_str())
                        .map_err(|e| StartError::Config(format!("header name `{k}`: {e}")))?;
                    let value = http::HeaderValue::try_from(v.as_str())
                        .map_err(|e| StartError::Config(format!("header `{k}` value: {e}")))?;
                    map.insert(name, value);
                }
                config = config.custom_headers(map);
                config.retry_config = Arc::new(sse_retry_policy());
                let transport = StreamableHttpClientTransport::with_client(
                    AuthHttpClient::new(auth.clone()),
                    config,
                );
                let service = handler
                    .serve_with_lifecycle(
                        Guarded::new(transport, probe_timeout, tools_changing.clone()),
                        mode,
                    )
                    .await
                    .map_err(|e| init_error(&e))?;
                (service, None)
            }
        };
        let peer = service.peer().clone();
        // tern lists tools at start and when the server says they changed; a cached list could
        // only ever be the stale one.
        peer.set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let Some(info) = peer.peer_info() else {
            return Err(StartError::Handshake(
                "the handshake finished without the server's details".to_string(),
            ));
        };
        // A revision tern does not know is one whose rules it cannot follow (issue 15, F12).
        if !ProtocolVersion::KNOWN_VERSIONS.contains(&info.protocol_version) {
            return Err(StartError::UnsupportedProtocol {
                version: info.protocol_version.to_string(),
            });
        }
        // `tools/list` only where the server says it has tools.
        let tools = if info.capabilities.tools.is_some() {
            peer.list_all_tools()
                .await
                .map_err(|e| StartError::ListTools(crate::error::describe_service_error(&e)))?
        } else {
            Vec::new()
        };
        let server = info.server_info.as_ref();
        Ok(Connection {
            era: Era::of(&info.protocol_version),
            task_support: task_support.clone(),
            protocol_version: info.protocol_version.to_string(),
            server_name: server.map(|i| i.name.clone()).unwrap_or_default(),
            server_version: server.map(|i| i.version.clone()).unwrap_or_default(),
            instructions: info.instructions.clone(),
            service,
            peer,
            tools,
            pid,
            startup: started.elapsed(),
        })
    };
    let result = match tokio::time::timeout(spec.startup_timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(StartError::Timeout {
            secs: spec.startup_timeout.as_secs_f64(),
        }),
    };
    // A refused authorization is the reason, whatever step it stopped.
    result.map_err(|e| match auth.as_ref().and_then(|a| a.take_failure()) {
        Some(failure) => StartError::Authorization(failure.to_string()),
        None => e,
    })
}

/// How often a broken SSE stream is resumed before the requests waiting on it fail. rmcp's
/// default retries forever with doubling delays, so a server that died mid-call left the call
/// waiting for its whole timeout (issue 11, item 8); two tries ride out a proxy hiccup and
/// still fail a dead server within seconds. A `retry:` the server sends is honoured when
/// longer (rmcp's own servers ask for 3 s).
fn sse_retry_policy() -> rmcp::transport::common::client_side_sse::ExponentialBackoff {
    let mut policy = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
    policy.max_times = Some(2);
    policy.base_duration = Duration::from_millis(250);
    policy.max_delay = Some(Duration::from_secs(1));
    policy
}

/// Finds the program the way the child's `execvp` would, so a missing command is
/// reported by name before anything is spawned.
fn resolve_program(
    program: &str,
    path: Option<&String>,
    cwd: Option<&Path>,
) -> Result<PathBuf, StartError> {
    let search = path.cloned().unwrap_or_default();
    if program.contains('/') {
        let p = match cwd {
            Some(dir) if Path::new(program).is_relative() => dir.join(program),
            _ => PathBuf::from(program),
        };
        let reason = match std::fs::metadata(&p) {
            Err(_) => format!("{} does not exist", p.display()),
            Ok(m) if m.is_dir() => format!("{} is a directory", p.display()),
            Ok(m) if !is_executable(&m) => format!("{} is not executable", p.display()),
            Ok(_) => return Ok(p),
        };
        return Err(StartError::NotRunnable {
            command: program.to_string(),
            reason,
        });
    }
    let base = cwd
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    which::which_in(program, Some(&search), base).map_err(|_| StartError::CommandNotFound {
        command: program.to_string(),
        path: if search.is_empty() {
            "PATH is empty".to_string()
        } else {
            format!("searched PATH={search}")
        },
    })
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_unrunnable_path_is_not_called_a_path_lookup() {
        let msg = resolve_program("/nonexistent/bin/mcp-x", None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "command `/nonexistent/bin/mcp-x` cannot be run: /nonexistent/bin/mcp-x does not exist"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.sh");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let msg = resolve_program(&file.display().to_string(), None, None)
            .unwrap_err()
            .to_string();
        assert!(msg.ends_with("is not executable"), "{msg}");
    }

    #[test]
    fn missing_command_is_named() {
        let err = resolve_program(
            "surely-not-a-command-xyz",
            Some(&"/bin:/usr/bin".into()),
            None,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("surely-not-a-command-xyz"), "{msg}");
        assert!(msg.contains("not on PATH"), "{msg}");
        assert!(msg.contains("/usr/bin"), "{msg}");
    }

    #[test]
    fn commands_on_path_resolve() {
        let p = resolve_program("sh", Some(&"/bin:/usr/bin".into()), None).unwrap();
        assert!(p.ends_with("sh"));
    }

    #[test]
    fn auto_probes_once_then_follows_what_it_found() {
        assert!(matches!(
            lifecycle_mode(Lifecycle::Auto, None),
            ClientLifecycleMode::Auto { .. }
        ));
        assert_eq!(
            lifecycle_mode(Lifecycle::Auto, Some(Era::Initialize)),
            ClientLifecycleMode::Initialize
        );
        assert!(matches!(
            lifecycle_mode(Lifecycle::Auto, Some(Era::Stateless)),
            ClientLifecycleMode::Discover { .. }
        ));
        assert_eq!(
            lifecycle_mode(Lifecycle::Initialize, Some(Era::Stateless)),
            ClientLifecycleMode::Initialize
        );
    }
}
