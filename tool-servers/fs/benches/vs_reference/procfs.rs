//! What the kernel says a process has used, from `/proc`.

/// utime + stime of process `pid` (all its threads, live and exited), in clock ticks.
pub fn cpu_ticks(pid: u32) -> Result<u64, String> {
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

/// Clock ticks to microseconds. `/proc` reports in USER_HZ, which Linux fixes
/// at 100 for user space whatever the kernel's own tick rate.
pub fn ticks_to_us(ticks: u64) -> f64 {
    ticks as f64 * 10_000.0
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
