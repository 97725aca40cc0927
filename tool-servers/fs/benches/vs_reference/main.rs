//! tern-fs against the reference Node server (`@modelcontextprotocol/server-filesystem`)
//! and against `rg`, printed as tables.
//!
//! Run: `cargo bench -p tern-fs` (or `--bench vs_reference`).
//! Needs the reference server installed once (CI's install script does this):
//! `npm install --prefix .deps/npm @modelcontextprotocol/server-filesystem`
//! (or point `TERN_FS_REFERENCE` at its `dist/index.js`), and `rg` on PATH for
//! the grep table (`apt-get install -y ripgrep`). `TERN_FS_BIN` swaps in another
//! tern-fs build (to compare two builds on one machine).
//!
//! Every server is driven by a minimal newline-JSON client ([`raw`]), so the
//! client's cost stays out of the numbers. Server CPU is the on-CPU nanoseconds of its
//! threads from `/proc/PID/task/*/schedstat` (exact, and blind to time spent waiting for a
//! CPU on a busy machine); peak memory is `VmHWM` from `/proc/PID/status`.
//!
//! Not a timed test: it prints tables, marks goals met or MISSED, and fails only
//! when it cannot measure (a missing reference server or `rg` is an error, not a
//! silent skip).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod grep;
mod procfs;
mod raw;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use raw::{Server, Target, call_line, check};
use serde_json::json;

const STARTUP_RUNS: usize = 15;
const WARMUP_CALLS: usize = 300;
const SEQUENTIAL_CALLS: u64 = 3000;
const IN_FLIGHT: u64 = 8;
const CONCURRENT_CALLS: u64 = 8000;
const BURST: u64 = 3000;
const PACED_CALLS: u64 = 3000;
/// Gap between paced calls: long enough for the server to go idle (park) in
/// between, as it does between an agent's tool calls.
const PACE: Duration = Duration::from_millis(1);
const MARKER: &str = "tern-bench-marker";

fn main() -> ExitCode {
    match bench() {
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

/// The tern-fs binary under test.
pub fn tern_bin() -> PathBuf {
    std::env::var_os("TERN_FS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tern-fs")),
        PathBuf::from,
    )
}

