//! Token counts, and what they cost.

use serde::{Deserialize, Serialize};

/// Token counts for one model turn (or a sum of turns).
///
/// `input` counts only the prompt tokens that were neither read from nor written to the cache, so
/// the whole prompt is `input + cache_read + cache_creation` (Anthropic's convention; OpenAI's
/// `prompt_tokens` is split the same way by its adapter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Prompt tokens served from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation: u64,
}

impl Usage {
    /// All prompt tokens, cached or not: what counts against the context window.
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_read + self.cache_creation
    }

    /// Adds `other` to `self`, field by field.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_creation += other.cache_creation;
    }

    /// The share of the prompt served from the cache, 0–100.
    pub fn cache_hit_percent(&self) -> f64 {
        match self.total_input() {
            0 => 0.0,
            total => self.cache_read as f64 * 100.0 / total as f64,
        }
    }
}

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached prompt tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Prompt tokens read from the cache (default: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache (default: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    /// The cost in US dollars of `usage`.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input, self.input)
            + per(usage.output, self.output)
            + per(usage.cache_read, self.cache_read.unwrap_or(self.input))
            + per(usage.cache_creation, self.cache_write.unwrap_or(self.input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_hit_rate() {
        let mut u = Usage {
            input: 10,
            output: 5,
            cache_read: 30,
            cache_creation: 0,
        };
        u.add(&Usage {
            input: 0,
            output: 1,
            cache_read: 40,
            cache_creation: 20,
        });
        assert_eq!(u.total_input(), 100);
        assert_eq!(u.output, 6);
        assert!((u.cache_hit_percent() - 70.0).abs() < 1e-9);
        assert_eq!(Usage::default().cache_hit_percent(), 0.0);
    }
}
