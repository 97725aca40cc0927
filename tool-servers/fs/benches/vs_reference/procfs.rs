//! What the kernel says a process has used, from `/proc`.

/// Nanoseconds process `pid`'s live threads have spent on a CPU: the first field of each
/// `/proc/PID/task/TID/schedstat`. Exact to the nanosecond (utime+stime are counted in 10 ms
/// ticks, which at tens of µs per call needs thousands of calls to resolve), and what a thread
/// waits for a CPU is not in it — so it stays right on a machine busy with other work. A thread
/// that exits takes its time with it; the servers measured here keep theirs for the process's
/// life (tern-fs's blocking-pool threads are idle for the small reads measured).
pub fn cpu_ns(pid: u32) -> Result<u64, String> {
    let dir = format!("/proc/{pid}/task");
    let tasks = std::fs::read_dir(&dir).map_err(|e| format!("cannot list {dir}: {e}"))?;
    let mut total = 0;
    for task in tasks.flatten() {
        let path = task.path().join("schedstat");
        // A thread that exits between the listing and the read is simply gone.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let on_cpu = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok());
        total += on_cpu.ok_or_else(|| format!("unexpected {}: {text}", path.display()))?;
    }
    Ok(total)
}

/// A `kB` field (`VmRSS`, `VmHWM`, …) of `/proc/PID/status`, in KiB.
pub fn status_kib(pid: u32, field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))
}