fn bench() -> Result<(), String> {
    let script = reference_script()?;
    let node = which("node").ok_or("`node` is not on PATH; the reference server needs Node.js")?;
    // Checked before the long part, so a missing tool fails at once.
    let rg = which("rg").ok_or(
        "`rg` (ripgrep) is not on PATH; the grep comparison needs it.\n\
         hint: apt-get install -y ripgrep",
    )?;
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let root = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    let file = root.join("small.txt");
    let body: String = (1..=40)
        .map(|i| format!("{MARKER} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(&file, &body).map_err(|e| e.to_string())?;
    let root_s = root.to_string_lossy().into_owned();

    let tern = Target {
        label: "tern-fs",
        program: tern_bin(),
        args: vec!["--root".into(), root_s.clone()],
        read_tool: "read_file",
    };
    let reference = Target {
        label: "server-filesystem",
        program: node,
        args: vec![script.to_string_lossy().into_owned(), root_s],
        read_tool: "read_text_file",
    };
    println!(
        "read_file (reference: read_text_file) of a {}-byte file: {SEQUENTIAL_CALLS} sequential \
         calls after {WARMUP_CALLS} warm-up, {PACED_CALLS} calls 1 ms apart, {CONCURRENT_CALLS} calls \
         with {IN_FLIGHT} in flight, a burst of {BURST} requests written at once, startup median of {STARTUP_RUNS}\n",
        body.len()
    );
    let a = measure(&tern, &file)?;
    let b = measure(&reference, &file)?;
    print_table(&a, &b);
    println!();
    grep::compare(&rg)?;
    Ok(())
}

#[derive(Debug, Default, Clone, Copy)]
struct Numbers {
    startup_ms: f64,
    /// Server CPU (user+system) per call over the sequential calls.
    seq_cpu_us: f64,
    sequential_per_s: f64,
    p50_us: f64,
    /// Server CPU per call when calls come 1 ms apart (wake-up costs included).
    paced_cpu_us: f64,
    in_flight_per_s: f64,
    in_flight_cpu_us: f64,
    idle_rss_kib: u64,
    burst_hwm_kib: u64,
    burst_ms: f64,
}

fn measure(t: &Target, file: &Path) -> Result<Numbers, String> {
    let mut n = Numbers::default();
    let args = json!({ "path": file });

    let mut startups = Vec::with_capacity(STARTUP_RUNS);
    for _ in 0..STARTUP_RUNS {
        let started = Instant::now();
        let server = Server::start(t)?;
        startups.push(started.elapsed().as_secs_f64() * 1e3);
        drop(server);
    }
    n.startup_ms = median(&mut startups);

    let mut s = Server::start(t)?;
    std::thread::sleep(Duration::from_millis(300));
    n.idle_rss_kib = procfs::status_kib(s.pid(), "VmRSS")?;
    s.send(&call_line(1, t.read_tool, &args))?;
    let first = check(s.recv()?)?;
    if !first.to_string().contains(MARKER) {
        return Err(format!(
            "{}: the result does not contain the file: {first}",
            t.label
        ));
    }
    for id in 0..WARMUP_CALLS as u64 {
        s.send(&call_line(id + 2, t.read_tool, &args))?;
        check(s.recv()?)?;
    }

    // Sequential: one request, its reply, the next.
    let lines: Vec<String> = (0..SEQUENTIAL_CALLS)
        .map(|i| call_line(10_000 + i, t.read_tool, &args))
        .collect();
    let mut lat = Vec::with_capacity(lines.len());
    let cpu = procfs::cpu_ns(s.pid())?;
    let started = Instant::now();
    for line in &lines {
        let one = Instant::now();
        s.send(line)?;
        check(s.recv()?)?;
        lat.push(one.elapsed().as_secs_f64() * 1e6);
    }
    let elapsed = started.elapsed().as_secs_f64();
    n.seq_cpu_us =
        procfs::cpu_ns(s.pid())?.saturating_sub(cpu) as f64 / 1e3 / SEQUENTIAL_CALLS as f64;
    n.sequential_per_s = SEQUENTIAL_CALLS as f64 / elapsed;
    n.p50_us = median(&mut lat);

    // Paced: the server parks between calls, as between an agent's tool calls.
    let lines: Vec<String> = (0..PACED_CALLS)
        .map(|i| call_line(50_000 + i, t.read_tool, &args))
        .collect();
    let cpu = procfs::cpu_ns(s.pid())?;
    for line in &lines {
        s.send(line)?;
        check(s.recv()?)?;
        std::thread::sleep(PACE);
    }
    n.paced_cpu_us = procfs::cpu_ns(s.pid())?.saturating_sub(cpu) as f64 / 1e3 / PACED_CALLS as f64;

    // Eight in flight: a new request each time a reply arrives.
    let lines: Vec<String> = (0..CONCURRENT_CALLS)
        .map(|i| call_line(100_000 + i, t.read_tool, &args))
        .collect();
    let cpu = procfs::cpu_ns(s.pid())?;
    let started = Instant::now();
    let mut sent = 0;
    for line in lines.iter().take(IN_FLIGHT as usize) {
        s.send(line)?;
        sent += 1;
    }
    for _ in 0..CONCURRENT_CALLS {
        check(s.recv()?)?;
        if let Some(line) = lines.get(sent) {
            s.send(line)?;
            sent += 1;
        }
    }
    n.in_flight_per_s = CONCURRENT_CALLS as f64 / started.elapsed().as_secs_f64();
    n.in_flight_cpu_us =
        procfs::cpu_ns(s.pid())?.saturating_sub(cpu) as f64 / 1e3 / CONCURRENT_CALLS as f64;
    drop(s);

    // A burst on a fresh process, so VmHWM is this burst's peak.
    let s = Server::start(t)?;
    let burst: String = (0..BURST)
        .map(|i| call_line(1_000_000 + i, t.read_tool, &args) + "\n")
        .collect();
    let (mut stdin, mut reader) = s.split();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(burst.as_bytes()).map(|()| stdin)
    });
    for _ in 0..BURST {
        check(reader.recv()?)?;
    }
    n.burst_ms = started.elapsed().as_secs_f64() * 1e3;
    n.burst_hwm_kib = procfs::status_kib(reader.pid(), "VmHWM")?;
    let _stdin = writer
        .join()
        .map_err(|_| "burst writer panicked".to_string())?
        .map_err(|e| format!("burst write: {e}"))?;
    Ok(n)
}

