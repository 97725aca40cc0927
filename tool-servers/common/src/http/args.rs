//! The `--http*` flags every tool server shares, and their validation into an
//! [`HttpConfig`]: every way to expose tools to a network without a token is refused here,
//! before a socket is opened.

use std::ffi::OsString;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::ServeError;

use super::guard::{Origin, Token, host_name};

/// Shortest bearer token accepted: a token is the only thing between the network and the
/// tools, so a short one is refused rather than warned about.
pub const MIN_TOKEN_LEN: usize = 16;

/// Flags that switch a tool server from stdio to MCP streamable HTTP.
///
/// Flattened into the `Args` of `tern-fs`, `tern-shell` and `tern-web`, so the standalone
/// binaries and `tern serve NAME` take the same flags.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Serving over HTTP")]
pub struct HttpArgs {
    /// Serve MCP streamable HTTP at http://ADDR/mcp instead of stdio, e.g. `127.0.0.1:8765`
    /// (port 0 picks a free port; the URL is printed on stderr). Clients always need a
    /// bearer token: --http-token-env's, or one generated and printed once on stderr.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    pub http: Option<SocketAddr>,
    /// Accept requests without a bearer token. Loopback addresses only, and even there
    /// every local user (and any local program) can then use these tools.
    #[arg(long, requires = "http", conflicts_with_all = ["http_token_env", "http_require_token"])]
    pub no_auth: bool,
    /// Clients must send `Authorization: Bearer TOKEN`, TOKEN being the value of the
    /// environment variable VAR (at least 16 characters; never given on the command line,
    /// never logged). Without it a random token is generated and printed once on stderr.
    #[arg(long, value_name = "VAR", requires = "http")]
    pub http_token_env: Option<String>,
    /// Refuse to start without --http-token-env instead of generating a token (for
    /// services whose clients must know the token in advance).
    #[arg(long, requires = "http_token_env")]
    pub http_require_token: bool,
    /// Accept requests carrying this `Origin` (`https://app.example.com[:PORT]`, repeatable).
    /// A request whose `Origin` is neither the server's own nor listed is refused (403).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub http_allow_origin: Vec<String>,
    /// Accept this name in the `Host` header (repeatable). On loopback only `localhost`,
    /// `127.0.0.1`, `::1` and these are (against DNS rebinding); on another address, once
    /// one is given, only these and the bound IP are.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub http_allow_host: Vec<String>,
    /// At most N MCP sessions (2025-11-25 clients) at once; an `initialize` beyond them is
    /// answered 503 with `Retry-After`. A session ends on DELETE or after --session-idle-sec.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
    /// End a session after SECS without a message from its client (its slot is freed).
    #[arg(long, value_name = "SECS", default_value_t = 600, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle_sec: u64,
    /// At most N requests of one session in flight at once; one more is answered 429 with
    /// `Retry-After`.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_inflight: u32,
    /// At most N open connections. Beyond it the oldest connection that has not yet sent
    /// the token is closed to make room (so idle or token-less connections never lock out
    /// clients that have it); when every one has, the new connection gets 503.
    #[arg(long, value_name = "N", default_value_t = 256, requires = "http",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Close a connection whose request headers take longer than SECS to arrive (slowloris),
    /// that sits idle between requests that long, or that sends no authorized request
    /// within SECS of connecting.
    #[arg(long, value_name = "SECS", default_value_t = 10, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_sec: u64,
}

