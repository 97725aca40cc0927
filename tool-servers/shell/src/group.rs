//! Signalling the process group a command runs in, and telling when it is empty.

use rustix::process::{Pid, Signal};

/// A process group we created with `setsid` (its id is the leader's pid).
#[derive(Debug, Clone, Copy)]
pub struct Group(Pid);

impl Group {
    /// `None` for pid 1: `kill(-1, sig)` means "every process we may signal",
    /// so that id must never reach [`signal_group`].
    pub fn new(leader: Pid) -> Option<Self> {
        (leader != Pid::INIT).then_some(Self(leader))
    }
}

/// Signals every member of the group; a group that is already empty is fine.
pub fn signal_group(group: Option<Group>, signal: Signal) {
    let Some(Group(pgid)) = group else { return };
    match rustix::process::kill_process_group(pgid, signal) {
        Ok(()) => tracing::debug!(?signal, pgid = pgid.as_raw_nonzero(), "signalled group"),
        Err(rustix::io::Errno::SRCH) => {}
        Err(e) => tracing::warn!(?signal, "signalling the process group failed: {e}"),
    }
}

/// True while a member of the group is still running.
///
/// `kill(-pgid, 0)` alone is not enough: killed background children are
/// reparented to pid 1 and stay in the group as zombies until it reaps them,
/// which some init processes do seconds later. Zombies run nothing, so when
/// the group still answers we look through /proc for a member that is not one.
pub fn group_has_live_members(group: Option<Group>) -> bool {
    let Some(Group(pgid)) = group else {
        return false;
    };
    if rustix::process::test_kill_process_group(pgid).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // Without /proc, be conservative: members answered, so assume they live.
        return true;
    };
    let pgid = pgid.as_raw_nonzero().get();
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| matches!(parse_stat(&stat), Some((state, pgrp)) if pgrp == pgid && state != 'Z' && state != 'X'))
}

/// State and process group from a `/proc/PID/stat` line. The command name is
/// parenthesised and may contain spaces or parentheses, so parse after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Aborts the command (through its sandbox supervisor's pid) if a run is
/// abandoned midway (its future dropped because the client went away or the
/// server is shutting down): nothing a command started may outlive its call.
pub struct KillOnDrop(pub Option<u32>);

impl KillOnDrop {
    /// The run finished and its supervisor has exited.
    pub fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            tern_sandbox::abort(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(parse_stat("12 (sleep) S 1 12 12 0 -1"), Some(('S', 12)));
        assert_eq!(parse_stat("13 (a) b) Z 1 99 12 0"), Some(('Z', 99)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn pid_one_is_never_a_group() {
        assert!(Group::new(Pid::INIT).is_none());
    }
}
