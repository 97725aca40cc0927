//! The plan file tern-shell hands its runner, and the report the runner hands back.
//!
//! The plan is everything [`crate::exec::run`] gets for one command — shell, command line,
//! cwd, the complete (already cleared) environment, timeout, output cap, the sandbox policy
//! and the paths to hide — so the runner, started by the editor, spawns exactly what tern-shell
//! would have. Both files live in a private directory of tern-shell's (0700), each 0600; the
//! plan holds no secret the command would not see anyway (the environment is the filtered one).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tern_sandbox::{GitWrites, Mode, Network, Policy, Support};
use tern_tool_common::Capped;

use crate::exec::{Ending, Outcome, Stop};

/// Bumped when the plan's shape changes: a runner of another build refuses a plan it would
/// misread (tern-shell and its runner are the same executable, so this only trips when the
/// binary was replaced between the two).
pub(crate) const PLAN_VERSION: u32 = 1;

/// Text that is UTF-8 as a JSON string, other bytes as an array (paths and environment values
/// need not be UTF-8 on unix, and must arrive unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Bytes {
    Utf8(String),
    Raw(Vec<u8>),
}

impl From<&OsStr> for Bytes {
    fn from(s: &OsStr) -> Self {
        match s.to_str() {
            Some(text) => Bytes::Utf8(text.to_string()),
            None => Bytes::Raw(s.as_bytes().to_vec()),
        }
    }
}

impl From<&Path> for Bytes {
    fn from(p: &Path) -> Self {
        Bytes::from(p.as_os_str())
    }
}

impl Bytes {
    pub(crate) fn os(&self) -> OsString {
        match self {
            Bytes::Utf8(s) => OsString::from(s),
            Bytes::Raw(b) => OsString::from_vec(b.clone()),
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(self.os())
    }
}

fn paths(list: &[PathBuf]) -> Vec<Bytes> {
    list.iter().map(|p| Bytes::from(p.as_path())).collect()
}

fn unpaths(list: &[Bytes]) -> Vec<PathBuf> {
    list.iter().map(Bytes::path).collect()
}

/// [`Policy`], field for field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PolicyPlan {
    mode: String,
    network: String,
    writable_roots: Vec<Bytes>,
    temp_dirs: Vec<Bytes>,
    protected: Vec<Bytes>,
    allow_sockets: Vec<Bytes>,
    git_objects: bool,
    pty: bool,
}

impl From<&Policy> for PolicyPlan {
    fn from(policy: &Policy) -> Self {
        // Every field named: a field added to the policy must be carried here too.
        let Policy {
            mode,
            network,
            writable_roots,
            temp_dirs,
            protected,
            allow_sockets,
            git,
            pty,
        } = policy;
        Self {
            mode: mode.as_str().to_string(),
            network: network.to_string(),
            writable_roots: paths(writable_roots),
            temp_dirs: paths(temp_dirs),
            protected: paths(protected),
            allow_sockets: paths(allow_sockets),
            git_objects: *git == GitWrites::Objects,
            pty: *pty,
        }
    }
}

impl PolicyPlan {
    pub(crate) fn policy(&self) -> Result<Policy, String> {
        let mode: Mode = self.mode.parse()?;
        let network: Network = self.network.parse()?;
        let mut policy = Policy::new(mode, network, unpaths(&self.writable_roots));
        policy.temp_dirs = unpaths(&self.temp_dirs);
        policy.protected = unpaths(&self.protected);
        policy.allow_sockets = unpaths(&self.allow_sockets);
        policy.git = if self.git_objects {
            GitWrites::Objects
        } else {
            GitWrites::None
        };
        policy.pty = self.pty;
        Ok(policy)
    }
}

/// [`Support`], field for field (`Err` holds why a layer is missing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SupportPlan {
    namespaces: Result<(), String>,
    proc_mount: Result<(), String>,
    network_namespace: Result<(), String>,
    mount_view: Result<(), String>,
    landlock_abi: Option<u32>,
    seccomp: Result<(), String>,
}

impl From<&Support> for SupportPlan {
    fn from(support: &Support) -> Self {
        // Every field named: a layer added to `Support` must be carried here too.
        let Support {
            namespaces,
            proc_mount,
            network_namespace,
            mount_view,
            landlock_abi,
            seccomp,
        } = support.clone();
        Self {
            namespaces,
            proc_mount,
            network_namespace,
            mount_view,
            landlock_abi,
            seccomp,
        }
    }
}

impl SupportPlan {
    pub(crate) fn support(&self) -> Support {
        let s = self.clone();
        Support {
            namespaces: s.namespaces,
            proc_mount: s.proc_mount,
            network_namespace: s.network_namespace,
            mount_view: s.mount_view,
            landlock_abi: s.landlock_abi,
            seccomp: s.seccomp,
        }
    }
}

