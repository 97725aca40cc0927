//! `grep` over large trees, end to end over MCP, against the `rg` process with the
//! same pattern and the same ignore rules; the two must agree on what matched.
//!
//! tern-fs's walk rules are ripgrep's with hidden files shown, `.git` skipped and
//! no git repository required for `.gitignore`; ignore files above the searched
//! root are not read. The equivalent `rg` flags are in [`RG_FLAGS`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::raw::{Server, Target, call_line, check};
use crate::{median, tern_bin};

/// `rg` flags that give tern-fs's walk rules.
const RG_FLAGS: &[&str] = &[
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-parent",
    "--glob",
    "!.git",
];
const RUNS: usize = 5;
const DIRS: usize = 100;
const SUBDIRS: usize = 10;
const FILES: usize = 100;

/// One tree searched with one pattern.
struct Case {
    label: String,
    root: PathBuf,
    pattern: &'static str,
}

pub fn compare(rg: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let generated = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let files = generate(&generated)?;
    println!(
        "grep vs rg {}: generated tree of {files} files in {:.1}s; median of {RUNS} warm runs; \
         tern-fs timed from request written to reply read, rg as a process",
        rg_version(rg),
        started.elapsed().as_secs_f64()
    );
    let mut cases = vec![Case {
        label: format!("generated, {files} files"),
        root: generated,
        pattern: r"needle_\d+",
    }];
    match rustup_sources() {
        Some(src) => cases.push(Case {
            label: "rust toolchain sources".into(),
            root: src,
            pattern: r"unsafe fn \w+",
        }),
        None => println!(
            "(the Rust toolchain's sources are not installed under ~/.rustup \
             (rustup component add rust-src): that row is left out)"
        ),
    }
    if let Some(home) = std::env::var_os("HOME") {
        let registry = Path::new(&home).join(".cargo/registry/src");
        if registry.is_dir() {
            cases.push(Case {
                label: "~/.cargo/registry/src".into(),
                root: registry,
                pattern: r"unsafe fn \w+",
            });
        }
    }
    println!();
    println!(
        "| tree                          | mode               |  matches | tern-fs (ms) | rg (ms) | ratio | goal         |"
    );
    println!(
        "|-------------------------------|--------------------|---------:|-------------:|--------:|------:|--------------|"
    );
    for case in &cases {
        for mode in ["files_with_matches", "content"] {
            let (tern_ms, tern_hits) = tern_grep(case, mode)?;
            let (rg_ms, rg_hits) = rg_grep(rg, case, mode)?;
            if tern_hits != rg_hits {
                let only_tern: Vec<_> = tern_hits
                    .iter()
                    .filter(|h| !rg_hits.contains(h))
                    .take(5)
                    .collect();
                let only_rg: Vec<_> = rg_hits
                    .iter()
                    .filter(|h| !tern_hits.contains(h))
                    .take(5)
                    .collect();
                return Err(format!(
                    "{} {mode}: tern-fs found {} results, rg {}; only tern-fs: {only_tern:?}; only rg: {only_rg:?}",
                    case.label,
                    tern_hits.len(),
                    rg_hits.len()
                ));
            }
            let ratio = tern_ms / rg_ms;
            let mark = if ratio <= 1.5 { "met" } else { "MISSED" };
            println!(
                "| {:<29} | {mode:<18} | {:>8} | {tern_ms:>12.1} | {rg_ms:>7.1} | {ratio:>4.2}x | <=1.5x {mark:<6}|",
                case.label,
                tern_hits.len()
            );
        }
    }
    Ok(())
}

/// A deterministic tree: `DIRS`×`SUBDIRS`×`FILES` text files of pseudo-random words,
/// about 2% holding `needle_N`, plus git-ignored files that hold needles too.
fn generate(root: &Path) -> Result<usize, String> {
    let io = |e: std::io::Error| format!("generating the tree: {e}");
    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "delta", "fn", "let", "match", "struct", "impl", "return",
        "value", "error", "result", "option", "self", "where", "async", "await", "quick", "brown",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").map_err(io)?;
    let mut count = 0;
    let mut text = String::new();
    for d in 0..DIRS {
        for s in 0..SUBDIRS {
            let dir = root.join(format!("d{d:03}/s{s}"));
            std::fs::create_dir_all(&dir).map_err(io)?;
            for f in 0..FILES {
                text.clear();
                let lines = 4 + next() % 16;
                for l in 0..lines {
                    for _ in 0..(3 + next() % 8) {
                        text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
                        text.push(' ');
                    }
                    if next() % 50 == 0 {
                        text.push_str(&format!("needle_{l}"));
                    }
                    text.push('\n');
                }
                std::fs::write(dir.join(format!("f{f:02}.txt")), &text).map_err(io)?;
                count += 1;
            }
        }
        if d % 10 == 0 {
            // Ignored by .gitignore: both tools must skip them.
            let build = root.join(format!("d{d:03}/build"));
            std::fs::create_dir_all(&build).map_err(io)?;
            for f in 0..50 {
                std::fs::write(build.join(format!("gen{f}.txt")), "needle_0\n").map_err(io)?;
                count += 1;
            }
            std::fs::write(root.join(format!("d{d:03}/trace.log")), "needle_1\n").map_err(io)?;
            count += 1;
        }
    }
    Ok(count)
}

