//! When and how long to wait before trying a failed turn again.
//!
//! Mirrors the official SDKs (anthropic-sdk-python `_base_client.py`): exponential backoff from
//! `base_delay` with up to 25 % jitter, capped at `max_delay`; a `retry-after-ms` / `retry-after`
//! header from the provider replaces the backoff, honoured up to `max_retry_after` (60 s).

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// Delay before the first retry; doubles for each further one.
    pub base_delay: Duration,
    /// Ceiling of the computed backoff.
    pub max_delay: Duration,
    /// Ceiling of a provider-requested wait. Longer requests are clamped, not ignored: waiting
    /// the longest we accept is still better than hammering a provider that asked for patience.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_retry_after);
        }
        let exp = attempt.saturating_sub(1).min(20);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        // Jitter spreads out the clients that failed together, so they do not retry together.
        let jitter = 1.0 - 0.25 * random_unit();
        backoff.mul_f64(jitter)
    }
}

/// A number in [0, 1) without a dependency: std's `RandomState` is seeded randomly per process and
/// varies per instance, which is plenty for jitter.
fn random_unit() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// Reads `retry-after-ms` (milliseconds, may be fractional) or `retry-after` (seconds). The
/// HTTP-date form of `retry-after` is not used by either provider and falls back to backoff.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let parse = |name: &str| -> Option<f64> {
        let v = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (v.is_finite() && v >= 0.0).then_some(v)
    };
    if let Some(ms) = parse("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    parse("retry-after").map(Duration::from_secs_f64)
}

/// The provider's own `x-should-retry: true|false` verdict.
pub fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let p = RetryPolicy::default();
        for _ in 0..50 {
            let d1 = p.delay(1, None);
            assert!(d1 <= Duration::from_millis(500) && d1 >= Duration::from_millis(375));
            let d3 = p.delay(3, None);
            assert!(d3 <= Duration::from_secs(2) && d3 >= Duration::from_millis(1500));
            assert!(p.delay(30, None) <= Duration::from_secs(8));
        }
    }

    #[test]
    fn retry_after_wins_and_is_clamped_to_60s() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn header_parsing_prefers_ms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_micros(1_500_500)));
        h.insert("retry-after-ms", HeaderValue::from_static("junk"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }
}
