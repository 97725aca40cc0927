//! From config to running servers: turns `[mcp_servers]` into pool specs and
//! starts the pool.

use std::{
    collections::BTreeMap,
    path::Path,
    sync::{Arc, Mutex},
};

use tern_config::{
    Builtin, Config, ConfigPaths, Launch, OAuthConfig, PrivateKeySource, SandboxConfig,
    ServerConfig, ServerRoots, Transport,
};
use tern_mcp::{
    Browser, ClientKey, DEFAULT_MAX_TOOL_BYTES, ElicitationPolicy, EventSink, Lifecycle,
    OAuthOptions, OAuthSpec, PoolOptions, RootsSetting, ServerPool, ServerSpec, ToolFilter,
    TransportSpec, pins::PinStore,
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
    /// The configured private key of an OAuth client cannot be read or used.
    #[error("mcp_servers.{server}.oauth.{key} ({at}) {why}")]
    ClientKey {
        server: String,
        key: &'static str,
        /// The file or variable.
        at: String,
        /// What is wrong, with a hint line.
        why: String,
    },
    /// The pin file is unreadable.
    #[error(transparent)]
    Pins(#[from] tern_mcp::pins::PinError),
    /// `$TERN_HOME` or one of its directories cannot be used (a planted symlink, say).
    #[error("$TERN_HOME: {0}")]
    Home(std::io::Error),
    /// The built-in shell's `args` set what `[sandbox]` sets.
    #[error(
        "mcp_servers.{server}.args sets `{flag}`; configure the shell's sandbox in [sandbox] \
         (or with `tern run --sandbox MODE`) instead"
    )]
    SandboxInArgs { server: String, flag: &'static str },
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
        .map(|s| match spec(s, tern_exe, env, config) {
            Err(e @ (SpecError::MissingEnv { .. } | SpecError::ClientKey { .. })) => {
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
    config: &Config,
) -> Result<ServerSpec, SpecError> {
    let sandbox = &config.sandbox;
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
                    if *b == Builtin::Shell {
                        full.extend(sandbox_args(&server.name, args, sandbox)?);
                    }
                    if *b == Builtin::Skills {
                        full.extend(skills_args(&config.extension_dirs));
                    }
                    (tern_exe.to_string_lossy().into_owned(), full)
                }
            };
            // The agent server is tern itself: it needs what tern has (the model's key, its
            // base URL, `$TERN_HOME`), and clears its own servers' environments the same way.
            let pass_env = match launch {
                Launch::Builtin(Builtin::Agent) => env.keys().cloned().collect(),
                _ => env_vars.clone(),
            };
            TransportSpec::Stdio {
                program,
                args,
                env: explicit.clone(),
                pass_env,
                cwd: cwd.clone(),
            }
        }
        Transport::Http {
            url,
            bearer_token_env_var,
            headers,
            env_headers,
            oauth: _,
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
    spec.narrows_to_roots = server.builtin().is_none();
    spec.max_tool_bytes = server.max_tool_bytes.unwrap_or(DEFAULT_MAX_TOOL_BYTES);
    spec.lifecycle = match server.protocol {
        tern_config::Protocol::Auto => Lifecycle::Auto,
        tern_config::Protocol::Initialize => Lifecycle::Initialize,
        tern_config::Protocol::Discover => Lifecycle::Discover,
    };
    spec.oauth = oauth_spec(server, env)?;
    Ok(spec)
}

/// The variable naming the run an agent server serves (`tern serve agent --parent-run-id`).
pub const PARENT_RUN_ENV: &str = "TERN_PARENT_RUN_ID";

/// Tells every built-in agent server which run it serves (`TERN_PARENT_RUN_ID`), so the runs it
/// starts record their parent and the trace can link them, and what policy binds them
/// (`TERN_PARENT_POLICY`, [`super::inherit`]). In the environment, not on the command line: the
/// command line identifies the server (tool cache, pins), the run does not.
pub fn link_agent_servers(
    specs: &mut [ServerSpec],
    config: &Config,
    run_id: &str,
    policy: &super::inherit::ParentPolicy,
) {
    for spec in specs {
        let is_agent = config
            .mcp_servers
            .get(&spec.name)
            .is_some_and(|s| s.builtin() == Some(Builtin::Agent));
        if let (true, TransportSpec::Stdio { env, .. }) = (is_agent, &mut spec.transport) {
            env.insert(PARENT_RUN_ENV.into(), run_id.into());
            env.insert(super::inherit::PARENT_POLICY_ENV.into(), policy.to_env());
        }
    }
}

/// The variable naming the built-in todo server's state file (`tern serve todo --state`).
pub const TODO_STATE_ENV: &str = "TERN_TODO_STATE";

/// The todo list's file for session `session_id`: beside its transcript, so `--continue` and
/// `tern resume` find the list the model left.
pub fn todo_state_path(sessions_dir: &Path, session_id: &str) -> std::path::PathBuf {
    sessions_dir.join(format!("{session_id}.todo.json"))
}

/// The variable naming the pointer file a todo server follows (`tern serve todo --state-from`).
pub const TODO_STATE_FROM_ENV: &str = "TERN_TODO_STATE_FROM";

/// The run's pointer to its session's todo file: the todo server reads the path in it before
/// every call, so `/clear` (a new session) moves the list by rewriting it
/// ([`point_todo_at`]) while the server keeps running.
pub fn todo_pointer_path(run_dir: &Path) -> std::path::PathBuf {
    run_dir.join("todo-state.path")
}

/// Makes the run's todo servers keep the list in `state` from their next call on (written
/// atomically: a server never reads half a path).
pub fn point_todo_at(pointer: &Path, state: &Path) -> std::io::Result<()> {
    if let Some(dir) = pointer.parent() {
        tern_protocol::files::private_dir(dir)?;
    }
    tern_protocol::files::write_atomic(pointer, state.as_os_str().as_encoded_bytes())
}

/// Tells every built-in todo server where this session's list is: the pointer file
/// (`TERN_TODO_STATE_FROM`) naming `$TERN_HOME/sessions/<session>.todo.json`. In the
/// environment, not on the command line, for the reason [`link_agent_servers`] gives. A server
/// whose config names its own `TERN_TODO_STATE` (or pointer) keeps it.
pub fn link_todo_servers(specs: &mut [ServerSpec], config: &Config, pointer: &Path) {
    for spec in specs {
        let is_todo = config
            .mcp_servers
            .get(&spec.name)
            .is_some_and(|s| s.builtin() == Some(Builtin::Todo));
        if let (true, TransportSpec::Stdio { env, .. }) = (is_todo, &mut spec.transport)
            && !env.contains_key(TODO_STATE_ENV)
        {
            env.entry(TODO_STATE_FROM_ENV.into())
                .or_insert_with(|| pointer.to_string_lossy().into_owned());
        }
    }
}

/// `[mcp_servers.NAME.oauth]` as the pool takes it, the client secret read from its variable.
fn oauth_spec(
    server: &ServerConfig,
    env: &BTreeMap<String, String>,
) -> Result<Option<OAuthSpec>, SpecError> {
    let Transport::Http {
        oauth: Some(oauth), ..
    } = &server.transport
    else {
        return Ok(None);
    };
    let client_secret = match &oauth.client_secret_env {
        Some(var) => Some(env.get(var).cloned().ok_or_else(|| SpecError::MissingEnv {
            server: server.name.clone(),
            key: "oauth.client_secret_env",
            var: var.clone(),
        })?),
        None => None,
    };
    Ok(Some(OAuthSpec {
        client_id: oauth.client_id.clone(),
        client_secret,
        client_key: client_key(&server.name, oauth, env)?,
        scopes: oauth.scopes.clone(),
        redirect_port: oauth.redirect_port,
        client_metadata_url: oauth.client_metadata_url.clone(),
        resource: oauth.resource.clone(),
    }))
}

/// The private key `private_key_file` or `private_key_env` names, parsed (so a bad key fails
/// the server before anything is sent).
fn client_key(
    server: &str,
    oauth: &OAuthConfig,
    env: &BTreeMap<String, String>,
) -> Result<Option<ClientKey>, SpecError> {
    let fail = |key, at: &str, why: String| SpecError::ClientKey {
        server: server.to_string(),
        key,
        at: at.to_string(),
        why,
    };
    let (key, at, pem) = match &oauth.private_key {
        None => return Ok(None),
        Some(PrivateKeySource::Env(var)) => {
            let pem = env.get(var).ok_or_else(|| SpecError::MissingEnv {
                server: server.to_string(),
                key: "oauth.private_key_env",
                var: var.clone(),
            })?;
            (
                "private_key_env",
                format!("${var}"),
                pem.clone().into_bytes(),
            )
        }
        Some(PrivateKeySource::File(path)) => {
            let full = match (path.strip_prefix("~/"), env.get("HOME")) {
                (Some(rest), Some(home)) => Path::new(home).join(rest),
                _ => Path::new(path).to_path_buf(),
            };
            let pem = std::fs::read(&full).map_err(|e| {
                fail(
                    "private_key_file",
                    &full.display().to_string(),
                    format!(
                        "cannot be read: {e}\nhint: point `private_key_file` at the PEM file of \
                         the key registered for client `{}`",
                        oauth.client_id.as_deref().unwrap_or_default()
                    ),
                )
            })?;
            ("private_key_file", full.display().to_string(), pem)
        }
    };
    let alg = oauth
        .signing_alg
        .as_deref()
        .and_then(tern_mcp::SigningAlg::parse);
    ClientKey::from_pem(&pem, alg, oauth.key_id.clone())
        .map(Some)
        .map_err(|e| fail(key, &at, e.to_string()))
}

/// Called with every token an authorization or a refresh gets during a run, so the redactors
/// learn it before anything could echo it.
pub type SecretSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The pool's OAuth settings: credentials under `$TERN_HOME/oauth`; `TERN_OAUTH_BROWSER` says
/// how an authorization URL is opened and, when set, lets a run authorize by itself.
pub fn oauth_options(
    paths: &ConfigPaths,
    env: &BTreeMap<String, String>,
    secrets: Option<SecretSink>,
) -> OAuthOptions {
    let setting = env.get("TERN_OAUTH_BROWSER").map(String::as_str);
    let mut options = OAuthOptions::default();
    options.store_dir = Some(paths.oauth_dir());
    options.browser = Browser::from_setting(setting);
    options.unattended = setting.is_some_and(|s| !s.trim().is_empty());
    options.on_token = secrets;
    options
}

/// The built-in shell's sandbox flags from `[sandbox]`: `--sandbox`, `--network`, a `--writable`
/// per directory and a `--protect` per path, `$TERN_HOME` always among them. The shell enforces
/// them itself, so tern-shell started by any other client is sandboxed the same way.
/// The skills folders the built-in skills server searches: the trusted project's
/// (`.agents/skills`, `.tern/skills`, `.claude/skills`) and the user's.
fn skills_args(dirs: &tern_config::ExtensionDirs) -> Vec<String> {
    // The listing goes into tern's system prompt (see [`skills_listing`]), so `load`'s
    // definition stays the same whatever skills exist, and its pin holds.
    let mut out = vec!["--listing".to_string(), "instructions".to_string()];
    if let Some(project) = &dirs.trusted_project {
        out.push("--project".to_string());
        out.push(project.display().to_string());
    }
    for dir in dirs.user_skill_dirs() {
        out.push("--user-dir".to_string());
        out.push(dir.display().to_string());
    }
    out
}

/// The built-in skills servers' listings (name and description of each skill, never a body),
/// for the system prompt. Each is waited for briefly: it reads a few small files.
pub async fn skills_listing(pool: &ServerPool, config: &Config) -> Vec<String> {
    let names: Vec<&str> = config
        .enabled_servers()
        .filter(|s| s.builtin() == Some(Builtin::Skills))
        .map(|s| s.name.as_str())
        .collect();
    for name in &names {
        let _ = tokio::time::timeout(SKILLS_WAIT, pool.wait_started(name)).await;
    }
    pool.statuses()
        .into_iter()
        .filter(|s| names.contains(&s.name.as_str()))
        .filter_map(|s| s.instructions)
        .filter(|i| !i.trim().is_empty())
        .collect()
}

/// How long a run waits for the skills server before its first request.
const SKILLS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn sandbox_args(
    server: &str,
    args: &[String],
    sandbox: &SandboxConfig,
) -> Result<Vec<String>, SpecError> {
    for flag in ["--sandbox", "--network"] {
        if args
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
        {
            return Err(SpecError::SandboxInArgs {
                server: server.to_owned(),
                flag,
            });
        }
    }
    let mut out = vec![
        "--sandbox".to_string(),
        sandbox.mode.to_string(),
        "--network".to_string(),
        sandbox.network.to_string(),
    ];
    for dir in &sandbox.writable {
        out.push("--writable".into());
        out.push(dir.to_string_lossy().into_owned());
    }
    for path in &sandbox.protect {
        out.push("--protect".into());
        out.push(path.to_string_lossy().into_owned());
    }
    if sandbox.git_writes {
        out.push("--git-writes".into());
    }
    for socket in &sandbox.allow_sockets {
        out.push("--allow-socket".into());
        out.push(socket.to_string_lossy().into_owned());
    }
    Ok(out)
}

/// A started pool and the events it has reported so far.
pub struct StartedPool {
    pub pool: Arc<ServerPool>,
    pub events: Arc<Mutex<Vec<Event>>>,
}

/// What a pool's user hooks into it besides the config.
#[derive(Default)]
pub struct PoolHooks {
    /// Also gets every event (the run's bus).
    pub events: Option<EventSink>,
    /// Learns the OAuth tokens the run obtains.
    pub secrets: Option<SecretSink>,
    /// Asks the person when a server asks for input (the REPL).
    pub elicitor: Option<Arc<dyn tern_mcp::Elicitor>>,
}

/// Starts `specs` with tern's standard options (roots = `cwd`, logs and pins under `$TERN_HOME`,
/// elicitation as `[agent]` says, unless `hooks` brings someone to ask). Stdio servers run in
/// `cwd` (a configured `cwd` is relative to it): the workspace, which is not this process's
/// directory under `-C DIR` or in a sub-agent, and `--root .` must mean it.
pub fn start_pool(
    mut specs: Vec<ServerSpec>,
    config: &Config,
    paths: &ConfigPaths,
    cwd: &Path,
    env: BTreeMap<String, String>,
    hooks: PoolHooks,
) -> Result<StartedPool, SpecError> {
    let PoolHooks {
        events: extra_sink,
        secrets,
        elicitor,
    } = hooks;
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
    for spec in &mut specs {
        if let TransportSpec::Stdio { cwd: dir, .. } = &mut spec.transport {
            *dir = Some(
                dir.take()
                    .map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d)),
            );
        }
    }
    tern_protocol::files::prepare_home(&paths.tern_home).map_err(SpecError::Home)?;
    let pins = PinStore::load(&paths.pins_file())?;
    let opts = PoolOptions {
        roots: vec![cwd.to_path_buf()],
        log_dir: Some(paths.logs_dir()),
        tool_cache: Some(paths.tern_home.join("tool-cache.json")),
        oauth: oauth_options(paths, &env, secrets),
        host_env: env,
        elicitation: if config.agent.accept_elicitation_defaults {
            ElicitationPolicy::AcceptDefaults
        } else {
            ElicitationPolicy::Decline
        },
        elicitor,
        ..PoolOptions::default()
    };
    Ok(StartedPool {
        pool: ServerPool::start(specs, opts, pins, sink),
        events,
    })
}

