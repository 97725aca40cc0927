//! Fetching from a loopback server with `--allow-private`: conversion, caps,
//! redirects and errors as a model sees them.

use std::time::{Duration, Instant};

use serde_json::json;

use super::http::{Route, TestHttp};
use super::support::{field, is_error, start, text};

const PAGE: &str = r#"<!doctype html><html><head><title>Doc</title>
<style>body { color: red }</style><script>window.secret = "script-text"</script></head>
<body><nav><a href="/home">Home</a></nav>
<h1>Main Title</h1><p>Intro with <a href="https://example.org/ref">a reference</a>.</p>
<h2>Section Two</h2><ul><li>first item</li><li>second item</li></ul>
<pre><code>let x = 1;</code></pre></body></html>"#;

#[tokio::test]
async fn html_is_converted_to_markdown() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route("/doc", Route::ok("text/html; charset=utf-8", PAGE));
    let s = start(&["--allow-private"]).await;
    let url = http.url("/doc");
    let r = s.fetch(json!({"url": url})).await;
    let t = text(&r);
    assert!(!is_error(&r), "{t}");
    assert!(t.contains("\n# Main Title\n"), "{t}");
    assert!(t.contains("\n## Section Two\n"), "{t}");
    assert!(t.contains("[a reference](https://example.org/ref)"), "{t}");
    assert!(t.contains("first item") && t.contains("second item"), "{t}");
    assert!(t.contains("let x = 1;"), "{t}");
    assert!(
        !t.contains("script-text") && !t.contains("color: red"),
        "{t}"
    );
    assert_eq!(field(&r, "status"), 200);
    assert_eq!(field(&r, "url"), url.as_str());
    assert_eq!(field(&r, "final_url"), url.as_str());
    assert_eq!(field(&r, "content_type"), "text/html; charset=utf-8");
    assert_eq!(field(&r, "truncated"), false);
    assert!(field(&r, "total_chars").as_u64().unwrap() > 50);
}

