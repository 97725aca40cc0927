//! A conversation and its budget, and what a compaction of it is asked to do. The agent's side
//! of compaction (running the stages, asking the model for the summary) is in
//! the `compaction` module; this module imports nothing of the loop, so the loop can use it.

use tern_model::Message;

use super::context::budget::Budget;

/// The transcript, its token budget, and whether it was rewritten since it was last saved.
pub struct Conversation {
    pub transcript: Vec<Message>,
    pub budget: Budget,
    /// Allow the summary stage (`[context] summarize`).
    pub summarize: bool,
    /// A compaction rewrote the transcript: save it whole, not just what was appended.
    pub compacted: bool,
}

/// Why a compaction runs (the event's own type).
pub use tern_protocol::CompactionReason as Reason;

/// What a compaction is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    pub reason: Reason,
    /// What the summary must keep (`/compact FOCUS`).
    pub focus: Option<&'a str>,
    /// Tokens to aim for; the budget's target when `None`.
    pub target: Option<u64>,
}

impl Ask<'static> {
    /// A compaction for `reason`, aiming for the budget's target.
    pub fn new(reason: Reason) -> Self {
        Ask {
            reason,
            focus: None,
            target: None,
        }
    }
}

impl Conversation {
    pub fn new(transcript: Vec<Message>, budget: Budget, summarize: bool) -> Self {
        Self {
            transcript,
            budget,
            summarize,
            compacted: false,
        }
    }
}
