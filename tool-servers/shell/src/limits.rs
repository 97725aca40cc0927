//! The limits one `run` call gets: the server's settings, the call's own
//! `timeout_sec`, and the host's per-call limits.
//!
//! A host that wraps tern-shell has its own timeout and output cap; when they
//! differ from the server's (the host waits 60 s, the server would wait 120 s)
//! the call is cut by whichever is smaller and the result is lost. So the host
//! sends its limits in the request's `_meta["tern/limits"]` (issue 9, item 3)
//! and they win over the server's defaults, clamped to the server's maxima.

use std::time::Duration;

use serde::Deserialize;

/// Key of the host's per-call limits in a `tools/call` request's `_meta`.
pub const META_KEY: &str = tern_tool_common::meta::LIMITS;

/// Largest output budget a host may ask for: the capture keeps up to this
/// many characters in memory (about 4 bytes each in the tail ring).
pub const MAX_OUTPUT_CHARS_HARD: usize = 1_000_000;

/// Characters reserved for the footer lines when the host caps the whole
/// result, so the host's cap never has to cut the text a second time.
pub const FOOTER_RESERVE: usize = 600;

/// `_meta["tern/limits"]` as the host sends it; both fields are optional.
/// Unknown keys are ignored so a newer host can add limits an older server
/// does not know yet.
pub type HostLimits = tern_tool_common::meta::Limits;

/// `_meta["tern/limits"]` is present but not the documented shape.
#[derive(Debug, thiserror::Error)]
#[error(
    "_meta[\"{META_KEY}\"] is malformed ({0}); expected {{\"timeout_ms\": N, \"max_output_chars\": N}}"
)]
pub struct MalformedLimits(serde_json::Error);

/// Reads the host's limits from a request's `_meta` (absent means none).
pub fn host_limits(
    meta: &serde_json::Map<String, serde_json::Value>,
) -> Result<HostLimits, MalformedLimits> {
    match meta.get(META_KEY) {
        None => Ok(HostLimits::default()),
        Some(value) => HostLimits::deserialize(value).map_err(MalformedLimits),
    }
}

/// The timeout a call runs under, and what the caller asked for when that
/// request had to be changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    pub effective: Duration,
    /// The call's `timeout_sec`, when it was outside the allowed range.
    pub clamped_from: Option<Duration>,
}

/// Precedence: the call's `timeout_sec`, else the host's `timeout_ms`, else the
/// server default; a host limit also caps the call's own value (the host stops
/// waiting then anyway); everything is clamped to the server's maximum.
pub fn timeout(
    requested: Option<Duration>,
    host: &HostLimits,
    default: Duration,
    max: Duration,
) -> Timeout {
    let host_limit = host.timeout_ms.map(Duration::from_millis);
    let ceiling = host_limit.map_or(max, |h| h.min(max));
    let floor = Duration::from_millis(1).min(ceiling);
    let effective = match requested {
        Some(r) => r.clamp(Duration::from_secs(1).min(ceiling), ceiling),
        None => host_limit.unwrap_or(default).clamp(floor, ceiling),
    };
    Timeout {
        effective,
        clamped_from: requested.filter(|r| *r != effective),
    }
}

/// Characters of command output kept: the host's cap of the whole result
/// (less room for the footer) when given, else the server's setting.
pub fn output_budget(host: &HostLimits, server_default: usize) -> usize {
    match host.max_output_chars {
        None => server_default,
        Some(cap) => usize::try_from(cap)
            .unwrap_or(usize::MAX)
            .min(MAX_OUTPUT_CHARS_HARD)
            .saturating_sub(FOOTER_RESERVE)
            .max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn host(timeout_ms: Option<u64>, max_output_chars: Option<u64>) -> HostLimits {
        HostLimits {
            timeout_ms,
            max_output_chars,
        }
    }

    #[test]
    fn the_host_limit_replaces_the_default_and_caps_the_request() {
        let none = HostLimits::default();
        assert_eq!(timeout(None, &none, S(120), S(600)).effective, S(120));
        let h = host(Some(60_000), None);
        assert_eq!(timeout(None, &h, S(120), S(600)).effective, S(60));
        let t = timeout(Some(S(300)), &h, S(120), S(600));
        assert_eq!((t.effective, t.clamped_from), (S(60), Some(S(300))));
        assert_eq!(timeout(Some(S(10)), &h, S(120), S(600)).effective, S(10));
        // Clamped to the server's own maximum.
        let h = host(Some(3_600_000), None);
        assert_eq!(timeout(None, &h, S(120), S(600)).effective, S(600));
        // Sub-second host limits keep their precision.
        let h = host(Some(1500), None);
        assert_eq!(
            timeout(None, &h, S(120), S(600)).effective,
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn the_host_output_cap_is_honoured_above_the_server_default() {
        assert_eq!(output_budget(&HostLimits::default(), 30_000), 30_000);
        assert_eq!(
            output_budget(&host(None, Some(50_000)), 30_000),
            50_000 - FOOTER_RESERVE
        );
        assert_eq!(
            output_budget(&host(None, Some(u64::MAX)), 30_000),
            MAX_OUTPUT_CHARS_HARD - FOOTER_RESERVE
        );
        assert_eq!(output_budget(&host(None, Some(3)), 30_000), 1);
    }

    #[test]
    fn meta_is_parsed_strictly() {
        let meta = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert_eq!(
            host_limits(&meta(json!({}))).unwrap(),
            HostLimits::default()
        );
        assert_eq!(
            host_limits(&meta(json!({"tern/limits": {"timeout_ms": 5}}))).unwrap(),
            host(Some(5), None)
        );
        let err = host_limits(&meta(json!({"tern/limits": {"timeout_ms": "5"}}))).unwrap_err();
        assert!(err.to_string().contains("tern/limits"), "{err}");
        assert!(host_limits(&meta(json!({"tern/limits": 5}))).is_err());
    }
}
