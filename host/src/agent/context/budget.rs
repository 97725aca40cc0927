//! The context window as a budget: how many tokens the next request will take, against how many
//! the model accepts.
//!
//! Counts come from the model's tokenizer (or an estimate, for Claude) and are calibrated against
//! the prompt size the provider reports after each request, so the framing the provider adds
//! (roles, tool-schema rendering) is accounted for without knowing its details. Messages are
//! counted once, when they join the transcript; a step costs the count of what it added.

use tern_model::{Message, ToolSpec, tokens::Tokenizer};

/// How full the window may get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The model's context window, when known.
    pub window: Option<u64>,
    /// Tokens kept free for the answer (`max_tokens`).
    pub reserve: u64,
    /// Share of the usable window at which to compact.
    pub compact_at: f64,
    /// Share of the usable window a compaction aims for.
    pub compact_to: f64,
}

/// Where the tokens of a request go (the `/context` view).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakdown {
    pub system: u64,
    pub tools: u64,
    /// Conversation text and tool calls.
    pub history: u64,
    /// Tool results.
    pub tool_output: u64,
}

impl Breakdown {
    pub fn total(&self) -> u64 {
        self.system + self.tools + self.history + self.tool_output
    }
}

/// Token accounting for one conversation.
#[derive(Debug)]
pub struct Budget {
    tokenizer: Tokenizer,
    limits: Limits,
    /// Provider-reported prompt tokens per counted token (moving average).
    calibration: f64,
    /// Raw counts of the transcript's messages, in order: (history, tool output).
    counts: Vec<(u64, u64)>,
    /// Raw counts of the system prompt and tool table, and what they were counted from.
    fixed: Option<(u64, u64, u64)>,
    /// The raw count of the last request sent, to calibrate against its reported usage.
    sent: Option<u64>,
}

