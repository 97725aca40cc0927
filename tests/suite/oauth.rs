//! OAuth against a real local authorization server (`tern-test-server --http … --oauth`):
//! `tern mcp login` through the whole flow (discovery, dynamic registration, PKCE, the loopback
//! redirect, `iss`), a silent refresh when the token expires, one clear message naming
//! `tern mcp login` when it is revoked — with no refresh loop — tokens kept out of every file
//! but their own and out of what the model sees, and `tern mcp logout`.

use std::{
    io::BufRead,
    os::unix::fs::PermissionsExt,
    process::{Child, Command, Output, Stdio},
};

use serde_json::Value;
use tern_e2e::run_env::{RunEnv, all_files};
use tern_model::mock::script::AnthropicTurn;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The test server with its authorization server, killed on drop.
struct OAuthServer {
    child: Child,
    /// `127.0.0.1:PORT`
    addr: String,
}

impl OAuthServer {
    fn start() -> Self {
        let mut child = Command::new(tern_e2e::bin("tern-test-server"))
            .args(["--http", "127.0.0.1:0", "--oauth"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
        Self { child, addr }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `METHOD path` on the server; the body of the answer.
    async fn request(&self, method: &str, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(&self.addr).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.addr
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        let (status, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        body.to_string()
    }

    async fn admin(&self, what: &str) {
        self.request("POST", &format!("/admin/{what}")).await;
    }

    /// What the authorization server saw, in order.
    async fn log(&self) -> Vec<String> {
        let body = self.request("GET", "/admin/log").await;
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `tern ARGS`, with `TERN_OAUTH_BROWSER` set to `browser` (or unset).
async fn tern(env: &RunEnv, args: &[&str], browser: Option<&str>) -> Output {
    let mut cmd = env.command(args);
    cmd.env_remove("TERN_OAUTH_BROWSER");
    if let Some(b) = browser {
        cmd.env("TERN_OAUTH_BROWSER", b);
    }
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("tern did not finish in 60 s")
        .unwrap()
}

/// The stored token set of `remote`.
fn stored(env: &RunEnv) -> Value {
    let path = env.home.path().join("oauth/remote.json");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let issuer = json["issuer"].as_str().unwrap().to_string();
    json["issuers"][issuer]["token"].clone()
}

/// Whether `tern mcp list` shows `remote` ready.
fn ready(listing: &str) -> bool {
    listing
        .lines()
        .any(|l| l.split_whitespace().take(2).eq(["remote", "ready"]))
}

/// Entries of the log after the first `mark`.
fn after<'a>(log: &'a [String], mark: &str) -> &'a [String] {
    let at = log.iter().position(|e| e == mark).unwrap();
    &log[at + 1..]
}

#[tokio::test]
async fn login_refresh_and_revocation_against_a_local_authorization_server() {
    let server = OAuthServer::start();
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.remote]\nurl = \"{}/mcp\"\n",
        server.base()
    ));

    // Before any login: the server fails with the one thing to do.
    let out = tern(&env, &["mcp", "list"], None).await;
    let listing = text(&out.stdout);
    assert!(
        listing.contains("error: server `remote` needs authorization (it asks for it): run `tern mcp login remote`"),
        "{listing}"
    );

    // The login: dynamic registration, the authorization (fetched, as CI has no browser), the
    // code exchange; tokens stored privately, printed nowhere.
    let out = tern(&env, &["mcp", "login", "remote"], Some("fetch")).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "authorized tern for `remote` with {} (scopes: tools offline_access)",
            server.base()
        )),
        "{stdout}"
    );
    let file = env.home.path().join("oauth/remote.json");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let first = stored(&env);
    let access = first["access_token"].as_str().unwrap().to_string();
    let refresh = first["refresh_token"].as_str().unwrap().to_string();
    for shown in [&stdout, &stderr] {
        assert!(
            !shown.contains(&access) && !shown.contains(&refresh),
            "{shown}"
        );
    }
    let log = server.log().await;
    assert_eq!(
        after(&log, "register"),
        ["authorize", "token:authorization_code"],
        "{log:?}"
    );

    // With the token, the server is ready.
    let out = tern(&env, &["mcp", "list"], None).await;
    assert!(ready(&text(&out.stdout)), "{}", text(&out.stdout));

    // The access token expires: refreshed silently, no new authorization.
    server.admin("expire").await;
    let out = tern(&env, &["mcp", "list"], None).await;
    let listing = text(&out.stdout);
    assert!(ready(&listing), "{listing}");
    assert!(!listing.contains("login"), "{listing}");
    let log = server.log().await;
    assert_eq!(
        after(&log, "admin:expire"),
        ["mcp:invalid_token", "token:refresh_token"],
        "{log:?}"
    );
    let refreshed = stored(&env)["access_token"].as_str().unwrap().to_string();
    assert_ne!(refreshed, access);

    // A run that refreshes on the way and calls a tool echoing the bare token: the model and
    // every file but the credentials see it redacted.
    server.admin("expire").await;
    env.server.enqueue(
        AnthropicTurn::new()
            .tool_use("toolu_1", "remote__token", &["{}"])
            .finish("tool_use"),
    );
    env.answer("done");
    let out = tern(
        &env,
        &[
            "run",
            "show the token",
            "--mode",
            "yolo",
            "--output-format",
            "jsonl",
        ],
        None,
    )
    .await;
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let during_run = stored(&env)["access_token"].as_str().unwrap().to_string();
    assert_ne!(during_run, refreshed, "the run refreshed the expired token");
    let events = text(&out.stdout);
    assert!(events.contains("[REDACTED]"), "{events}");
    let requests = env.server.requests();
    let to_model = String::from_utf8_lossy(&requests.last().unwrap().body).into_owned();
    assert!(to_model.contains("[REDACTED]"), "{to_model}");
    for token in [&access, &refreshed, &during_run] {
        assert!(!events.contains(token.as_str()));
        assert!(!to_model.contains(token.as_str()));
        for path in all_files(env.home.path()) {
            if path == file {
                continue;
            }
            let content = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(
                !content.contains(token.as_str()),
                "{} holds a token",
                path.display()
            );
        }
    }

    // Revoked (access and refresh): one refresh attempt, refused, then one clear message —
    // no loop, no authorization without a person.
    server.admin("revoke").await;
    let out = tern(&env, &["mcp", "list"], None).await;
    let listing = text(&out.stdout);
    assert!(
        listing.contains(
            "error: server `remote` needs authorization (its token expired or was revoked, and \
             refreshing it was refused): run `tern mcp login remote`"
        ),
        "{listing}"
    );
    let log = server.log().await;
    let since = after(&log, "admin:revoke");
    assert_eq!(
        since.iter().filter(|e| *e == "token:refresh_token").count(),
        1,
        "{log:?}"
    );
    assert!(!since.iter().any(|e| e.starts_with("authorize")), "{log:?}");

    // Logged in again, then out: the tokens are revoked at the server and forgotten here.
    let out = tern(&env, &["mcp", "login", "remote"], Some("fetch")).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = tern(&env, &["mcp", "logout", "remote"], None).await;
    assert!(
        text(&out.stdout).contains("forgot the credentials of `remote` (2 token(s) revoked)"),
        "{}",
        text(&out.stdout)
    );
    assert!(!file.exists());
    let log = server.log().await;
    assert_eq!(log.iter().filter(|e| *e == "revoke").count(), 2, "{log:?}");
    let out = tern(&env, &["mcp", "logout", "remote"], None).await;
    assert!(text(&out.stdout).contains("no credentials stored for `remote`"));
}

#[tokio::test]
async fn a_run_with_an_opener_authorizes_by_itself() {
    let server = OAuthServer::start();
    let env = RunEnv::new().await;
    env.add_servers(&format!(
        "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
         [mcp_servers.remote]\nurl = \"{}/mcp\"\n",
        server.base()
    ));
    // TERN_OAUTH_BROWSER set: the run authorizes without `tern mcp login`.
    let out = tern(&env, &["tools", "--json"], Some("fetch")).await;
    let tools = text(&out.stdout);
    assert!(
        tools.contains("remote__token"),
        "{tools}\n{}",
        text(&out.stderr)
    );
    let log = server.log().await;
    assert!(
        log.contains(&"token:authorization_code".to_string()),
        "{log:?}"
    );
    // Nothing printed carries the token.
    let token = stored(&env)["access_token"].as_str().unwrap().to_string();
    assert!(!text(&out.stderr).contains(&token) && !tools.contains(&token));
}