/// How much of the server one client, or all of them, can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Live MCP sessions (`--max-sessions`).
    pub max_sessions: usize,
    /// A session ends after this long without a message (`--session-idle-sec`).
    pub session_idle: Duration,
    /// Requests of one session in flight (`--max-inflight`).
    pub max_inflight: usize,
    /// Open connections (`--max-connections`).
    pub max_connections: usize,
    /// Request headers, an idle keep-alive connection, and a connection without an
    /// authorized request, each get this long (`--header-timeout-sec`).
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: 64,
            session_idle: Duration::from_secs(600),
            max_inflight: 16,
            max_connections: 256,
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// A validated HTTP setup: where to listen and who may come in.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The address to bind (port 0: any free port).
    pub addr: SocketAddr,
    pub(crate) token: Option<Token>,
    /// The token was generated here, so it is printed once when serving starts.
    pub(crate) generated_token: bool,
    pub(crate) allowed_origins: Vec<Origin>,
    /// Names accepted in `Host`; `None`: any (a non-loopback bind, where the token guards).
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Sessions, in-flight requests, connections and their timeouts.
    pub limits: Limits,
}

impl HttpConfig {
    /// Whether clients must present the bearer token.
    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }
}

impl HttpArgs {
    /// The HTTP setup these flags ask for, reading the token from the process environment;
    /// `None` without `--http` (serve stdio).
    pub fn config(&self) -> Result<Option<HttpConfig>, ServeError> {
        self.config_with(|var| std::env::var_os(var))
    }