/// One command, as [`crate::exec::Invocation`] would run it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Plan {
    pub(crate) version: u32,
    pub(crate) shell: Bytes,
    pub(crate) command: String,
    pub(crate) cwd: Bytes,
    /// The command's complete environment (nothing else is inherited).
    pub(crate) env: Vec<(Bytes, Bytes)>,
    pub(crate) timeout_ms: u64,
    /// When tern-shell took the call (ms since the Unix epoch): the timeout runs from then, as
    /// it does when tern-shell spawns the command itself, not from the runner's start.
    #[serde(default)]
    pub(crate) since_unix_ms: Option<u64>,
    pub(crate) max_output_chars: usize,
    pub(crate) policy: PolicyPlan,
    /// Paths the command sees as empty (the host's file deny rules).
    pub(crate) hidden: Vec<Bytes>,
    /// What tern-shell found this kernel supports: the runner builds its sandbox for exactly
    /// these layers instead of probing again (which cost it some 40 ms). A layer the editor's
    /// process cannot have (an editor inside a Flatpak or a container without user namespaces)
    /// makes the command fail to start — never run with less than tern-shell would give it.
    pub(crate) support: SupportPlan,
    /// Where the runner writes its [`Report`].
    pub(crate) report: Bytes,
}

impl Plan {
    /// The plan of `inv` under the layers of `support`, whose report goes to `report`.
    pub(crate) fn of(inv: &crate::exec::Invocation<'_>, support: &Support, report: &Path) -> Self {
        Self {
            version: PLAN_VERSION,
            shell: Bytes::from(inv.shell),
            command: inv.command.to_string(),
            cwd: Bytes::from(inv.cwd),
            env: inv
                .env
                .iter()
                .map(|(k, v)| (Bytes::from(k.as_os_str()), Bytes::from(v.as_os_str())))
                .collect(),
            timeout_ms: u64::try_from(inv.timeout.as_millis()).unwrap_or(u64::MAX),
            since_unix_ms: unix_ms(SystemTime::now()),
            max_output_chars: inv.max_output_chars,
            policy: PolicyPlan::from(inv.sandbox.policy()),
            hidden: paths(inv.hidden),
            support: SupportPlan::from(support),
            report: Bytes::from(report),
        }
    }

    /// The time left of the call's timeout at `now`: the time spent starting the runner is
    /// taken off (never below 1 ms, never above the timeout when clocks disagree).
    pub(crate) fn timeout_left(&self, now: SystemTime) -> Duration {
        let timeout = Duration::from_millis(self.timeout_ms);
        let spent = match (self.since_unix_ms, unix_ms(now)) {
            (Some(since), Some(now)) => Duration::from_millis(now.saturating_sub(since)),
            _ => Duration::ZERO,
        };
        timeout
            .saturating_sub(spent)
            .max(Duration::from_millis(1).min(timeout))
    }
}

/// What the runner tells tern-shell: the command's [`Outcome`], or why it did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    Ran(RanReport),
    /// The command was not started (plan unreadable, sandbox weaker than tern-shell's, spawn
    /// failed): the message for the model.
    Failed(String),
}

/// [`Outcome`], field for field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RanReport {
    exit_code: Option<i32>,
    signal: Option<i32>,
    /// `finished`, `timed_out` or `cancelled`.
    stop: String,
    escalated_to_kill: bool,
    duration_ms: u64,
    output: String,
    truncated: bool,
    total_chars: u64,
    total_bytes: u64,
    omitted_chars: u64,
    bytes_read: u64,
    output_detached: bool,
}

impl From<&Outcome> for RanReport {
    fn from(o: &Outcome) -> Self {
        let (exit_code, signal) = match o.ending {
            Ending::Exited(code) => (Some(code), None),
            Ending::Signaled(signal) => (None, Some(signal)),
            Ending::Unknown => (None, None),
        };
        Self {
            exit_code,
            signal,
            stop: match o.stop {
                Stop::Finished => "finished",
                Stop::TimedOut => "timed_out",
                Stop::Cancelled => "cancelled",
            }
            .to_string(),
            escalated_to_kill: o.escalated_to_kill,
            duration_ms: u64::try_from(o.duration.as_millis()).unwrap_or(u64::MAX),
            output: o.output.text.clone(),
            truncated: o.output.truncated,
            total_chars: o.output.total_chars,
            total_bytes: o.output.total_bytes,
            omitted_chars: o.output.omitted_chars,
            bytes_read: o.bytes_read,
            output_detached: o.output_detached,
        }
    }
}

