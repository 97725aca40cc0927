//! tern-web: an MCP server (stdio, or streamable HTTP with `--http ADDR`) with
//! one tool, `fetch`, that reads a web page as markdown without becoming a door
//! into the network it runs on.
//!
//! - Only `http` and `https`; HTML is converted to markdown ([`convert`]),
//!   other text is returned as is, binary content is refused.
//! - Size and time caps: the body is streamed and cut at `--max-bytes`, the
//!   whole fetch (redirects included) ends at `--timeout`.
//! - The SSRF guard ([`guard`]) refuses loopback, private, link-local, CGNAT,
//!   multicast and reserved addresses in every spelling, on every redirect hop,
//!   checked on the addresses actually connected to ([`resolve`]), unless
//!   the server runs with `--allow-private`.
//! - `fetch` declares an `outputSchema` ([`FetchOutput`]): its `structuredContent` holds
//!   the page text and every line the text adds, for clients that show the model only
//!   that; a failure is text only, its kind in the `_meta` key [`FETCH_ERROR_META`].
//!
//! ```no_run
//! use clap::Parser;
//! # async fn demo() -> Result<(), tern_tool_common::ServeError> {
//! let args = tern_web::Args::parse_from(["tern-web", "--timeout", "20"]);
//! tern_web::run(args).await // serves MCP on stdin/stdout until the client hangs up
//! # }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod convert;
pub mod fetch;
pub mod guard;
pub mod resolve;
mod server;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

pub use fetch::{FetchError, Fetcher, Limits};
pub use guard::AddressPolicy;
pub use server::{DEFAULT_MAX_CHARS, FETCH_ERROR_META, FetchOutput, FetchParams, WebServer};

/// Command-line flags, shared by `tern-web` and `tern serve web`.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "tern-web",
    version,
    about = "tern's web MCP server over stdio (or streamable HTTP with --http)"
)]
pub struct Args {
    /// Allow fetching from loopback, private, link-local and other internal
    /// addresses (local development and tests only).
    #[arg(long)]
    pub allow_private: bool,
    /// Allow this one internal address (repeatable), e.g. a local docs server,
    /// while every other internal address stays refused.
    #[arg(long = "allow-addr", value_name = "IP")]
    pub allow_addr: Vec<IpAddr>,
    /// Bytes of a response body downloaded at most.
    #[arg(long, value_name = "BYTES", default_value_t = 5 * 1024 * 1024)]
    pub max_bytes: usize,
    /// Largest `max_chars` a call may ask for.
    #[arg(long, value_name = "CHARS", default_value_t = 200_000)]
    pub max_chars_limit: usize,
    /// Seconds to establish a connection.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub connect_timeout: u64,
    /// Seconds for a whole fetch, redirects and body included.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
    /// Redirects followed at most.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_redirects: usize,
    #[command(flatten)]
    pub http: tern_tool_common::http::HttpArgs,
}

/// The runtime tern-web runs on (the standalone binary and `tern serve web` alike).
///
/// Two workers: a call waits on the network (DNS, connect, a slow body) while other calls
/// keep being answered.
pub const RUNTIME: tern_tool_common::Runtime = tern_tool_common::Runtime::Workers(2);

/// Runs the server over stdio until the client disconnects, or with `--http` over
/// streamable HTTP until SIGTERM or Ctrl-C.
pub async fn run(args: Args) -> Result<(), tern_tool_common::ServeError> {
    let http = args.http.config()?;
    let server = server_from(args)?;
    match http {
        None => tern_tool_common::serve_stdio(server).await,
        // Every session fetches through the one SSRF guard the flags set up.
        Some(http) => tern_tool_common::http::serve(http, move || server.clone()).await,
    }
}

/// Builds the server the flags describe, using the system resolver.
pub fn server_from(args: Args) -> Result<WebServer, tern_tool_common::ServeError> {
    let config = |msg: String| tern_tool_common::ServeError::Config(msg);
    if args.max_bytes == 0 || args.max_chars_limit == 0 {
        return Err(config(
            "--max-bytes and --max-chars-limit must be at least 1".into(),
        ));
    }
    if args.timeout == 0 || args.connect_timeout == 0 {
        return Err(config(
            "--timeout and --connect-timeout must be at least 1 second".into(),
        ));
    }
    if args.allow_private {
        tracing::warn!("--allow-private: internal addresses can be fetched");
    }
    let policy = AddressPolicy {
        allow_private: args.allow_private,
        trusted: args.allow_addr,
    };
    let limits = Limits {
        max_bytes: args.max_bytes,
        connect_timeout: Duration::from_secs(args.connect_timeout),
        total_timeout: Duration::from_secs(args.timeout),
        max_redirects: args.max_redirects,
    };
    let fetcher = Fetcher::new(policy, Arc::new(resolve::SystemResolver), limits)
        .map_err(|e| config(e.to_string()))?;
    Ok(WebServer::new(fetcher, args.max_chars_limit))
}
