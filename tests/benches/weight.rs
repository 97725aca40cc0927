//! Weight benchmark (issue 25): what the `tern` binary costs before it does any work — its size,
//! `tern --version` and `tern tools` (wall and CPU, median of 20), and the resident memory of
//! `tern serve fs` next to the standalone `tern-fs` once each has answered `tools/list`.
//! Not a timed test: prints a table.
//!
//! Run: `cargo build --release -p tern -p tern-fs && cargo bench -p tern-e2e --bench weight`.
//! With `TERN_BENCH_BASE=DIR` (a directory holding an older release build's `tern` and
//! `tern-fs`), each row is measured for both builds side by side.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Instant,
};

use tern_e2e::{children_cpu_ms, median, release_bin};

const RUNS: usize = 20;

/// Wall and CPU (user + system of the child) in milliseconds of one run of `bin args`.
fn timed(bin: &Path, args: &[&str], home: &Path, cwd: &Path) -> (f64, f64) {
    let before = children_cpu_ms();
    let started = Instant::now();
    let status = Command::new(bin)
        .args(args)
        .env("TERN_HOME", home)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    assert!(status.success(), "{} {args:?}: {status}", bin.display());
    (wall, children_cpu_ms() - before)
}

fn medians(bin: &Path, args: &[&str], home: &Path, cwd: &Path) -> (f64, f64) {
    let runs: Vec<(f64, f64)> = (0..RUNS).map(|_| timed(bin, args, home, cwd)).collect();
    (
        median(runs.iter().map(|r| r.0).collect()),
        median(runs.iter().map(|r| r.1).collect()),
    )
}

/// Resident set (VmRSS, KiB) of a stdio MCP server once it has answered `tools/list`.
fn server_rss_kib(bin: &Path, args: &[&str], cwd: &Path) -> u64 {
    let mut child = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for msg in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ] {
        writeln!(stdin, "{msg}").unwrap();
        if msg.contains("\"id\"") {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            assert!(line.contains("\"result\""), "{line}");
        }
    }
    let rss = tern_e2e::proc_status_kib(child.id(), "VmRSS").unwrap_or(0);
    drop(stdin);
    let _ = child.wait();
    rss
}

struct Build {
    label: &'static str,
    tern: PathBuf,
    fs: PathBuf,
}

fn main() {
    let mut builds = vec![Build {
        label: "this tree",
        tern: release_bin("tern"),
        fs: release_bin("tern-fs"),
    }];
    if let Ok(base) = std::env::var("TERN_BENCH_BASE") {
        let base = PathBuf::from(base);
        builds.insert(
            0,
            Build {
                label: "base",
                tern: base.join("tern"),
                fs: base.join("tern-fs"),
            },
        );
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.web]\nenabled = false\n",
    )
    .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    println!(
        "| build | binary MB | --version wall / CPU ms | tools wall / CPU ms | serve fs RSS MiB | tern-fs RSS MiB |"
    );
    println!("|---|---|---|---|---|---|");
    for b in &builds {
        let size = std::fs::metadata(&b.tern).unwrap().len() as f64 / 1e6;
        let version = medians(&b.tern, &["--version"], home.path(), cwd.path());
        let tools = medians(&b.tern, &["tools"], home.path(), cwd.path());
        let serve = median(
            (0..5)
                .map(|_| server_rss_kib(&b.tern, &["serve", "fs"], cwd.path()) as f64)
                .collect(),
        );
        let fs = median(
            (0..5)
                .map(|_| server_rss_kib(&b.fs, &[], cwd.path()) as f64)
                .collect(),
        );
        println!(
            "| {} | {size:.1} | {:.1} / {:.0} | {:.1} / {:.0} | {:.1} | {:.1} |",
            b.label,
            version.0,
            version.1,
            tools.0,
            tools.1,
            serve / 1024.0,
            fs / 1024.0
        );
    }
}