impl RanReport {
    pub(crate) fn outcome(&self) -> Outcome {
        Outcome {
            ending: match (self.exit_code, self.signal) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signaled(signal),
                (None, None) => Ending::Unknown,
            },
            stop: match self.stop.as_str() {
                "timed_out" => Stop::TimedOut,
                "cancelled" => Stop::Cancelled,
                _ => Stop::Finished,
            },
            escalated_to_kill: self.escalated_to_kill,
            duration: Duration::from_millis(self.duration_ms),
            output: Capped {
                text: self.output.clone(),
                truncated: self.truncated,
                total_chars: self.total_chars,
                total_bytes: self.total_bytes,
                omitted_chars: self.omitted_chars,
            },
            bytes_read: self.bytes_read,
            output_detached: self.output_detached,
        }
    }
}

fn unix_ms(t: SystemTime) -> Option<u64> {
    let since = t.duration_since(UNIX_EPOCH).ok()?;
    u64::try_from(since.as_millis()).ok()
}

/// Writes `value` as JSON to a new file `path`, readable by this user only.
pub(crate) fn write_private<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    // No fsync: the reader is on this machine and reads it from the page cache.
    file.write_all(&bytes)
}

/// Reads the JSON file `path`.
pub(crate) fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_survives_the_trip_through_the_plan() {
        let mut policy = Policy::new(
            Mode::WorkspaceWrite,
            Network::On,
            vec![
                PathBuf::from("/w"),
                PathBuf::from(OsString::from_vec(b"/odd\xff".to_vec())),
            ],
        );
        policy.temp_dirs = vec![PathBuf::from("/t")];
        policy.protected = vec![PathBuf::from("/home/u/.tern")];
        policy.allow_sockets = vec![PathBuf::from("/run/agent.sock")];
        policy.git = GitWrites::Objects;
        let plan = PolicyPlan::from(&policy);
        let json = serde_json::to_string(&plan).unwrap();
        let back: PolicyPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back.policy().unwrap(), policy);
    }

    #[test]
    fn the_kernels_layers_survive_the_trip_through_the_plan() {
        let mut support = Support::detect();
        support.network_namespace = Err("refused by the test".into());
        support.landlock_abi = Some(3);
        let json = serde_json::to_string(&SupportPlan::from(&support)).unwrap();
        let back: SupportPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back.support(), support);
    }

    #[test]
    fn the_timeout_runs_from_when_tern_shell_took_the_call() {
        let now = SystemTime::now();
        let plan = |since: Option<SystemTime>| Plan {
            version: PLAN_VERSION,
            shell: Bytes::Utf8("/bin/sh".into()),
            command: String::new(),
            cwd: Bytes::Utf8("/".into()),
            env: Vec::new(),
            timeout_ms: 10_000,
            since_unix_ms: since.and_then(unix_ms),
            max_output_chars: 1,
            policy: PolicyPlan::from(&Policy::new(Mode::ReadOnly, Network::Off, Vec::new())),
            hidden: Vec::new(),
            support: SupportPlan::from(&Support::detect()),
            report: Bytes::Utf8("/r".into()),
        };
        let ms = Duration::from_millis;
        assert_eq!(plan(Some(now - ms(250))).timeout_left(now), ms(9_750));
        assert_eq!(plan(None).timeout_left(now), ms(10_000));
        // Clocks that disagree never lengthen it, nor bring it to nothing.
        assert_eq!(plan(Some(now + ms(5_000))).timeout_left(now), ms(10_000));
        assert_eq!(plan(Some(now - ms(60_000))).timeout_left(now), ms(1));
    }

    #[test]
    fn an_outcome_survives_the_trip_through_the_report() {
        let outcome = Outcome {
            ending: Ending::Signaled(15),
            stop: Stop::Cancelled,
            escalated_to_kill: true,
            duration: Duration::from_millis(1234),
            output: Capped {
                text: "head\n…\ntail\n".into(),
                truncated: true,
                total_chars: 99,
                total_bytes: 101,
                omitted_chars: 80,
            },
            bytes_read: 101,
            output_detached: true,
        };
        let report = Report::Ran(RanReport::from(&outcome));
        let json = serde_json::to_string(&report).unwrap();
        let Report::Ran(back) = serde_json::from_str(&json).unwrap() else {
            panic!("{json}")
        };
        let o = back.outcome();
        assert_eq!(
            (o.ending, o.stop, o.escalated_to_kill, o.duration),
            (outcome.ending, outcome.stop, true, outcome.duration)
        );
        assert_eq!(o.output.text, outcome.output.text);
        assert_eq!(
            (o.output.omitted_chars, o.bytes_read, o.output_detached),
            (80, 101, true)
        );
    }
}
