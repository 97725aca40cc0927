//! Gateway overhead per call on a no-op tool, next to a raw pool call to the same server.
//!
//! `cargo bench -p tern-gateway --bench overhead` (needs `tern-test-server` built:
//! `cargo build --workspace --bins`, or `--release` for a release-profile run). Not a timed test:
//! it prints a table. Target: gateway p50 ≤ 1.2 × raw p50.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;
use tern_gateway::{
    CallContext, Gateway, GatewaySettings, HeadlessApprover, PathScope, Recorders, ToolCall,
    ignore_events,
};
use tern_mcp::{CallOptions, PoolOptions, ServerPool, ServerSpec, TransportSpec, pins::PinStore};

const WARMUP: usize = 300;
const ROUNDS: usize = 3000;

fn test_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let candidates = [
        profile_dir.join("tern-test-server"),
        profile_dir.parent().unwrap().join("debug/tern-test-server"),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| panic!("tern-test-server not built: run cargo build --workspace --bins"))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let server = test_server();
    let mut spec = ServerSpec::new(
        "test",
        TransportSpec::Stdio {
            program: server.display().to_string(),
            args: vec![],
            env: BTreeMap::new(),
            pass_env: vec![],
            cwd: None,
        },
    );
    spec.required = true;
    spec.startup_timeout = Duration::from_secs(30);
    spec.request_timeout = Duration::from_secs(30);
    let opts = PoolOptions {
        roots: vec![dir.path().to_path_buf()],
        ..PoolOptions::default()
    };
    let pool = ServerPool::start(vec![spec], opts, PinStore::in_memory(), Arc::new(|_| {}));
    pool.wait_settled().await;

    let mut settings = GatewaySettings::new(PathScope {
        cwd: dir.path().to_path_buf(),
        roots: vec![dir.path().to_path_buf()],
        home: None,
        tern_home: dir.path().join("tern-home"),
    });
    settings.mode = tern_config::PermissionMode::Yolo;
    let gateway = Gateway::new(
        pool.clone(),
        settings,
        Arc::new(HeadlessApprover),
        Recorders::open(
            &dir.path().join("tern-home/audit.jsonl"),
            [],
            ignore_events(),
        )
        .unwrap(),
    )
    .unwrap();

    let raw_call = || async {
        let t = Instant::now();
        pool.call(
            "test",
            "noop",
            serde_json::Map::new(),
            CallOptions::new(Duration::from_secs(30)),
        )
        .await
        .unwrap();
        t.elapsed()
    };
    let gw_call = |i: usize| {
        let gateway = &gateway;
        async move {
            let t = Instant::now();
            let r = gateway
                .call(
                    ToolCall {
                        id: format!("c{i}"),
                        name: "test__noop".into(),
                        arguments: json!({}),
                    },
                    CallContext {
                        run_id: "bench".into(),
                        session_id: "bench".into(),
                        ..Default::default()
                    },
                )
                .await;
            assert!(!r.result.is_error, "{}", r.result.content);
            t.elapsed()
        }
    };

    for i in 0..WARMUP {
        raw_call().await;
        gw_call(i).await;
    }
    // Interleaved, so both see the same machine load.
    let mut raw = Vec::with_capacity(ROUNDS);
    let mut gw = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        raw.push(raw_call().await);
        gw.push(gw_call(i).await);
    }
    raw.sort();
    gw.sort();
    let (r50, r99) = (percentile(&raw, 0.5), percentile(&raw, 0.99));
    let (g50, g99) = (percentile(&gw, 0.5), percentile(&gw, 0.99));
    println!(
        "gateway overhead on tern-test-server `noop` ({ROUNDS} calls each, interleaved, after {WARMUP} warm-up)"
    );
    println!("{:<22} {:>10} {:>10}", "path", "p50 µs", "p99 µs");
    println!(
        "{:<22} {:>10.1} {:>10.1}",
        "raw pool.call",
        micros(r50),
        micros(r99)
    );
    println!(
        "{:<22} {:>10.1} {:>10.1}",
        "gateway.call",
        micros(g50),
        micros(g99)
    );
    println!(
        "{:<22} {:>10.2} {:>10.2}",
        "ratio (gateway/raw)",
        micros(g50) / micros(r50),
        micros(g99) / micros(r99)
    );
    println!(
        "{:<22} {:>10.1} {:>10.1}",
        "overhead µs",
        micros(g50) - micros(r50),
        micros(g99) - micros(r99)
    );

    // Where the overhead goes: the audit line alone (one append-only write + flush per call).
    let log = tern_gateway::audit::AuditLog::open(&dir.path().join("audit-only.jsonl")).unwrap();
    let redactor = tern_gateway::Redactor::default();
    let record = tern_gateway::AuditRecord {
        time: tern_gateway::audit::rfc3339_now(),
        run_id: "bench".into(),
        session_id: "bench".into(),
        call_id: "c1".into(),
        tool: "test__noop".into(),
        server: "test".into(),
        args_sha256: tern_gateway::audit::sha256_hex(b"{}"),
        decision: Some(tern_gateway::Decision::Allow),
        rule: Some("annotation:readOnlyHint".into()),
        duration_ms: 0,
        result_sha256: tern_gateway::audit::sha256_hex(b""),
        result_bytes: 0,
        is_error: false,
        error_type: None,
        truncated: false,
    };
    let mut audit: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            log.append(&record, &redactor).unwrap();
            t.elapsed()
        })
        .collect();
    audit.sort();
    println!(
        "{:<22} {:>10.1} {:>10.1}",
        "  of which audit line",
        micros(percentile(&audit, 0.5)),
        micros(percentile(&audit, 0.99))
    );
    pool.shutdown().await;
}
