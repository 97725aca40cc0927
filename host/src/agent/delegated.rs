//! Model usage a tool spent on a call's behalf — a sub-agent's whole run, above all — and its
//! sum over a run, so `run_finished`, `turn_finished` and `/cost` count what delegating cost.
//!
//! The contract is a key of the tool result's `_meta` (not of `structuredContent`, which
//! belongs to the tool's declared output): any server that calls a model for a tool call may
//! report it, and the host adds it to the run's totals.
//!
//! ```json
//! {"_meta": {"tern/usage": {"input_tokens": 1200, "output_tokens": 80,
//!   "cache_read_tokens": 0, "cache_creation_tokens": 0, "cost_usd": 0.0048}}}
//! ```
//!
//! `cost_usd` is absent (or `null`) when the server could not price the tokens; the run's total
//! cost is then unknown too, rather than silently too low.

use std::sync::Mutex;

use tern_protocol::Usage;

pub use tern_protocol::meta::{ReportedUsage, USAGE as USAGE_META};

/// The sum of what a run's tool calls reported.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Delegated {
    /// Calls that reported usage (sub-agent runs).
    pub calls: u32,
    /// Their tokens.
    pub usage: Usage,
    /// Their cost, over the calls that gave one.
    pub cost_usd: f64,
    /// Calls that reported tokens without a cost.
    pub unpriced: u32,
}

impl Delegated {
    /// What was added since `earlier` (a snapshot of the same sum).
    pub fn since(&self, earlier: &Delegated) -> Delegated {
        Delegated {
            calls: self.calls - earlier.calls,
            usage: Usage {
                input: self.usage.input - earlier.usage.input,
                output: self.usage.output - earlier.usage.output,
                cache_read: self.usage.cache_read - earlier.usage.cache_read,
                cache_creation: self.usage.cache_creation - earlier.usage.cache_creation,
            },
            cost_usd: self.cost_usd - earlier.cost_usd,
            unpriced: self.unpriced - earlier.unpriced,
        }
    }

    /// `own` model cost plus this: unknown when either part is.
    pub fn add_cost(&self, own: Option<f64>) -> Option<f64> {
        if self.calls == 0 {
            own
        } else if self.unpriced > 0 {
            None
        } else {
            own.map(|c| c + self.cost_usd)
        }
    }

    /// `own` tokens plus these.
    pub fn add_usage(&self, own: &Usage) -> Usage {
        let mut total = *own;
        total.add(&self.usage);
        total
    }
}

/// The running sum, shared by the tool executor (which adds) and the engine (which reports).
#[derive(Debug, Default)]
pub struct DelegatedUsage(Mutex<Delegated>);

impl DelegatedUsage {
    /// Adds one call's report.
    pub fn add(&self, reported: &ReportedUsage) {
        if let Ok(mut sum) = self.0.lock() {
            sum.calls += 1;
            sum.usage.add(&reported.usage());
            match reported.cost_usd {
                Some(c) => sum.cost_usd += c,
                None => sum.unpriced += 1,
            }
        }
    }

    /// The sum so far.
    pub fn total(&self) -> Delegated {
        self.0.lock().map(|s| *s).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn usage_is_read_from_the_result_meta_and_summed() {
        let meta = json!({"tern/usage": {"input_tokens": 100, "output_tokens": 20,
            "cache_read_tokens": 5, "cost_usd": 0.5}, "other": 1});
        let r = ReportedUsage::from_result_meta(Some(&meta)).unwrap();
        assert_eq!(r.cache_creation_tokens, 0);
        assert_eq!(r.usage().total_input(), 105);
        assert_eq!(
            ReportedUsage::from_result_meta(Some(&json!({"x": 1}))),
            None
        );
        assert_eq!(
            ReportedUsage::from_result_meta(Some(&json!({"tern/usage": "lots"}))),
            None
        );
        assert_eq!(ReportedUsage::from_result_meta(None), None);

        let sum = DelegatedUsage::default();
        let before = sum.total();
        sum.add(&r);
        sum.add(&r);
        let total = sum.total();
        assert_eq!(total.calls, 2);
        assert_eq!(total.usage.input, 200);
        assert_eq!(total.add_cost(Some(1.0)), Some(2.0));
        assert_eq!(total.since(&before), total);
        let own = Usage {
            input: 1,
            output: 1,
            ..Usage::default()
        };
        assert_eq!(total.add_usage(&own).output, 41);

        // One call without a price makes the total unknown, not too low.
        sum.add(&ReportedUsage {
            cost_usd: None,
            ..r
        });
        assert_eq!(sum.total().add_cost(Some(1.0)), None);
        assert_eq!(Delegated::default().add_cost(Some(1.0)), Some(1.0));
    }

    #[test]
    fn a_report_round_trips_through_json() {
        let r = ReportedUsage {
            input_tokens: 1,
            output_tokens: 2,
            cache_read_tokens: 3,
            cache_creation_tokens: 4,
            cost_usd: None,
        };
        let v = serde_json::to_value(r).unwrap();
        assert!(v.get("cost_usd").is_none(), "{v}");
        let meta = json!({ USAGE_META: v });
        assert_eq!(ReportedUsage::from_result_meta(Some(&meta)), Some(r));
    }
}
