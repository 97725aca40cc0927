//! The SSRF guard end to end: internal addresses in every spelling, names that
//! resolve inside, and redirect hops that turn inward are all refused before a
//! single byte reaches them.

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::json;
use tern_web::resolve::StaticResolver;
use tern_web::{AddressPolicy, FetchError, Fetcher, Limits};

use super::http::{Route, TestHttp};
use super::support::{field, is_error, start, text};

#[tokio::test]
async fn internal_addresses_in_every_spelling_are_refused_without_a_request() {
    let http = TestHttp::start("127.0.0.1").await;
    http.route("/", Route::ok("text/plain", "internal secret"));
    let port = http.addr.port();
    let s = start(&[]).await;
    let urls = [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f000001:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://0:{port}/"),
        "http://10.0.0.1/".to_string(),
        "http://192.168.0.1/".to_string(),
    ];
    for url in &urls {
        let r = s.fetch(json!({"url": url})).await;
        let t = text(&r);
        assert!(is_error(&r), "{url} was fetched: {t}");
        assert!(t.starts_with("refused to fetch"), "{url}: {t}");
        assert!(t.contains("--allow-private"), "{url}: {t}");
        assert_eq!(field(&r, "error"), "blocked_address", "{url}: {t}");
        assert!(!t.contains("internal secret"), "{t}");
    }
    assert!(
        http.hits().is_empty(),
        "requests reached the server: {:?}",
        http.hits()
    );

    // Positive control: the same server is reachable when the guard is off,
    // so the refusals above were the guard's doing.
    let open = start(&["--allow-private"]).await;
    let r = open
        .fetch(json!({"url": format!("http://localhost:{port}/")}))
        .await;
    assert!(text(&r).ends_with("internal secret"), "{}", text(&r));
}

#[tokio::test]
async fn non_http_schemes_are_refused() {
    let s = start(&["--allow-private"]).await;
    for url in [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "gopher://x/",
        "data:text/plain,hi",
    ] {
        let r = s.fetch(json!({"url": url})).await;
        let t = text(&r);
        assert!(is_error(&r), "{url}: {t}");
        assert!(t.contains("only http and https"), "{url}: {t}");
        assert!(!t.contains("root:"), "{t}");
    }
}

#[tokio::test]
async fn a_redirect_from_an_allowed_host_to_loopback_is_refused() {
    // 127.0.0.2 stands in for a public host: `--allow-addr` trusts exactly it,
    // while 127.0.0.1 (and every other internal address) stays refused.
    let public = TestHttp::start("127.0.0.2").await;
    let internal = TestHttp::start("127.0.0.1").await;
    internal.route("/secret", Route::ok("text/plain", "internal secret"));
    let port = internal.addr.port();
    public.route("/page", Route::ok("text/plain", "public page"));
    public.route("/to-ip", Route::redirect(302, &internal.url("/secret")));
    public.route(
        "/to-name",
        Route::redirect(301, &format!("http://localhost:{port}/secret")),
    );
    public.route(
        "/to-mapped",
        Route::redirect(307, &format!("http://[::ffff:7f00:1]:{port}/secret")),
    );
    public.route(
        "/to-decimal",
        Route::redirect(308, &format!("http://2130706433:{port}/secret")),
    );
    let s = start(&["--allow-addr", "127.0.0.2"]).await;

    let r = s.fetch(json!({"url": public.url("/page")})).await;
    assert!(text(&r).ends_with("public page"), "control: {}", text(&r));

    for hop in ["/to-ip", "/to-name", "/to-mapped", "/to-decimal"] {
        let r = s.fetch(json!({"url": public.url(hop)})).await;
        let t = text(&r);
        assert!(is_error(&r), "{hop}: {t}");
        assert!(t.starts_with("refused to fetch http://"), "{hop}: {t}");
        assert!(t.contains("/secret"), "the refused hop is named: {t}");
        assert!(t.contains("127.0.0.1") || t.contains("::1"), "{hop}: {t}");
    }
    assert!(
        internal.hits().is_empty(),
        "a hop reached loopback: {:?}",
        internal.hits()
    );
    assert_eq!(public.hits().len(), 5);
}