#[cfg(test)]
mod tests {
    use tern_config::LoadOptions;

    use super::*;

    fn shell_args(user_config: &str) -> Result<Vec<String>, SpecError> {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("tern-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), user_config).unwrap();
        let paths = ConfigPaths::with_home(home, dir.path());
        let config = Config::load(&paths, &LoadOptions::default(), &|_| None).unwrap();
        let specs = specs(
            &config,
            Path::new("/bin/tern"),
            &BTreeMap::new(),
            Some("shell"),
        )?;
        match &specs[0].transport {
            TransportSpec::Stdio { args, .. } => Ok(args.clone()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_built_in_shell_gets_the_sandbox_of_the_config_and_tern_home_protected() {
        let args = shell_args(
            "[sandbox]\nmode = \"read-only\"\nnetwork = \"on\"\nwritable = [\"/opt/cache\"]\n\
             protect = [\"/etc/app\"]\n",
        )
        .unwrap();
        let line = args.join(" ");
        assert!(line.starts_with("serve shell --root . "), "{line}");
        assert!(
            line.contains("--sandbox read-only --network on --writable /opt/cache --protect /etc/app --protect /"),
            "{line}"
        );
        assert!(line.ends_with("tern-home"), "{line}");
        // Defaults: workspace-write, network off.
        let line = shell_args("").unwrap().join(" ");
        assert!(
            line.contains("--sandbox workspace-write --network off --protect "),
            "{line}"
        );
    }

    #[test]
    fn sandbox_flags_in_the_shell_args_are_refused_with_a_pointer_to_the_section() {
        let err = shell_args(
            "[mcp_servers.shell]\nargs = [\"--root\", \".\", \"--sandbox=full-access\"]\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("[sandbox]"), "{err}");
    }
}
