//! tern-fs `read_file` vs @modelcontextprotocol/server-filesystem `read_text_file`,
//! side by side, under the same rmcp client, on the same small file.
//!
//! Run: `cargo bench -p tern-fs --bench vs_reference`
//! Needs the reference server installed once (CI's install script does this):
//! `npm install --prefix .deps/npm @modelcontextprotocol/server-filesystem`
//! (or point `TERN_FS_REFERENCE` at its `dist/index.js`). `TERN_FS_BIN` swaps in
//! another tern-fs build (to compare two builds on one machine).
//!
//! Not a timed test: it prints a table, and fails only when it cannot measure.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

const STARTUP_RUNS: usize = 15;
const WARMUP_CALLS: usize = 300;
const SEQUENTIAL_CALLS: usize = 3000;
const IN_FLIGHT: usize = 8;
const CONCURRENT_CALLS: usize = 8000;
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const MARKER: &str = "tern-bench-marker";

type Client = RunningService<RoleClient, ()>;

/// How to launch one server and which tool reads a file on it.
struct Target {
    label: &'static str,
    program: PathBuf,
    args: Vec<String>,
    tool: &'static str,
}

#[derive(Debug, Default, Clone, Copy)]
struct Numbers {
    startup_ms: f64,
    sequential_per_s: f64,
    p50_us: f64,
    in_flight_per_s: f64,
    idle_rss_kib: u64,
    loaded_rss_kib: u64,
    /// CPU time (user+system) the server spent per call in the 8-in-flight phase.
    server_cpu_us: f64,
    /// CPU time this client process spent per call in the same phase.
    client_cpu_us: f64,
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\nerror: {e}");
            ExitCode::FAILURE
        }
    }
}

fn reference_script() -> Result<PathBuf, String> {
    let path = match std::env::var_os("TERN_FS_REFERENCE") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../.deps/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
        ),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "the reference server is not installed: `{}` does not exist.\n\
             hint: npm install --prefix .deps/npm @modelcontextprotocol/server-filesystem \
             (from the workspace root), or set TERN_FS_REFERENCE to its dist/index.js",
            path.display()
        ))
    }
}

async fn bench() -> Result<(), String> {
    let script = reference_script()?;
    let node = which("node").ok_or("`node` is not on PATH; the reference server needs Node.js")?;
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let root = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    let file = root.join("small.txt");
    let body: String = (1..=40)
        .map(|i| format!("{MARKER} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(&file, &body).map_err(|e| e.to_string())?;
    let root_s = root.to_string_lossy().into_owned();

    let tern = Target {
        label: "tern-fs read_file",
        program: std::env::var_os("TERN_FS_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_tern-fs")),
            PathBuf::from,
        ),
        args: vec!["--root".into(), root_s.clone()],
        tool: "read_file",
    };
    let reference = Target {
        label: "server-filesystem read_text_file",
        program: node,
        args: vec![script.to_string_lossy().into_owned(), root_s],
        tool: "read_text_file",
    };
    println!(
        "reading a {}-byte file; startup median of {STARTUP_RUNS}; {SEQUENTIAL_CALLS} sequential \
         calls; {CONCURRENT_CALLS} calls with {IN_FLIGHT} in flight\n",
        body.len()
    );
    let a = measure(&tern, &file).await?;
    let b = measure(&reference, &file).await?;
    print_table(&a, &b);
    Ok(())
}

