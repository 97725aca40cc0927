//! Output tokens per second: estimated from the stream's deltas while they arrive (characters
//! over the characters a token took so far), then measured from the usage the provider reports
//! at the stream's end. The spinner shows the estimate (`~42 tok/s`), the status line after the
//! turn the measured rate.

use std::time::{Duration, Instant};

/// Characters per token before any usage has arrived (English text and code average about 4).
const CHARS_PER_TOKEN: f64 = 4.0;

/// A rate needs this much streaming to mean anything.
const MIN_SPAN: Duration = Duration::from_millis(200);

#[derive(Default)]
pub(super) struct Rate {
    /// The current stream: when its first delta came, and its characters since.
    first: Option<Instant>,
    chars: usize,
    /// Learned from usage: characters streamed per output token reported.
    chars_per_token: Option<f64>,
    /// The turn so far: output tokens and the time the model spent streaming them.
    turn_tokens: u64,
    turn_span: Duration,
}

impl Rate {
    /// A delta of `text` arrived at `now`; the estimate so far, when there is one.
    pub fn delta(&mut self, text: &str, now: Instant) -> Option<f64> {
        let first = *self.first.get_or_insert(now);
        self.chars += text.chars().count();
        let span = now.duration_since(first);
        if span < MIN_SPAN {
            return None;
        }
        let tokens = self.chars as f64 / self.chars_per_token.unwrap_or(CHARS_PER_TOKEN);
        Some(tokens / span.as_secs_f64())
    }

    /// The stream ended at `now` with `output_tokens` reported (0: not reported) over
    /// `latency` (request to end); `extra_chars` were generated but not streamed as deltas (the
    /// calls' arguments). Learns the characters per token for the next estimates.
    pub fn response(
        &mut self,
        output_tokens: u64,
        extra_chars: usize,
        latency: Duration,
        now: Instant,
    ) {
        let first = self.first.take();
        let chars = std::mem::take(&mut self.chars) + extra_chars;
        if output_tokens == 0 {
            return;
        }
        if chars > 0 {
            let learned = (chars as f64 / output_tokens as f64).clamp(1.0, 12.0);
            self.chars_per_token = Some(learned);
        }
        // From the first delta when text streamed; else the whole request (arguments only).
        let span = first.map_or(latency, |f| now.duration_since(f));
        if span >= MIN_SPAN {
            self.turn_tokens += output_tokens;
            self.turn_span += span;
        }
    }

    /// The turn's measured rate, and starts the next turn.
    pub fn finish_turn(&mut self) -> Option<f64> {
        let (tokens, span) = (self.turn_tokens, self.turn_span);
        self.turn_tokens = 0;
        self.turn_span = Duration::ZERO;
        self.first = None;
        self.chars = 0;
        (tokens > 0 && span >= MIN_SPAN).then(|| tokens as f64 / span.as_secs_f64())
    }
}

/// `42 tok/s`, `~42 tok/s` for an estimate; one decimal under 10.
pub(super) fn shown(rate: f64, estimate: bool) -> String {
    let tilde = if estimate { "~" } else { "" };
    if rate < 10.0 {
        format!("{tilde}{rate:.1} tok/s")
    } else {
        format!("{tilde}{rate:.0} tok/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_learns_from_usage_and_the_turn_reports_the_measured_rate() {
        let mut rate = Rate::default();
        let t0 = Instant::now();
        let s = |ms| t0 + Duration::from_millis(ms);
        assert_eq!(rate.delta("abcd", t0), None, "too early to say");
        // 400 characters in one second at 4 characters a token: 100 tok/s.
        let est = rate.delta(&"x".repeat(396), s(1000)).unwrap_or_default();
        assert!((est - 100.0).abs() < 0.01, "{est}");
        // The provider says 200 tokens: 2 characters a token, 200 tok/s measured.
        rate.response(200, 0, Duration::from_secs(3), s(1000));
        // The next stream is estimated at 2 characters a token.
        rate.delta("ab", s(2000));
        let est = rate.delta(&"x".repeat(198), s(3000)).unwrap_or_default();
        assert!((est - 100.0).abs() < 0.01, "{est}");
        rate.response(100, 0, Duration::from_secs(2), s(3000));
        // 300 tokens over 2 s of streaming.
        let turn = rate.finish_turn().unwrap_or_default();
        assert!((turn - 150.0).abs() < 0.01, "{turn}");
        assert_eq!(rate.finish_turn(), None, "a new turn starts empty");
        assert_eq!(shown(150.0, false), "150 tok/s");
        assert_eq!(shown(4.26, true), "~4.3 tok/s");
    }
}
