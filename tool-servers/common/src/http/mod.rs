//! Serving a tool server over MCP streamable HTTP (`--http ADDR`), so hosts on other
//! machines can use its tools.
//!
//! The MCP side is rmcp's [`StreamableHttpService`]: it serves both of MCP's eras at one
//! endpoint (a 2025-11-25 client gets a session from `initialize`, a 2026-07-28 client sends
//! self-contained requests), and makes one handler per session (or per modern request)
//! from the factory given to [`serve`]. Every handler is a clone of the one server the
//! flags configured, so every session has the same confinement (roots, deny rules,
//! sandbox, SSRF guard) as stdio.
//!
//! In front of it, [`guard`] decides who gets in (Host, Origin, bearer token); rmcp's own
//! Host allow-list is switched off so that rule has one home. Behind the guard, [`limits`]
//! caps live sessions (503) and each session's requests in flight (429); under both,
//! [`conn`] caps connections and closes slow, idle and token-less ones.
//!
//! The server runs until SIGTERM or Ctrl-C, then stops accepting, ends the sessions
//! (which cancels their running calls) and waits up to [`SHUTDOWN_GRACE`] for
//! connections to finish.

mod args;
mod conn;
mod guard;
mod limits;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

pub use args::{HttpArgs, HttpConfig, Limits, MIN_TOKEN_LEN};

use crate::{ServeError, signals::Signals};

/// The one endpoint: `http://ADDR/mcp`.
pub const MCP_PATH: &str = "/mcp";

/// How long a shutdown waits for open connections before closing them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves the handlers `make` builds at `http://ADDR/mcp` until SIGTERM or Ctrl-C.
///
/// Prints `listening on http://ADDR/mcp` on stderr once the socket is bound (with the
/// real port when ADDR's was 0): a person starting the server sees where it is, and a
/// program starting it learns the URL from that line.
pub async fn serve<S, F>(config: HttpConfig, make: F) -> Result<(), ServeError>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| ServeError::Config(format!("--http {}: cannot listen: {e}", config.addr)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Config(format!("--http {}: {e}", config.addr)))?;
    let signals = Signals::register();
    let stop = CancellationToken::new();
    let limits = config.limits;
    warn_if_too_few_descriptors(limits.max_connections);
    let sessions = limits::Sessions::new(limits.max_sessions);
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = Some(limits.session_idle);
    let mcp = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(limits::CappedSessions::new(local, sessions.clone())),
        StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_cancellation_token(stop.child_token()),
    );
    let generated = config
        .token
        .as_ref()
        .filter(|_| config.generated_token)
        .map(|t| t.value().to_string());
    let guard = Arc::new(guard::Guard {
        token: config.token,
        allowed_origins: config.allowed_origins,
        allowed_hosts: config.allowed_hosts,
    });
    let limiter = Arc::new(limits::Limiter {
        sessions,
        in_flight: limits::InFlight::new(limits.max_inflight),
    });
    // The last layer added runs first: the guard, then the limits, then MCP.
    let app = axum::Router::new()
        .route_service(MCP_PATH, mcp)
        .layer(axum::middleware::from_fn_with_state(limiter, limits::limit))
        .layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            guard::enforce,
        ));
    announce(bound, generated.as_deref());
    if !bound.ip().to_canonical().is_loopback() {
        // The token is only as secret as the path it travels: plain HTTP shows it to
        // anyone on the way.
        tracing::warn!(
            "serving plain HTTP on {bound}: requests (and the bearer token) cross the network \
             unencrypted; put a TLS reverse proxy in front, or reach the server through an SSH \
             tunnel or a VPN"
        );
    }
    tracing::info!(
        token_required = guard.token.is_some(),
        host_check = guard.allowed_hosts.is_some(),
        max_sessions = limits.max_sessions,
        max_inflight = limits.max_inflight,
        max_connections = limits.max_connections,
        "serving MCP over streamable HTTP"
    );
    let server = conn::serve(
        listener,
        app,
        limits.max_connections,
        limits.header_timeout,
        stop.clone(),
    );
    tokio::select! {
        () = server => Ok(()),
        () = shut_down_on_signal(signals, stop) => Ok(()),
    }
}

/// Warns when the process may run out of file descriptors before `--max-connections` is
/// reached (each connection is one; tool calls need some too), which would lock clients
/// out at `accept` where no cap can help.
fn warn_if_too_few_descriptors(max_connections: usize) {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let needed = max_connections as u64 + 64;
    if let Some(current) = limit.current
        && current < needed
    {
        tracing::warn!(
            "the file descriptor limit ({current}) is below --max-connections + 64 ({needed}): \
             clients may be refused before the cap. hint: raise it (`ulimit -n {needed}`) or \
             lower --max-connections"
        );
    }
}

/// The lines that tell a person (and a program) where the server is and, when it made
/// one up, the token to send (printed once, like Jupyter's; never logged).
#[allow(clippy::print_stderr)]
fn announce(local: SocketAddr, generated_token: Option<&str>) {
    // Not log lines: they must show whatever TERN_LOG says, like a web server's banner.
    if let Some(token) = generated_token {
        eprintln!(
            "bearer token (clients send `Authorization: Bearer TOKEN`; pass --http-token-env \
             VAR to choose it): {token}"
        );
    }
    eprintln!("listening on http://{local}{MCP_PATH}");
}

/// Waits for SIGTERM or Ctrl-C, starts the graceful shutdown, and returns once the
/// grace period is over (by then [`serve`] has usually returned on its own).
async fn shut_down_on_signal(signals: Signals, stop: CancellationToken) {
    signals.recv().await;
    tracing::info!("shutting down: no new connections; ending sessions");
    stop.cancel();
    tokio::time::sleep(SHUTDOWN_GRACE).await;
    tracing::warn!(
        "connections still open {} s after the shutdown signal; closing them",
        SHUTDOWN_GRACE.as_secs()
    );
}