impl Budget {
    pub fn new(tokenizer: Tokenizer, limits: Limits) -> Self {
        Self {
            tokenizer,
            limits,
            // Until the first response, assume the provider adds a tenth in framing.
            calibration: 1.1,
            counts: Vec::new(),
            fixed: None,
            sent: None,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Learns the window later (from a local server that reports it).
    pub fn set_window(&mut self, window: u64) {
        self.limits.window = Some(window);
    }

    /// Prompt tokens the window leaves once the answer's share is set aside.
    pub fn usable(&self) -> Option<u64> {
        self.limits
            .window
            .map(|w| w.saturating_sub(self.limits.reserve))
    }

    /// Compact before a request estimated above this.
    pub fn threshold(&self) -> Option<u64> {
        self.usable()
            .map(|u| (u as f64 * self.limits.compact_at) as u64)
    }

    /// What a compaction aims for.
    pub fn target(&self) -> Option<u64> {
        self.usable()
            .map(|u| (u as f64 * self.limits.compact_to) as u64)
    }

    /// Forgets the counts of `transcript[from..]` (they were rewritten by a compaction).
    pub fn forget_from(&mut self, from: usize) {
        self.counts.truncate(from);
    }

    /// Counts the messages that joined `transcript` since the last call.
    fn sync(&mut self, transcript: &[Message]) {
        if self.counts.len() > transcript.len() {
            self.counts.truncate(transcript.len());
        }
        for message in &transcript[self.counts.len()..] {
            self.counts.push(split(&self.tokenizer, message));
        }
    }

    /// Raw counts of the system prompt and tools, recounted only when they change (compared by
    /// their lengths and a cheap fingerprint).
    fn fixed(&mut self, system: &[String], tools: &[ToolSpec]) -> (u64, u64) {
        let key = fingerprint(system, tools);
        match self.fixed {
            Some((k, s, t)) if k == key => (s, t),
            _ => {
                let s = self.tokenizer.system(system);
                let t = tools.iter().map(|tool| self.tokenizer.tool(tool)).sum();
                self.fixed = Some((key, s, t));
                (s, t)
            }
        }
    }

    /// The calibrated breakdown of a request built from these parts.
    pub fn breakdown(
        &mut self,
        system: &[String],
        tools: &[ToolSpec],
        transcript: &[Message],
    ) -> Breakdown {
        self.sync(transcript);
        let (system, tools) = self.fixed(system, tools);
        let (history, output) = self
            .counts
            .iter()
            .fold((0, 0), |(h, o), (mh, mo)| (h + mh, o + mo));
        let c = |n: u64| (n as f64 * self.calibration).ceil() as u64;
        Breakdown {
            system: c(system),
            tools: c(tools),
            history: c(history),
            tool_output: c(output),
        }
    }

    /// The calibrated size of the request about to be sent, remembered for [`Budget::observe`].
    pub fn estimate(
        &mut self,
        system: &[String],
        tools: &[ToolSpec],
        transcript: &[Message],
    ) -> u64 {
        let b = self.breakdown(system, tools, transcript);
        let raw = (b.total() as f64 / self.calibration).round() as u64;
        self.sent = Some(raw);
        b.total()
    }

    /// The provider said the last request's prompt took `reported` tokens: learn from it.
    pub fn observe(&mut self, reported: u64) {
        let Some(raw) = self.sent.take().filter(|r| *r > 0) else {
            return;
        };
        if reported == 0 {
            return; // a provider (or a stub) that reports no usage teaches nothing
        }
        let ratio = (reported as f64 / raw as f64).clamp(0.5, 4.0);
        self.calibration = 0.5 * self.calibration + 0.5 * ratio;
    }
}

/// A message's raw tokens, as (history, tool output).
fn split(tokenizer: &Tokenizer, message: &Message) -> (u64, u64) {
    use tern_model::UserContent;
    match message {
        Message::User { content } => {
            let output: u64 = content
                .iter()
                .filter(|c| matches!(c, UserContent::ToolResult(_)))
                .map(|c| {
                    tokenizer.message(&Message::User {
                        content: vec![c.clone()],
                    })
                })
                .sum();
            let total = tokenizer.message(message);
            (total.saturating_sub(output), output.min(total))
        }
        Message::Assistant { .. } => (tokenizer.message(message), 0),
    }
}

fn fingerprint(system: &[String], tools: &[ToolSpec]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    for s in system {
        s.hash(&mut h);
    }
    for t in tools {
        t.name.hash(&mut h);
        t.description.len().hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(window: u64) -> Budget {
        Budget::new(
            Tokenizer::Estimate,
            Limits {
                window: Some(window),
                reserve: 1_000,
                compact_at: 0.8,
                compact_to: 0.5,
            },
        )
    }

    #[test]
    fn thresholds_leave_room_for_the_answer() {
        let b = budget(11_000);
        assert_eq!(b.usable(), Some(10_000));
        assert_eq!(b.threshold(), Some(8_000));
        assert_eq!(b.target(), Some(5_000));
    }

    #[test]
    fn estimates_calibrate_towards_what_the_provider_reports() {
        let mut b = budget(100_000);
        let transcript = vec![Message::user_text("x".repeat(3_500))];
        let first = b.estimate(&[], &[], &transcript);
        // The provider counts twice what we do.
        let raw = (first as f64 / 1.1).round() as u64;
        for _ in 0..8 {
            b.estimate(&[], &[], &transcript);
            b.observe(raw * 2);
        }
        let later = b.estimate(&[], &[], &transcript);
        assert!(
            (later as f64 - (raw * 2) as f64).abs() < raw as f64 * 0.02,
            "{later} vs {}",
            raw * 2
        );
    }

    #[test]
    fn messages_are_counted_once_and_recounted_after_a_rewrite() {
        let mut b = budget(100_000);
        let mut transcript = vec![Message::user_text("a".repeat(350))];
        let one = b.breakdown(&[], &[], &transcript).total();
        transcript.push(Message::assistant_text("b".repeat(350)));
        let two = b.breakdown(&[], &[], &transcript).total();
        assert!(two > one);
        transcript[0] = Message::user_text("short");
        b.forget_from(0);
        let three = b.breakdown(&[], &[], &transcript).total();
        assert!(three < two);
    }
}