#[tokio::test]
async fn text_types_are_returned_as_they_are_and_binary_is_refused() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route(
        "/a.txt",
        Route::ok("text/plain", "<b>not html</b>\n  spaced"),
    );
    http.route("/a.json", Route::ok("application/json", r#"{"k": [1, 2]}"#));
    http.route(
        "/latin1",
        Route::ok("text/plain; charset=iso-8859-1", b"caf\xe9".to_vec()),
    );
    http.route(
        "/img.png",
        Route::ok("image/png", b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()),
    );
    let s = start(&["--allow-private"]).await;

    let r = s.fetch(json!({"url": http.url("/a.txt")})).await;
    assert!(
        text(&r).ends_with("\n<b>not html</b>\n  spaced"),
        "{}",
        text(&r)
    );
    let r = s.fetch(json!({"url": http.url("/a.json")})).await;
    assert!(text(&r).ends_with(r#"{"k": [1, 2]}"#), "{}", text(&r));
    let r = s.fetch(json!({"url": http.url("/latin1")})).await;
    assert!(text(&r).ends_with("café"), "{}", text(&r));

    let r = s.fetch(json!({"url": http.url("/img.png")})).await;
    let t = text(&r);
    assert!(is_error(&r), "{t}");
    assert!(t.contains("binary content (image/png)"), "{t}");
    assert!(t.contains(&http.url("/img.png")), "{t}");
}

#[tokio::test]
async fn max_chars_cuts_the_text_and_says_so() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route("/long", Route::ok("text/plain", "x".repeat(5000)));
    let s = start(&["--allow-private"]).await;
    let r = s
        .fetch(json!({"url": http.url("/long"), "max_chars": 100}))
        .await;
    let t = text(&r);
    assert!(t.contains(&format!("\n{}\n", "x".repeat(100))), "{t}");
    assert!(!t.contains(&"x".repeat(101)), "{t}");
    assert!(
        t.contains("truncated: showing the first 100 of 5000 characters"),
        "{t}"
    );
    assert_eq!(field(&r, "truncated"), true);
    assert_eq!(field(&r, "total_chars"), 5000);
    // The default is 20 000 characters.
    http.route("/longer", Route::ok("text/plain", "y".repeat(25_000)));
    let r = s.fetch(json!({"url": http.url("/longer")})).await;
    assert!(
        text(&r).contains("showing the first 20000 of 25000"),
        "{}",
        &text(&r)[..120]
    );
}

#[tokio::test]
async fn the_download_stops_at_max_bytes() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route("/huge", Route::ok("text/plain", "z".repeat(3_000_000)));
    let s = start(&["--allow-private", "--max-bytes", "100000"]).await;
    let r = s
        .fetch(json!({"url": http.url("/huge"), "max_chars": 200000}))
        .await;
    let t = text(&r);
    assert!(!is_error(&r), "{}", &t[..200]);
    assert_eq!(field(&r, "bytes"), 100_000);
    assert_eq!(field(&r, "download_truncated"), true);
    assert_eq!(field(&r, "truncated"), true);
    assert!(
        t.contains("download stopped at 100000 bytes"),
        "{}",
        &t[t.len() - 200..]
    );
}

#[tokio::test]
async fn http_errors_name_the_url_status_and_body() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route(
        "/gone",
        Route::status(
            404,
            "text/html",
            "<h1>Nothing here</h1><p>try elsewhere</p>",
        ),
    );
    http.route(
        "/boom",
        Route::status(500, "text/plain", "database on fire"),
    );
    let s = start(&["--allow-private"]).await;
    let r = s.fetch(json!({"url": http.url("/gone")})).await;
    let t = text(&r);
    assert!(is_error(&r), "{t}");
    assert!(
        t.contains(&http.url("/gone")) && t.contains("HTTP 404"),
        "{t}"
    );
    assert!(
        t.contains("# Nothing here") && t.contains("try elsewhere"),
        "{t}"
    );
    assert_eq!(field(&r, "status"), 404);
    let r = s.fetch(json!({"url": http.url("/boom")})).await;
    assert!(
        is_error(&r) && text(&r).contains("HTTP 500:\ndatabase on fire"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn redirects_are_followed_and_bounded() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route("/old", Route::redirect(301, "/mid"));
    http.route("/mid", Route::redirect(307, &http.url("/new")));
    http.route("/new", Route::ok("text/plain", "arrived"));
    http.route("/loop", Route::redirect(302, "/loop"));
    let s = start(&["--allow-private", "--max-redirects", "3"]).await;
    let r = s.fetch(json!({"url": http.url("/old")})).await;
    let t = text(&r);
    assert!(t.ends_with("arrived"), "{t}");
    assert!(t.contains("Redirected 2×"), "{t}");
    assert_eq!(field(&r, "final_url"), http.url("/new").as_str());
    assert_eq!(field(&r, "url"), http.url("/old").as_str());

    let before = http.hits().len();
    let r = s.fetch(json!({"url": http.url("/loop")})).await;
    assert!(
        is_error(&r) && text(&r).contains("redirected more than 3 times"),
        "{}",
        text(&r)
    );
    assert_eq!(
        http.hits().len() - before,
        4,
        "first request + 3 followed hops"
    );
}

#[tokio::test]
async fn a_slow_server_hits_the_total_timeout() {
    let http = TestHttp::start("127.0.0.1").await;
    let mut slow = Route::ok("text/plain", "late");
    slow.delay = Duration::from_secs(10);
    http.route("/slow", slow);
    let s = start(&["--allow-private", "--timeout", "1"]).await;
    let t0 = Instant::now();
    let r = s.fetch(json!({"url": http.url("/slow")})).await;
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert!(
        is_error(&r) && text(&r).contains("timed out after 1 s"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn a_closed_port_and_a_bad_url_are_clear_errors() {
    let s = start(&["--allow-private"]).await;
    // Bind then drop: the port is very likely closed now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let r = s.fetch(json!({"url": url})).await;
    let t = text(&r);
    assert!(is_error(&r) && t.contains(&url), "{t}");
    assert_eq!(field(&r, "error"), "connect");
    let r = s.fetch(json!({"url": "not a url"})).await;
    assert!(
        is_error(&r) && text(&r).contains("is not a valid URL"),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn tool_is_listed_with_honest_annotations_and_server_info() {
    let s = start(&[]).await;
    let info = s.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "tern-web");
    let tools = s.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "fetch");
    let a = tools[0].annotations.as_ref().unwrap();
    assert_eq!(a.read_only_hint, Some(true));
    assert_eq!(a.open_world_hint, Some(true));
    let schema = serde_json::to_value(&*tools[0].input_schema).unwrap();
    assert_eq!(schema["required"], json!(["url"]), "{schema}");
}
