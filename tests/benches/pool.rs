//! Pool benchmark (issue #3). Not a timed test: prints a table.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p tern-e2e --bench pool`
//!
//! 1. `tern tools --json` wall time with the 3 built-in servers (target ≤ 30 ms);
//! 2. pool start of 10 servers, in parallel vs one after another;
//! 3. host RSS with the built-in servers running, and each server's RSS.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    collections::BTreeMap,
    path::Path,
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use tern_e2e::{median, release_bin};

use tern_mcp::{
    EventSink, PoolOptions, ServerPool, ServerSpec, ServerState, TransportSpec, pins::PinStore,
};

/// Current resident set of `pid`, in KiB (0 when it is gone).
fn rss_kib(pid: u32) -> u64 {
    tern_e2e::proc_status_kib(pid, "VmRSS").unwrap_or(0)
}

fn spec(name: &str, program: &Path, args: &[&str]) -> ServerSpec {
    let mut spec = ServerSpec::new(
        name,
        TransportSpec::Stdio {
            program: program.to_string_lossy().into_owned(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            pass_env: vec![],
            cwd: None,
        },
    );
    spec.startup_timeout = Duration::from_secs(30);
    spec.request_timeout = Duration::from_secs(30);
    spec
}

fn opts() -> PoolOptions {
    PoolOptions {
        host_env: std::env::vars().collect(),
        ..PoolOptions::default()
    }
}

fn start(specs: Vec<ServerSpec>, rt: &tokio::runtime::Runtime) -> (Arc<ServerPool>, Duration) {
    let sink: EventSink = Arc::new(|_| {});
    let t = Instant::now();
    let pool = rt.block_on(async {
        let pool = ServerPool::start(specs, opts(), PinStore::in_memory(), sink);
        pool.wait_settled().await;
        pool
    });
    (pool, t.elapsed())
}

fn main() {
    let tern = release_bin("tern");
    let test_server = release_bin("tern-test-server");
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // 1. `tern tools --json`, whole process, built-in servers.
    let mut walls = Vec::new();
    for i in 0..21 {
        let t = Instant::now();
        let out = Command::new(&tern)
            .args(["tools", "--json"])
            .env("TERN_HOME", home.path())
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if i > 0 {
            walls.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let tools_ms = median(walls.clone());
    let tools_min = walls.iter().cloned().fold(f64::MAX, f64::min);

    // 2. Ten servers: parallel (one pool) vs sequential (one at a time).
    let ten: Vec<ServerSpec> = (0..10)
        .map(|i| spec(&format!("s{i}"), &test_server, &[]))
        .collect();
    let mut par = Vec::new();
    let mut seq = Vec::new();
    for _ in 0..5 {
        let (pool, d) = start(ten.clone(), &rt);
        assert!(
            pool.statuses()
                .iter()
                .all(|s| matches!(s.state, ServerState::Ready { .. }))
        );
        rt.block_on(pool.shutdown());
        par.push(d.as_secs_f64() * 1000.0);
        let mut total = Duration::ZERO;
        for s in &ten {
            let (pool, d) = start(vec![s.clone()], &rt);
            total += d;
            rt.block_on(pool.shutdown());
        }
        seq.push(total.as_secs_f64() * 1000.0);
    }

    // 3. RSS: this process as the host, with the built-in servers running.
    let before = rss_kib(std::process::id());
    let root = work.path().to_string_lossy().into_owned();
    let builtins = vec![
        spec("fs", &tern, &["serve", "fs", "--root", &root]),
        spec("shell", &tern, &["serve", "shell", "--root", &root]),
        spec("web", &tern, &["serve", "web"]),
    ];
    let (pool, _) = start(builtins, &rt);
    let after = rss_kib(std::process::id());
    let servers: Vec<(String, u64)> = pool
        .statuses()
        .iter()
        .map(|s| match &s.state {
            ServerState::Ready { pid: Some(pid), .. } => (s.name.clone(), rss_kib(*pid)),
            _ => (s.name.clone(), 0),
        })
        .collect();
    rt.block_on(pool.shutdown());

    println!("\n| measurement | value |");
    println!("|---|---|");
    println!(
        "| `tern tools --json`, 3 built-in servers (median of 20 / min) | {tools_ms:.1} ms / {tools_min:.1} ms |"
    );
    println!(
        "| pool start, 10 servers in parallel (median of 5) | {:.1} ms |",
        median(par)
    );
    println!(
        "| pool start, 10 servers one after another (median of 5) | {:.1} ms |",
        median(seq)
    );
    println!(
        "| host RSS before / with the 3 built-in servers | {:.1} MiB / {:.1} MiB |",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    for (name, kib) in servers {
        println!(
            "| RSS of `tern serve {name}` | {:.1} MiB |",
            kib as f64 / 1024.0
        );
    }
}
