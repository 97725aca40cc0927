//! The context window as a budget: how many tokens the next request will take, against how many
//! the model accepts.
//!
//! Counts come from the model's tokenizer (or an estimate, for Claude) and are calibrated against
//! the prompt size the provider reports after each request, so the framing the provider adds
//! (roles, tool-schema rendering) is accounted for without knowing its details. Messages are
//! counted once, when they join the transcript; a step costs the count of what it added.
//!
//! The vocabulary of an exact tokenizer is built on a spare thread while the servers start
//! ([`Tokenizer::load`]); the first request must not wait for it. Until it is ready, counts are
//! estimates, and every decision is taken as the real counts would take it: the compaction check
//! before a request uses the estimate only when the byte bound ([`Tokenizer::Bound`], never below
//! the real count) is under the threshold too, else it waits for the vocabulary; and a request
//! sent with estimated counts calibrates with its real count, worked out once the vocabulary is
//! there. Once it is ready, every message is counted again with it, so from then on the budget
//! is the one an exact count from the start would have given.

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
    sent: Option<Sent>,
    /// `counts` and `fixed` were made with the estimate while the vocabulary loads.
    estimated: bool,
    /// A reported prompt size for a request whose real count is not known yet.
    pending: Option<(u64, Parts)>,
}

/// The last request sent, as its calibration needs it.
#[derive(Debug)]
enum Sent {
    /// Counted with the model's tokenizer (or the estimate, for a model without one).
    Raw(u64),
    /// Counted with the estimate while the vocabulary loads: the parts to count it again.
    Estimated(Parts),
}

/// What a request was built from, kept to count it once the vocabulary is ready (only for the
/// requests sent before: usually the first).
#[derive(Debug)]
struct Parts {
    system: Vec<String>,
    tools: Vec<ToolSpec>,
    /// The transcript's first `messages` messages.
    messages: usize,
    /// The calibration the request was estimated with.
    calibration: f64,
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
            estimated: false,
            pending: None,
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

    /// Puts back a window [`Self::limits`] reported earlier (a one-turn model going away).
    pub fn restore_window(&mut self, window: Option<u64>) {
        self.limits.window = window;
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
        // A request whose messages were rewritten can no longer be counted again.
        if self
            .pending
            .as_ref()
            .is_some_and(|(_, p)| p.messages > from)
        {
            self.pending = None;
        }
        if matches!(&self.sent, Some(Sent::Estimated(p)) if p.messages > from) {
            self.sent = None;
        }
    }

    /// The tokenizer to count with now: the estimate while the vocabulary loads; once it is
    /// ready, the counts made with the estimate are dropped to be made again.
    fn counter(&mut self) -> Tokenizer {
        if !self.tokenizer.is_ready() {
            self.estimated = true;
            return Tokenizer::Estimate;
        }
        if self.estimated {
            self.estimated = false;
            self.counts.clear();
            self.fixed = None;
        }
        self.tokenizer
    }

    /// Counts the messages that joined `transcript` since the last call.
    fn sync(&mut self, transcript: &[Message], counter: Tokenizer) {
        if self.counts.len() > transcript.len() {
            self.counts.truncate(transcript.len());
        }
        for message in &transcript[self.counts.len()..] {
            self.counts.push(split(&counter, message));
        }
    }