fn print_table(a: &Numbers, b: &Numbers) {
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "| metric                                      |   tern-fs | server-filesystem |   ratio | goal                |"
    );
    println!(
        "|---------------------------------------------|----------:|------------------:|--------:|---------------------|"
    );
    let row = |name: &str, x: String, y: String, ratio: f64, goal: &str, ok: Option<bool>| {
        let mark = match ok {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        println!("| {name:<43} | {x:>9} | {y:>17} | {ratio:>6.1}x | {goal:<12} {mark:<6} |");
    };
    row(
        "server CPU per call, sequential (us)",
        format!("{:.1}", a.seq_cpu_us),
        format!("{:.1}", b.seq_cpu_us),
        b.seq_cpu_us / a.seq_cpu_us,
        "<=1/10, <=40",
        Some(a.seq_cpu_us * 10.0 <= b.seq_cpu_us && a.seq_cpu_us <= 40.0),
    );
    row(
        "server CPU per call, 1 ms apart (us)",
        format!("{:.1}", a.paced_cpu_us),
        format!("{:.1}", b.paced_cpu_us),
        b.paced_cpu_us / a.paced_cpu_us,
        "<=1/10 ref",
        Some(a.paced_cpu_us * 10.0 <= b.paced_cpu_us),
    );
    row(
        "server CPU per call, 8 in flight (us)",
        format!("{:.1}", a.in_flight_cpu_us),
        format!("{:.1}", b.in_flight_cpu_us),
        b.in_flight_cpu_us / a.in_flight_cpu_us,
        "-",
        None,
    );
    row(
        "sequential calls/s",
        format!("{:.0}", a.sequential_per_s),
        format!("{:.0}", b.sequential_per_s),
        a.sequential_per_s / b.sequential_per_s,
        ">=3x ref",
        Some(a.sequential_per_s >= 3.0 * b.sequential_per_s),
    );
    row(
        "sequential p50 latency (us)",
        format!("{:.0}", a.p50_us),
        format!("{:.0}", b.p50_us),
        b.p50_us / a.p50_us,
        "-",
        None,
    );
    row(
        "8 in flight calls/s",
        format!("{:.0}", a.in_flight_per_s),
        format!("{:.0}", b.in_flight_per_s),
        a.in_flight_per_s / b.in_flight_per_s,
        ">=10x ref",
        Some(a.in_flight_per_s >= 10.0 * b.in_flight_per_s),
    );
    row(
        "idle RSS (MiB)",
        format!("{:.1}", mib(a.idle_rss_kib)),
        format!("{:.1}", mib(b.idle_rss_kib)),
        b.idle_rss_kib as f64 / a.idle_rss_kib as f64,
        "<=1/8 ref",
        Some(a.idle_rss_kib * 8 <= b.idle_rss_kib),
    );
    row(
        &format!("peak RSS (VmHWM), {BURST}-request burst (MiB)"),
        format!("{:.1}", mib(a.burst_hwm_kib)),
        format!("{:.1}", mib(b.burst_hwm_kib)),
        b.burst_hwm_kib as f64 / a.burst_hwm_kib as f64,
        "<=12 MiB",
        Some(a.burst_hwm_kib <= 12 * 1024),
    );
    row(
        &format!("{BURST}-request burst, all answered (ms)"),
        format!("{:.0}", a.burst_ms),
        format!("{:.0}", b.burst_ms),
        b.burst_ms / a.burst_ms,
        "-",
        None,
    );
    row(
        "startup to initialized (ms)",
        format!("{:.1}", a.startup_ms),
        format!("{:.1}", b.startup_ms),
        b.startup_ms / a.startup_ms,
        "<10ms",
        Some(a.startup_ms < 10.0),
    );
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_string_lossy()
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}