/// `~/.rustup/toolchains/*/lib/rustlib/src/rust`, when rust-src is installed.
fn rustup_sources() -> Option<PathBuf> {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".rustup")))?;
    let mut toolchains: Vec<PathBuf> = std::fs::read_dir(home.join("toolchains"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    toolchains.sort();
    toolchains
        .into_iter()
        .map(|t| t.join("lib/rustlib/src/rust"))
        .find(|p| p.is_dir())
}

fn rg_version(rg: &Path) -> String {
    Command::new(rg)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "(unknown version)".into())
}

/// Median wall time of a grep call over MCP (request written to reply read),
/// and its sorted results: paths, or `path:line` for content.
fn tern_grep(case: &Case, mode: &str) -> Result<(f64, Vec<String>), String> {
    let target = Target {
        label: "tern-fs",
        program: tern_bin(),
        args: vec![
            "--root".into(),
            case.root.to_string_lossy().into_owned(),
            "--max-grep-results".into(),
            "100000000".into(),
        ],
        read_tool: "read_file",
    };
    let mut server = Server::start(&target)?;
    let args = json!({"pattern": case.pattern, "output_mode": mode});
    let mut times = Vec::with_capacity(RUNS);
    let mut last = Value::Null;
    // One warm-up run fills the page cache and the server's allocator.
    for id in 0..=RUNS as u64 {
        let line = call_line(id + 1, "grep", &args);
        let started = Instant::now();
        server.send(&line)?;
        let reply = server.recv()?.to_string();
        let ms = started.elapsed().as_secs_f64() * 1e3;
        last = check(&reply)?;
        if id > 0 {
            times.push(ms);
        }
    }
    let key = if mode == "content" { "lines" } else { "files" };
    let items = last
        .pointer(&format!("/result/structuredContent/{key}"))
        .and_then(Value::as_array)
        .ok_or_else(|| format!("grep reply without {key}: {last}"))?;
    if last.pointer("/result/structuredContent/truncated") == Some(&Value::Bool(true)) {
        return Err("tern-fs grep was capped; raise --max-grep-results".into());
    }
    let mut hits: Vec<String> = items
        .iter()
        .filter_map(Value::as_str)
        .map(|s| key_of(s, mode))
        .collect();
    hits.sort();
    Ok((median(&mut times), hits))
}

fn rg_grep(rg: &Path, case: &Case, mode: &str) -> Result<(f64, Vec<String>), String> {
    let mut times = Vec::with_capacity(RUNS);
    let mut out = Vec::new();
    for run in 0..=RUNS {
        let mut cmd = Command::new(rg);
        cmd.args(RG_FLAGS);
        if mode == "content" {
            cmd.args(["--line-number", "--no-heading", "--with-filename"]);
        } else {
            cmd.arg("--files-with-matches");
        }
        cmd.arg("-e").arg(case.pattern).arg(&case.root);
        let started = Instant::now();
        let o = cmd.output().map_err(|e| format!("cannot run rg: {e}"))?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        // 1 means "no match", which is a result too.
        if !matches!(o.status.code(), Some(0 | 1)) {
            return Err(format!("rg failed: {}", String::from_utf8_lossy(&o.stderr)));
        }
        out = o.stdout;
        if run > 0 {
            times.push(ms);
        }
    }
    let mut hits: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .map(|s| key_of(s, mode))
        .collect();
    hits.sort();
    Ok((median(&mut times), hits))
}

/// What identifies one result: the path, or `path:line` (the matched text may be
/// clipped by tern-fs for long lines, so it is left out of the comparison).
fn key_of(line: &str, mode: &str) -> String {
    if mode != "content" {
        return line.to_string();
    }
    // `path:line:text`; paths in these trees hold no `:`.
    let mut parts = line.splitn(3, ':');
    match (parts.next(), parts.next()) {
        (Some(p), Some(n)) => format!("{p}:{n}"),
        _ => line.to_string(),
    }
}