    /// Raw counts of the system prompt and tools, recounted only when they change (compared by
    /// their lengths and a cheap fingerprint).
    fn fixed(&mut self, system: &[String], tools: &[ToolSpec], counter: Tokenizer) -> (u64, u64) {
        let key = fingerprint(system, tools);
        match self.fixed {
            Some((k, s, t)) if k == key => (s, t),
            _ => {
                let s = counter.system(system);
                let t = tools.iter().map(|tool| counter.tool(tool)).sum();
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
        self.calibrate_pending(transcript);
        // One tokenizer for the whole breakdown: the vocabulary may become ready midway.
        let counter = self.counter();
        self.sync(transcript, counter);
        let (system, tools) = self.fixed(system, tools, counter);
        let (history, output) = sum(&self.counts);
        calibrated(self.calibration, system, tools, history, output)
    }

    /// Learns from a reported prompt size whose request was sent with estimated counts: its
    /// real count is made now (waiting for the vocabulary, which a model's answer has
    /// practically always given time to load) the way [`Budget::estimate`] would have made it.
    fn calibrate_pending(&mut self, transcript: &[Message]) {
        let Some((reported, parts)) = self.pending.take() else {
            return;
        };
        if parts.messages > transcript.len() {
            return;
        }
        self.tokenizer.load();
        let counter = self.counter();
        self.sync(transcript, counter);
        let (history, output) = sum(&self.counts[..parts.messages]);
        let system = self.tokenizer.system(&parts.system);
        let tools = parts.tools.iter().map(|t| self.tokenizer.tool(t)).sum();
        let total = calibrated(parts.calibration, system, tools, history, output).total();
        let raw = (total as f64 / parts.calibration).round() as u64;
        self.learn(raw, reported);
    }

    /// The calibrated size of the request about to be sent, remembered for [`Budget::observe`].
    pub fn estimate(
        &mut self,
        system: &[String],
        tools: &[ToolSpec],
        transcript: &[Message],
    ) -> u64 {
        let mut b = self.breakdown(system, tools, transcript);
        if self.estimated
            && let Some(threshold) = self.threshold()
            && self.bound(system, tools, transcript) > threshold
        {
            // Only the real count can tell whether this request needs a compaction.
            self.tokenizer.load();
            b = self.breakdown(system, tools, transcript);
        }
        self.sent = Some(if self.estimated {
            Sent::Estimated(Parts {
                system: system.to_vec(),
                tools: tools.to_vec(),
                messages: transcript.len(),
                calibration: self.calibration,
            })
        } else {
            Sent::Raw((b.total() as f64 / self.calibration).round() as u64)
        });
        b.total()
    }

    /// The calibrated size of a request under [`Tokenizer::Bound`]: at least what the real
    /// count will say.
    fn bound(&self, system: &[String], tools: &[ToolSpec], transcript: &[Message]) -> u64 {
        let bound = Tokenizer::Bound;
        let counts: Vec<(u64, u64)> = transcript.iter().map(|m| split(&bound, m)).collect();
        let (history, output) = sum(&counts);
        let tools = tools.iter().map(|t| bound.tool(t)).sum();
        calibrated(
            self.calibration,
            bound.system(system),
            tools,
            history,
            output,
        )
        .total()
    }

    /// The provider said the last request's prompt took `reported` tokens: learn from it.
    pub fn observe(&mut self, reported: u64) {
        match self.sent.take() {
            Some(Sent::Raw(raw)) => self.learn(raw, reported),
            Some(Sent::Estimated(parts)) if reported > 0 => {
                self.pending = Some((reported, parts));
            }
            Some(Sent::Estimated(_)) | None => {}
        }
    }

    fn learn(&mut self, raw: u64, reported: u64) {
        if raw == 0 || reported == 0 {
            return; // a provider (or a stub) that reports no usage teaches nothing
        }
        let ratio = (reported as f64 / raw as f64).clamp(0.5, 4.0);
        self.calibration = 0.5 * self.calibration + 0.5 * ratio;
    }
}

/// The (history, tool output) totals of some messages' counts.
fn sum(counts: &[(u64, u64)]) -> (u64, u64) {
    counts
        .iter()
        .fold((0, 0), |(h, o), (mh, mo)| (h + mh, o + mo))
}

/// Raw counts scaled by `calibration`, each part rounded up.
fn calibrated(calibration: f64, system: u64, tools: u64, history: u64, output: u64) -> Breakdown {
    let c = |n: u64| (n as f64 * calibration).ceil() as u64;
    Breakdown {
        system: c(system),
        tools: c(tools),
        history: c(history),
        tool_output: c(output),
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

    fn exact(encoding: &'static str, window: u64) -> Budget {
        Budget::new(
            Tokenizer::Bpe(encoding),
            Limits {
                window: Some(window),
                reserve: 1_000,
                compact_at: 0.8,
                compact_to: 0.5,
            },
        )
    }

    /// Each test below uses a vocabulary no other test of this crate builds, so it starts
    /// unbuilt whatever the order the tests run in.
    #[test]
    fn a_request_far_under_the_threshold_does_not_wait_for_the_vocabulary() {
        let tokenizer = Tokenizer::Bpe("r50k_base");
        assert!(!tokenizer.is_ready());
        let mut b = exact("r50k_base", 100_000);
        let small = vec![Message::user_text("fix the failing test in src/lib.rs")];
        let first = b.estimate(&["you are an agent".into()], &[], &small);
        assert!(!tokenizer.is_ready(), "the first request was not held back");
        assert!(first > 0);
        // A request whose byte bound passes the threshold is counted with the vocabulary: the
        // compaction check sees the real count.
        let big = vec![Message::user_text("word ".repeat(20_000))];
        let counted = b.estimate(&[], &[], &big);
        assert!(tokenizer.is_ready());
        let mut fresh = exact("r50k_base", 100_000);
        assert_eq!(counted, fresh.estimate(&[], &[], &big));
    }

    #[test]
    fn a_request_sent_before_the_vocabulary_calibrates_like_an_exact_one() {
        let tokenizer = Tokenizer::Bpe("p50k_edit");
        assert!(!tokenizer.is_ready());
        let system = vec!["you are a careful agent".to_string()];
        let mut transcript = vec![Message::user_text("list the files, then read Cargo.toml")];
        let mut early = exact("p50k_edit", 100_000);
        early.estimate(&system, &[], &transcript);
        assert!(!tokenizer.is_ready(), "sent with the estimate");
        tokenizer.load();
        let mut exact_budget = exact("p50k_edit", 100_000);
        exact_budget.estimate(&system, &[], &transcript);
        // The provider reports its count; both budgets learn from it.
        early.observe(57);
        exact_budget.observe(57);
        transcript.push(Message::assistant_text(
            "reading Cargo.toml now ".repeat(40),
        ));
        let a = early.estimate(&system, &[], &transcript);
        let b = exact_budget.estimate(&system, &[], &transcript);
        assert_eq!(a, b, "the same budget once the vocabulary is there");
        assert_eq!(
            early.breakdown(&system, &[], &transcript),
            exact_budget.breakdown(&system, &[], &transcript)
        );
    }
}
