//! Streamable HTTP servers failing (issue 11, item 8): a server that dies mid-call fails the
//! call as soon as the connection is gone, and every failure is one clean line.

use std::time::{Duration, Instant};

use serde_json::json;
use tern_mcp::{CallError, CallOptions, Lifecycle, ServerSpec, ServerState, TransportSpec};

use tern_e2e::pool_harness::{Harness, http_test_server};

fn http_spec(name: &str, url: &str) -> ServerSpec {
    let mut spec = ServerSpec::new(
        name,
        TransportSpec::Http {
            url: url.to_string(),
            bearer_token: None,
            headers: Default::default(),
        },
    );
    spec.startup_timeout = Duration::from_secs(20);
    spec
}

#[tokio::test]
async fn an_http_server_dying_mid_call_fails_the_call_at_once() {
    // Both eras: a 2025-11-25 session streams the reply on the POST's SSE stream; a
    // 2026-07-28 request is a POST of its own.
    for lifecycle in [Lifecycle::Initialize, Lifecycle::Discover] {
        dies_mid_call(lifecycle).await;
    }
}

async fn dies_mid_call(lifecycle: Lifecycle) {
    let (mut child, url) = http_test_server();
    let mut spec = http_spec("remote", &url);
    spec.lifecycle = lifecycle;
    let h = Harness::start(vec![spec]).await;
    assert!(
        matches!(h.state("remote"), ServerState::Ready { .. }),
        "{:?}",
        h.state("remote")
    );
    let pool = h.pool.clone();
    let call = tokio::spawn(async move {
        let started = Instant::now();
        let r = pool
            .call(
                "remote",
                "sleep",
                json!({"ms": 60_000})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                CallOptions::new(Duration::from_secs(60)),
            )
            .await;
        (r, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.kill().unwrap();
    let _ = child.wait();
    let (result, took) = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call outlived its server by 30 s")
        .unwrap();
    eprintln!("{lifecycle:?}: {took:?} {result:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = result.unwrap_err();
    assert!(matches!(err, CallError::ConnectionLost { .. }), "{err:?}");
    let text = err.to_string();
    assert!(!text.contains('\n') && !text.contains("Worker"), "{text}");
    h.pool.shutdown().await;
}

/// A loopback "web server" that answers every request with a 404 HTML page.
fn html_404_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 8192];
            let _ = stream.read(&mut buf);
            let body = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>\n</body></html>\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/mcp")
}

#[test]
fn http_failures_are_one_clean_line_each_without_library_logs() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: bind, note it, let it go.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/mcp", l.local_addr().unwrap().port())
    };
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp_servers.fs]\nenabled = false\n[mcp_servers.shell]\nenabled = false\n\
             [mcp_servers.web]\nenabled = false\n\
             [mcp_servers.pages]\nurl = {:?}\n[mcp_servers.nobody]\nurl = {closed:?}\n",
            html_404_server()
        ),
    )
    .unwrap();
    let out = tern_e2e::tern(home.path(), dir.path())
        .args(["mcp", "list"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = format!("{stdout}{stderr}");
    for bad in [
        "\x1b[",
        "ERROR",
        "WorkerTransport",
        "<html",
        "<!DOCTYPE",
        "reqwest::",
    ] {
        assert!(!all.contains(bad), "{bad:?} in:\n{all}");
    }
    assert!(stderr.trim().is_empty(), "library log lines:\n{stderr}");
    let error_line = |server: &str| -> String {
        let mut lines = stdout.lines();
        lines
            .find(|l| l.starts_with(server))
            .unwrap_or_else(|| panic!("{server} missing:\n{stdout}"));
        lines.next().unwrap_or_default().trim().to_string()
    };
    let pages = error_line("pages");
    assert!(pages.starts_with("error: "), "{stdout}");
    assert!(pages.contains("404"), "{pages}");
    let nobody = error_line("nobody");
    assert!(nobody.contains("cannot connect to"), "{nobody}");
    assert!(
        nobody.to_lowercase().contains("connection refused"),
        "{nobody}"
    );
}