    /// [`Self::config`] with the environment given as a lookup (tests never touch the
    /// process environment).
    pub fn config_with(
        &self,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<HttpConfig>, ServeError> {
        let Some(addr) = self.http else {
            return Ok(None);
        };
        let invalid = |msg: String| ServeError::Config(msg);
        let loopback = is_loopback(addr.ip());
        let (token, generated_token) = match &self.http_token_env {
            Some(var) => (Some(read_token(var, &env)?), false),
            None if self.no_auth && !loopback => {
                return Err(invalid(format!(
                    "refusing --no-auth on {addr}: anyone who can reach that address could use \
                     these tools. hint: drop --no-auth (a token is then generated and printed), \
                     or bind a loopback address such as 127.0.0.1:{}",
                    addr.port()
                )));
            }
            None if self.no_auth => (None, false),
            None => (Some(generate_token()?), true),
        };
        let allowed_origins = self
            .http_allow_origin
            .iter()
            .map(|o| {
                Origin::parse_allowed(o)
                    .map_err(|e| invalid(format!("--http-allow-origin {o}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut names = self
            .http_allow_host
            .iter()
            .map(|h| {
                host_name(h)
                    .ok_or_else(|| invalid(format!("--http-allow-host {h}: not a host name")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let allowed_hosts = if loopback {
            names.extend(["localhost".into(), "127.0.0.1".into(), "::1".into()]);
            names.push(addr.ip().to_string());
            Some(names)
        } else if names.is_empty() {
            None
        } else {
            if !addr.ip().is_unspecified() {
                names.push(addr.ip().to_string());
            }
            Some(names)
        };
        Ok(Some(HttpConfig {
            addr,
            token,
            generated_token,
            allowed_origins,
            allowed_hosts,
            limits: Limits {
                max_sessions: self.max_sessions as usize,
                session_idle: Duration::from_secs(self.session_idle_sec),
                max_inflight: self.max_inflight as usize,
                max_connections: self.max_connections as usize,
                header_timeout: Duration::from_secs(self.header_timeout_sec),
            },
        }))
    }
}

/// Loopback, including IPv4 loopback written as an IPv4-mapped IPv6 address.
fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// 32 random bytes from the kernel, hex: what `openssl rand -hex 32` would give.
fn generate_token() -> Result<Token, ServeError> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| {
            ServeError::Config(format!(
                "cannot generate a bearer token (/dev/urandom: {e}). hint: put one in an \
                 environment variable and pass --http-token-env VAR"
            ))
        })?;
    Ok(Token::new(
        bytes.iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

fn read_token(var: &str, env: &impl Fn(&str) -> Option<OsString>) -> Result<Token, ServeError> {
    let invalid = |msg: String| ServeError::Config(format!("--http-token-env {var}: {msg}"));
    let value = env(var).ok_or_else(|| invalid(format!("${var} is not set")))?;
    let value = value
        .into_string()
        .map_err(|_| invalid(format!("${var} is not valid UTF-8")))?;
    // Visible ASCII: what an `Authorization` header can carry unchanged.
    if let Some(bad) = value.chars().find(|c| !c.is_ascii_graphic()) {
        let what = if bad.is_whitespace() {
            "whitespace".to_string()
        } else {
            format!("the character {bad:?}")
        };
        return Err(invalid(format!(
            "the token in ${var} contains {what}; use visible ASCII only (e.g. `openssl rand -hex 32`)"
        )));
    }
    if value.len() < MIN_TOKEN_LEN {
        return Err(invalid(format!(
            "the token in ${var} has {} characters; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)",
            value.len()
        )));
    }
    Ok(Token::new(value))
}

/// `--http ADDR`: an IP socket address, or `localhost:PORT` for `127.0.0.1:PORT`.
fn parse_addr(raw: &str) -> Result<SocketAddr, String> {
    if let Some(port) = raw.strip_prefix("localhost:") {
        let port = port
            .parse::<u16>()
            .map_err(|e| format!("bad port `{port}`: {e}"))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    raw.parse::<SocketAddr>().map_err(|_| {
        format!("`{raw}` is not IP:PORT (e.g. 127.0.0.1:8765, [::1]:8765, 0.0.0.0:8765)")
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use clap::Parser;

    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        http: HttpArgs,
    }

    const GOOD: &str = "0123456789abcdef0123";

    fn config(args: &[&str], env: &[(&str, &str)]) -> Result<Option<HttpConfig>, String> {
        let cli = Cli::try_parse_from(std::iter::once("srv").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.http
            .config_with(|var| {
                env.iter()
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| OsString::from(v))
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn without_http_the_server_stays_on_stdio() {
        assert!(config(&[], &[]).unwrap().is_none());
    }

    #[test]
    fn without_a_token_variable_one_is_generated_on_every_address() {
        for addr in [
            "127.0.0.1:0",
            "0.0.0.0:8765",
            "[::]:8765",
            "192.168.1.10:80",
        ] {
            let c = config(&["--http", addr], &[]).unwrap().unwrap();
            assert!(c.requires_token() && c.generated_token, "{addr}");
            assert_eq!(c.token.as_ref().unwrap().value().len(), 64);
        }
        let a = config(&["--http", "127.0.0.1:0"], &[]).unwrap().unwrap();
        let b = config(&["--http", "127.0.0.1:0"], &[]).unwrap().unwrap();
        assert_ne!(a.token.unwrap().value(), b.token.unwrap().value());
    }

    #[test]
    fn no_auth_is_loopback_only() {
        let c = config(&["--http", "127.0.0.1:0", "--no-auth"], &[])
            .unwrap()
            .unwrap();
        assert!(!c.requires_token());
        let hosts = c.allowed_hosts.unwrap();
        for h in ["localhost", "127.0.0.1", "::1"] {
            assert!(hosts.contains(&h.to_string()), "{hosts:?}");
        }
        let c = config(&["--http", "localhost:8765", "--no-auth"], &[])
            .unwrap()
            .unwrap();
        assert_eq!(c.addr, "127.0.0.1:8765".parse().unwrap());
        for addr in ["0.0.0.0:8765", "[::]:8765", "192.168.1.10:80"] {
            let e = config(&["--http", addr, "--no-auth"], &[]).unwrap_err();
            assert!(e.contains("refusing --no-auth"), "{e}");
        }
        let e = config(
            &[
                "--http",
                "127.0.0.1:0",
                "--no-auth",
                "--http-token-env",
                "TOK",
            ],
            &[("TOK", GOOD)],
        )
        .unwrap_err();
        assert!(e.contains("--no-auth"), "{e}");
    }

    #[test]
    fn a_token_opens_any_address_and_host_checks_are_off_by_default() {
        let c = config(
            &["--http", "0.0.0.0:8765", "--http-token-env", "TOK"],
            &[("TOK", GOOD)],
        )
        .unwrap()
        .unwrap();
        assert!(c.requires_token());
        assert!(c.allowed_hosts.is_none());
        let c = config(
            &[
                "--http",
                "10.0.0.5:8765",
                "--http-token-env",
                "TOK",
                "--http-allow-host",
                "Tools.Example.com:8765",
            ],
            &[("TOK", GOOD)],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.allowed_hosts.unwrap(),
            vec!["tools.example.com".to_string(), "10.0.0.5".to_string()]
        );
    }

    #[test]
    fn bad_tokens_are_refused_with_the_reason_and_never_echoed() {
        let tok = |value: &str| {
            config(
                &["--http", "127.0.0.1:0", "--http-token-env", "TOK"],
                &[("TOK", value)],
            )
        };
        let e = config(&["--http", "127.0.0.1:0", "--http-token-env", "TOK"], &[]).unwrap_err();
        assert!(e.contains("$TOK is not set"), "{e}");
        let e = tok("short-secret").unwrap_err();
        assert!(e.contains("at least 16"), "{e}");
        assert!(
            !e.contains("short-secret"),
            "the token is never echoed: {e}"
        );
        let e = tok("0123456789 abcdef0123").unwrap_err();
        assert!(e.contains("whitespace"), "{e}");
        assert!(tok(GOOD).unwrap().unwrap().requires_token());
    }

    #[test]
    fn require_token_needs_a_token_variable() {
        let e = config(&["--http", "127.0.0.1:0", "--http-require-token"], &[]).unwrap_err();
        assert!(e.contains("--http-token-env"), "{e}");
    }

    #[test]
    fn http_flags_need_http() {
        let e = config(&["--http-token-env", "TOK"], &[("TOK", GOOD)]).unwrap_err();
        assert!(e.contains("--http"), "{e}");
        let e = config(&["--max-sessions", "3"], &[]).unwrap_err();
        assert!(e.contains("--http"), "{e}");
    }

    #[test]
    fn limits_have_defaults_and_refuse_zero() {
        let c = config(&["--http", "127.0.0.1:0"], &[]).unwrap().unwrap();
        assert_eq!(c.limits, Limits::default());
        let c = config(
            &[
                "--http",
                "127.0.0.1:0",
                "--max-sessions",
                "3",
                "--session-idle-sec",
                "2",
                "--max-inflight",
                "1",
                "--max-connections",
                "8",
                "--header-timeout-sec",
                "1",
            ],
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.limits,
            Limits {
                max_sessions: 3,
                session_idle: Duration::from_secs(2),
                max_inflight: 1,
                max_connections: 8,
                header_timeout: Duration::from_secs(1),
            }
        );
        for flag in [
            "--max-sessions",
            "--session-idle-sec",
            "--max-inflight",
            "--max-connections",
            "--header-timeout-sec",
        ] {
            let e = config(&["--http", "127.0.0.1:0", flag, "0"], &[]).unwrap_err();
            assert!(e.contains(flag), "{e}");
        }
    }

    #[test]
    fn bad_addresses_and_origins_are_named() {
        let e = config(&["--http", "example.com:80"], &[]).unwrap_err();
        assert!(e.contains("is not IP:PORT"), "{e}");
        let e = config(
            &[
                "--http",
                "127.0.0.1:0",
                "--http-allow-origin",
                "https://a.example/app",
            ],
            &[],
        )
        .unwrap_err();
        assert!(
            e.contains("--http-allow-origin https://a.example/app"),
            "{e}"
        );
    }

    #[test]
    fn the_token_is_redacted_in_debug_output() {
        let c = config(
            &["--http", "127.0.0.1:0", "--http-token-env", "TOK"],
            &[("TOK", GOOD)],
        )
        .unwrap()
        .unwrap();
        assert!(!format!("{c:?}").contains(GOOD));
    }
}