/// The library's redirect loop with an injected resolver: names are vetted at
/// connect time, and the connection goes to the vetted address.
#[tokio::test]
async fn injected_resolver_names_are_vetted_on_every_hop() {
    let public = TestHttp::start("127.0.0.2").await;
    let internal = TestHttp::start("127.0.0.1").await;
    internal.route("/secret", Route::ok("text/plain", "internal secret"));
    let (pp, ip) = (public.addr.port(), internal.addr.port());
    public.route("/page", Route::ok("text/plain", "public page"));
    public.route(
        "/hop",
        Route::redirect(302, &format!("http://evil.test:{ip}/secret")),
    );
    public.route(
        "/mixed",
        Route::redirect(302, &format!("http://mixed.test:{ip}/secret")),
    );
    public.route("/unknown", Route::redirect(302, "http://nowhere.test/"));

    let trusted: IpAddr = "127.0.0.2".parse().unwrap();
    let resolver = StaticResolver {
        table: vec![
            ("docs.test".into(), vec![trusted]),
            ("evil.test".into(), vec!["127.0.0.1".parse().unwrap()]),
            (
                "mixed.test".into(),
                vec![trusted, "127.0.0.1".parse().unwrap()],
            ),
        ],
    };
    let policy = AddressPolicy {
        allow_private: false,
        trusted: vec![trusted],
    };
    let fetcher = Fetcher::new(policy, Arc::new(resolver), Limits::default()).unwrap();

    let page = fetcher
        .fetch(&format!("http://docs.test:{pp}/page"))
        .await
        .unwrap();
    assert_eq!(page.body, b"public page");

    for hop in ["/hop", "/mixed"] {
        let error = fetcher
            .fetch(&format!("http://docs.test:{pp}{hop}"))
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("reached by redirect from http://docs.test"),
            "{message}"
        );
        match error.root() {
            FetchError::Blocked { url, reason } => {
                assert_eq!(url.path(), "/secret", "{hop}");
                assert!(reason.contains("127.0.0.1"), "{reason}");
                assert!(reason.contains("loopback"), "{reason}");
            }
            other => panic!("{hop}: {other:?}"),
        }
    }
    let error = fetcher
        .fetch(&format!("http://docs.test:{pp}/unknown"))
        .await
        .unwrap_err();
    match error.root() {
        e @ FetchError::Dns { .. } => assert!(e.to_string().contains("nowhere.test"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(internal.hits().is_empty(), "{:?}", internal.hits());
}

/// Answers with a trusted address the first time and loopback afterwards, as a
/// rebinding DNS server would.
struct Rebinding {
    calls: std::sync::atomic::AtomicUsize,
    first: IpAddr,
    then: IpAddr,
}

impl tern_web::resolve::HostResolver for Rebinding {
    fn lookup(&self, _host: &str) -> tern_web::resolve::Lookup {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let ip = if n == 0 { self.first } else { self.then };
        Box::pin(async move { Ok(vec![ip]) })
    }
}

/// The address that was vetted is the address connected to: a second lookup
/// (check once, connect after resolving again) would reach 127.0.0.1.
#[tokio::test]
async fn dns_rebinding_cannot_swap_the_address_after_the_check() {
    let public = TestHttp::start("127.0.0.2").await;
    // Same port on 127.0.0.1 if we can get it, so a second lookup would connect there.
    let port = public.addr.port();
    let Ok(internal_listener) = tokio::net::TcpListener::bind(("127.0.0.1", port)).await else {
        panic!("port {port} is taken on 127.0.0.1; cannot set up the rebinding target");
    };
    let internal_hit = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = internal_hit.clone();
    let accept = tokio::spawn(async move {
        if internal_listener.accept().await.is_ok() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    public.route("/page", Route::ok("text/plain", "public page"));
    let trusted: IpAddr = "127.0.0.2".parse().unwrap();
    let resolver = Rebinding {
        calls: Default::default(),
        first: trusted,
        then: "127.0.0.1".parse().unwrap(),
    };
    let policy = AddressPolicy {
        allow_private: false,
        trusted: vec![trusted],
    };
    let fetcher = Fetcher::new(policy, Arc::new(resolver), Limits::default()).unwrap();
    let page = fetcher
        .fetch(&format!("http://rebind.test:{port}/page"))
        .await
        .unwrap();
    assert_eq!(page.body, b"public page");
    accept.abort();
    assert!(
        !internal_hit.load(std::sync::atomic::Ordering::SeqCst),
        "connected to loopback"
    );
}
