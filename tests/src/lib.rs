//! Helpers for tern's end-to-end tests: where the built binaries are, scratch projects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

use std::path::{Path, PathBuf};

pub mod pool_harness;
pub mod record;
pub mod run_env;

/// The workspace root (the folder holding the top `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// Path of a binary built by this workspace (`tern`, `tern-fs`, …), next to the test executable.
///
/// The README's test command builds every binary first, so a missing binary is a
/// setup error we report loudly rather than a test we skip.
/// The median of `v` (the upper one of an even count), for the benches' tables.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time (user + system) of every child this process has waited for so far, in
/// milliseconds — for the benches' CPU columns.
///
/// `getrusage(RUSAGE_CHILDREN)` rather than `/proc/self/stat`'s `cutime`/`cstime`: those are
/// clock ticks of 10 ms, coarser than the differences the benches report (ACP's ≤ 10 % of a
/// ~90 ms run); the kernel scales rusage times from the exact runtime, to the microsecond.
/// Grandchildren count once their parent has waited for them (the host waits for its servers).
pub fn children_cpu_ms() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage(RUSAGE_CHILDREN)");
    let ms = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 * 1000.0 + t.tv_usec() as f64 / 1000.0;
    ms(usage.user_time()) + ms(usage.system_time())
}

/// A `kB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`, …) in KiB; `None` when the process
/// is gone.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| {
            l.strip_prefix(field)
                .is_some_and(|rest| rest.starts_with(':'))
        })
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
}

/// A release build of a workspace binary, for the benches (which measure what users run).
pub fn release_bin(name: &str) -> PathBuf {
    let p = workspace_root().join("target/release").join(name);
    assert!(
        p.exists(),
        "{} missing: run `cargo build --release --workspace --bins` first",
        p.display()
    );
    p
}

pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/debug/deps/e2e-xxxx -> target/debug/
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "binary {} not built: run `cargo build --workspace --bins` first (the README's test command does)",
        path.display()
    );
    path
}

/// A third-party MCP peer installed by `.ci/install-test-deps` under `.deps/`.
///
/// Missing means the test setup is incomplete: fail loudly, never skip.
pub fn dep(rel: &str) -> PathBuf {
    let path = workspace_root().join(".deps").join(rel);
    assert!(
        path.exists(),
        "{} is missing: run `.ci/install-test-deps` first (the README's test setup does)",
        path.display()
    );
    path
}

/// A `tern` command with its own `$TERN_HOME`, run in `cwd`.
pub fn tern(home: &Path, cwd: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(bin("tern"));
    cmd.env("TERN_HOME", home)
        .env_remove("TERN_LOG")
        .current_dir(cwd);
    cmd
}
