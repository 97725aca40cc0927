//! The two ends of the authorization request: opening its URL (a browser, a command, or — for
//! tests and CI — tern itself fetching it and following the redirects), and the loopback
//! listener the authorization server redirects back to with the code (RFC 8252 §7.3).

use std::{collections::HashMap, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use super::AuthError;

/// Whether tern may hand `url` to a browser: `https:`, and `http:` only on this machine. A server
/// (or a page it names) chooses the URL, and a `file:`, `javascript:` or editor scheme
/// (`vscode:`) opened by the system's handler would act on this machine. The error says why not.
pub fn may_open(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("it is not a URL ({e})"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err("tern opens plain http: links only on this machine (localhost)".into()),
        other => Err(format!(
            "tern opens only https: links (and http: on localhost), not {other}:"
        )),
    }
}

/// How the authorization URL is opened (`TERN_OAUTH_BROWSER`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Browser {
    /// The system's browser (`xdg-open`, `open`), and the URL printed for when there is none.
    #[default]
    System,
    /// Only print the URL; the person opens it.
    Print,
    /// tern fetches the URL itself, following redirects up to the listener: for an
    /// authorization server that grants without a person (tests, CI).
    Fetch,
    /// Run this program with these arguments and the URL appended.
    Command(Vec<String>),
}

impl Browser {
    /// `TERN_OAUTH_BROWSER`: unset or empty → the system browser; `none` → print only;
    /// `fetch` → fetch and follow; anything else → a command line (split at whitespace) the URL
    /// is appended to.
    pub fn from_setting(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            None | Some("") => Browser::System,
            Some("none") => Browser::Print,
            Some("fetch") => Browser::Fetch,
            Some(cmd) => Browser::Command(cmd.split_whitespace().map(str::to_string).collect()),
        }
    }

    /// Opens `url`. Returns a task for [`Browser::Fetch`] whose end (with the final status, or
    /// why it failed) tells the waiting flow that no redirect is coming.
    pub fn open(&self, url: &str) -> Option<tokio::task::JoinHandle<String>> {
        if let Err(why) = may_open(url) {
            tracing::warn!("not opening {url}: {why}");
            return None;
        }
        match self {
            Browser::Print => None,
            Browser::System => {
                for opener in ["xdg-open", "open"] {
                    let spawned = std::process::Command::new(opener)
                        .arg(url)
                        .stdin(std::process::Stdio::null())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .spawn();
                    if let Ok(mut child) = spawned {
                        // Reap it in the background; its exit status says nothing useful.
                        std::thread::spawn(move || child.wait());
                        break;
                    }
                }
                None
            }
            Browser::Command(argv) => {
                let (program, args) = argv.split_first()?;
                let spawned = std::process::Command::new(program)
                    .args(args)
                    .arg(url)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn();
                match spawned {
                    Ok(mut child) => {
                        std::thread::spawn(move || child.wait());
                        None
                    }
                    Err(e) => {
                        let why = format!("cannot run `{program}` (TERN_OAUTH_BROWSER): {e}");
                        Some(tokio::spawn(async move { why }))
                    }
                }
            }
            Browser::Fetch => {
                let url = url.to_string();
                Some(tokio::spawn(async move {
                    let http = crate::http_client()
                        .timeout(Duration::from_secs(30))
                        .build()
                        .unwrap_or_default();
                    match http.get(&url).send().await {
                        Ok(r) => format!(
                            "the authorization page answered HTTP {}",
                            r.status().as_u16()
                        ),
                        Err(e) => format!(
                            "fetching the authorization page failed: {}",
                            e.without_url()
                        ),
                    }
                }))
            }
        }
    }
}

/// What the authorization server sent back to the redirect URI.
#[derive(Debug, Clone, Default)]
pub(crate) struct Callback {
    pub(crate) params: HashMap<String, String>,
}

impl Callback {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
}

/// A listener on `127.0.0.1` for one redirect.
pub(crate) struct Listener {
    listener: TcpListener,
    port: u16,
}

/// The largest request head read from a browser.
const MAX_HEAD: usize = 16 * 1024;

impl Listener {
    /// Binds `127.0.0.1:port` (0: any free port).
    pub(crate) async fn bind(port: u16) -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            AuthError::Local(format!(
                "cannot listen on 127.0.0.1:{port} for the authorization redirect: {e}"
            ))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Local(e.to_string()))?
            .port();
        Ok(Self { listener, port })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits for the redirect carrying `state`. Requests to other paths, or with another
    /// `state` (not this flow's), are answered and ignored.
    pub(crate) async fn wait(&self, state: &str) -> Result<Callback, AuthError> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| AuthError::Local(format!("the redirect listener failed: {e}")))?;
            let Ok(Some(target)) =
                tokio::time::timeout(Duration::from_secs(10), read_target(&mut stream)).await
            else {
                continue;
            };
            let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
            if path != "/callback" {
                respond(&mut stream, 404, "Not the authorization redirect.").await;
                continue;
            }
            let params: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
            if params.get("state").map(String::as_str) != Some(state) {
                respond(
                    &mut stream,
                    400,
                    "This redirect is not for the authorization tern is waiting for.",
                )
                .await;
                continue;
            }
            let message = if params.contains_key("error") {
                "The authorization was not granted. Return to the terminal for details."
            } else {
                "tern received the authorization. You can close this tab and return to the terminal."
            };
            respond(&mut stream, 200, message).await;
            return Ok(Callback { params });
        }
    }
}

/// The request target of an HTTP/1 request head (`GET /callback?… HTTP/1.1`).
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    (method == "GET").then(|| target.to_string())
}

async fn respond(stream: &mut TcpStream, status: u16, message: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>tern</title></head>\
         <body><p>{message}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_setting_reads_as_documented() {
        assert_eq!(Browser::from_setting(None), Browser::System);
        assert_eq!(Browser::from_setting(Some(" ")), Browser::System);
        assert_eq!(Browser::from_setting(Some("fetch")), Browser::Fetch);
        assert_eq!(Browser::from_setting(Some("none")), Browser::Print);
        assert_eq!(
            Browser::from_setting(Some("firefox --new-window")),
            Browser::Command(vec!["firefox".into(), "--new-window".into()])
        );
    }

    #[tokio::test]
    async fn the_listener_takes_only_its_own_redirect() {
        let listener = Listener::bind(0).await.unwrap();
        let uri = listener.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let base = uri.trim_end_matches("/callback").to_string();
        let client = tokio::spawn(async move {
            let http = crate::http_client().build().unwrap_or_default();
            let other = http
                .get(format!("{base}/favicon.ico"))
                .send()
                .await
                .unwrap();
            let stale = http
                .get(format!("{base}/callback?code=x&state=old"))
                .send()
                .await
                .unwrap();
            let ours = http
                .get(format!(
                    "{base}/callback?code=c%2B1&state=s1&iss=http%3A%2F%2Fas"
                ))
                .send()
                .await
                .unwrap();
            (
                other.status().as_u16(),
                stale.status().as_u16(),
                ours.status().as_u16(),
            )
        });
        let got = listener.wait("s1").await.unwrap();
        assert_eq!(got.get("code"), Some("c+1"));
        assert_eq!(got.get("iss"), Some("http://as"));
        assert_eq!(client.await.unwrap(), (404, 400, 200));
    }
}