async fn spawn(t: &Target) -> Result<(Client, u32), String> {
    let cmd = tokio::process::Command::new(&t.program).configure(|c| {
        c.args(&t.args);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: cannot spawn {}: {e}", t.label, t.program.display()))?;
    let pid = transport.id().ok_or("child has no pid")?;
    let client = tokio::time::timeout(CALL_TIMEOUT, ().serve(transport))
        .await
        .map_err(|_| format!("{}: initialize timed out", t.label))?
        .map_err(|e| format!("{}: initialize failed: {e}", t.label))?;
    Ok((client, pid))
}

async fn call(client: &Client, tool: &'static str, path: &str) -> Result<CallToolResult, String> {
    let params = CallToolRequestParams::new(tool).with_arguments(
        json!({ "path": path })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let r = tokio::time::timeout(CALL_TIMEOUT, client.peer().call_tool(params))
        .await
        .map_err(|_| format!("{tool} timed out"))?
        .map_err(|e| format!("{tool} failed: {e}"))?;
    if r.is_error == Some(true) {
        return Err(format!("{tool} returned an error: {:?}", r.content));
    }
    Ok(r)
}

async fn measure(t: &Target, file: &Path) -> Result<Numbers, String> {
    let mut n = Numbers::default();
    let path = file.to_string_lossy().into_owned();

    let mut startups = Vec::with_capacity(STARTUP_RUNS);
    for _ in 0..STARTUP_RUNS {
        let started = Instant::now();
        let (client, _) = spawn(t).await?;
        startups.push(started.elapsed().as_secs_f64() * 1e3);
        let _ = client.cancel().await;
    }
    n.startup_ms = median(&mut startups);

    let (client, pid) = spawn(t).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    n.idle_rss_kib = rss_kib(pid)?;
    let first = call(&client, t.tool, &path).await?;
    let text: String = first
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if !text.contains(MARKER) {
        return Err(format!(
            "{}: the result does not contain the file: {text}",
            t.label
        ));
    }
    for _ in 0..WARMUP_CALLS {
        call(&client, t.tool, &path).await?;
    }

    let mut lat = Vec::with_capacity(SEQUENTIAL_CALLS);
    let started = Instant::now();
    for _ in 0..SEQUENTIAL_CALLS {
        let one = Instant::now();
        call(&client, t.tool, &path).await?;
        lat.push(one.elapsed().as_secs_f64() * 1e6);
    }
    n.sequential_per_s = SEQUENTIAL_CALLS as f64 / started.elapsed().as_secs_f64();
    n.p50_us = median(&mut lat);

    let server_cpu = cpu_ticks(&pid.to_string())?;
    let client_cpu = cpu_ticks("self")?;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(IN_FLIGHT);
    for _ in 0..IN_FLIGHT {
        let peer = client.peer().clone();
        let path = path.clone();
        let tool = t.tool;
        tasks.push(tokio::spawn(async move {
            for _ in 0..CONCURRENT_CALLS / IN_FLIGHT {
                let params = CallToolRequestParams::new(tool).with_arguments(
                    json!({ "path": path })
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                );
                match tokio::time::timeout(CALL_TIMEOUT, peer.call_tool(params)).await {
                    Ok(Ok(r)) if r.is_error != Some(true) => {}
                    other => return Err(format!("{tool} failed under load: {other:?}")),
                }
            }
            Ok(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    n.in_flight_per_s = CONCURRENT_CALLS as f64 / started.elapsed().as_secs_f64();
    let per_call = |ticks: u64| ticks as f64 * 1e6 / ticks_per_s() / CONCURRENT_CALLS as f64;
    n.server_cpu_us = per_call(cpu_ticks(&pid.to_string())? - server_cpu);
    n.client_cpu_us = per_call(cpu_ticks("self")? - client_cpu);
    n.loaded_rss_kib = rss_kib(pid)?;
    let _ = client.cancel().await;
    Ok(n)
}

fn print_table(a: &Numbers, b: &Numbers) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "| metric                         |     tern-fs | server-filesystem |   ratio | target      |"
    );
    println!(
        "|--------------------------------|------------:|------------------:|--------:|-------------|"
    );
    let row = |name: &str, x: String, y: String, ratio: f64, target: &str, ok: bool| {
        let mark = if ok { "met" } else { "MISSED" };
        println!("| {name:<30} | {x:>11} | {y:>17} | {ratio:>6.1}x | {target:<5} {mark:<6}|");
    };
    row(
        "startup to initialized (ms)",
        format!("{:.1}", a.startup_ms),
        format!("{:.1}", b.startup_ms),
        b.startup_ms / a.startup_ms,
        "<10ms",
        a.startup_ms < 10.0,
    );
    row(
        "sequential calls/s",
        format!("{:.0}", a.sequential_per_s),
        format!("{:.0}", b.sequential_per_s),
        a.sequential_per_s / b.sequential_per_s,
        ">=3x",
        a.sequential_per_s >= 3.0 * b.sequential_per_s,
    );
    row(
        "sequential p50 latency (us)",
        format!("{:.0}", a.p50_us),
        format!("{:.0}", b.p50_us),
        b.p50_us / a.p50_us,
        "-",
        true,
    );
    row(
        "8 in flight calls/s",
        format!("{:.0}", a.in_flight_per_s),
        format!("{:.0}", b.in_flight_per_s),
        a.in_flight_per_s / b.in_flight_per_s,
        ">=10x",
        a.in_flight_per_s >= 10.0 * b.in_flight_per_s,
    );
    row(
        "  server CPU per call (us)",
        format!("{:.0}", a.server_cpu_us),
        format!("{:.0}", b.server_cpu_us),
        b.server_cpu_us / a.server_cpu_us,
        "-",
        true,
    );
    row(
        "  client CPU per call (us)",
        format!("{:.0}", a.client_cpu_us),
        format!("{:.0}", b.client_cpu_us),
        b.client_cpu_us / a.client_cpu_us,
        "-",
        true,
    );
    row(
        "idle RSS (MiB)",
        format!("{:.1}", mib(a.idle_rss_kib)),
        format!("{:.1}", mib(b.idle_rss_kib)),
        b.idle_rss_kib as f64 / a.idle_rss_kib as f64,
        "<=1/8",
        a.idle_rss_kib * 8 <= b.idle_rss_kib,
    );
    row(
        "RSS after load (MiB)",
        format!("{:.1}", mib(a.loaded_rss_kib)),
        format!("{:.1}", mib(b.loaded_rss_kib)),
        b.loaded_rss_kib as f64 / a.loaded_rss_kib as f64,
        "<=1/8",
        a.loaded_rss_kib * 8 <= b.loaded_rss_kib,
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `VmRSS` of a process, from `/proc/PID/status`.
fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

/// utime + stime of a process (`self` or a pid), in clock ticks, from `/proc/…/stat`.
fn cpu_ticks(pid: &str) -> Result<u64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let get = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (get(11), get(12)) {
        (Some(u), Some(s)) => Ok(u + s),
        _ => Err(format!("unexpected /proc/{pid}/stat: {stat}")),
    }
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`); 100 on every Linux we run on.
fn ticks_per_s() -> f64 {
    100.0
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_string_lossy()
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}
