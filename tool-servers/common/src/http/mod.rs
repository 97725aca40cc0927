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
//! Host allow-list is switched off so that rule has one home.
//!
//! The server runs until SIGTERM or Ctrl-C, then stops accepting, ends the sessions
//! (which cancels their running calls) and waits up to [`SHUTDOWN_GRACE`] for
//! connections to finish.

mod args;
mod guard;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

pub use args::{HttpArgs, HttpConfig, MIN_TOKEN_LEN};

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
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Config(format!("--http {}: {e}", config.addr)))?;
    let signals = Signals::register();
    let stop = CancellationToken::new();
    let mcp = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
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
    let app = axum::Router::new().route_service(MCP_PATH, mcp).layer(
        axum::middleware::from_fn_with_state(guard.clone(), guard::enforce),
    );
    announce(local, generated.as_deref());
    if !local.ip().to_canonical().is_loopback() {
        // The token is only as secret as the path it travels: plain HTTP shows it to
        // anyone on the way.
        tracing::warn!(
            "serving plain HTTP on {local}: requests (and the bearer token) cross the network \
             unencrypted; put a TLS reverse proxy in front, or reach the server through an SSH \
             tunnel or a VPN"
        );
    }
    tracing::info!(
        token_required = guard.token.is_some(),
        host_check = guard.allowed_hosts.is_some(),
        "serving MCP over streamable HTTP"
    );
    // Without TCP_NODELAY a reply written in pieces (SSE event, then the chunked end) waits
    // for the client's delayed ACK: ~40 ms per call instead of ~0.1 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(stop.clone().cancelled_owned())
    .into_future();
    tokio::select! {
        result = server => result.map_err(|e| ServeError::Session(e.to_string())),
        () = shut_down_on_signal(signals, stop) => Ok(()),
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
