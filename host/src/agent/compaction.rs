//! The agent's side of compaction: deciding how far to go, running the stages, asking the model
//! for the summary, reporting what happened.

use futures::StreamExt;
use tern_model::{ModelEvent, ToolSpec};
use tern_protocol::{CompactionStage, Event, Usage};
use tokio_util::sync::CancellationToken;

use super::{
    context::compact::{add_todo_note, apply_summary, elide, summary_request, tail_start},
    conversation::{Ask, Conversation, Reason},
    run_loop::Agent,
};

impl Agent {
    /// Compacts `conv` towards `target` tokens (the budget's target unless given), eliding
    /// first and summarizing when that is not enough (always, for [`Reason::Manual`]). Reports
    /// each stage as an event; the summary's tokens are added to `usage`. Returns the estimate
    /// after.
    pub async fn compact(
        &self,
        conv: &mut Conversation,
        tools: &[ToolSpec],
        ask: Ask<'_>,
        usage: &mut Usage,
        cancel: &CancellationToken,
    ) -> u64 {
        let Ask {
            reason,
            focus,
            target,
        } = ask;
        if reason != Reason::Manual
            && let Some(before) = &self.before_compact
        {
            before().await;
        }
        let system = &self.settings.system;
        let before = conv.budget.estimate(system, tools, &conv.transcript);
        let target = target.or(conv.budget.target()).unwrap_or(before / 2).max(1);
        // The newest turns stay verbatim: up to half of what the compaction aims for — only
        // the last turn when the user asks (they want it smaller now) or the provider refused.
        let keep = match reason {
            Reason::Threshold => target / 2,
            Reason::Overflow | Reason::Manual => 0,
        };

        // Stage 1: elide old tool output.
        let counts: Vec<u64> = conv
            .transcript
            .iter()
            .map(|m| conv.budget.tokenizer().message(m))
            .collect();
        let tail = tail_start(&conv.transcript, |i| counts[i], keep);
        let (elided, _) = elide(&mut conv.transcript, tail);
        let mut after = before;
        if elided > 0 {
            conv.budget.forget_from(0);
            conv.compacted = true;
            after = conv.budget.estimate(system, tools, &conv.transcript);
            self.bus.emit(Event::Compaction {
                reason,
                stage: CompactionStage::Elide,
                before_tokens: before,
                after_tokens: after,
                elided_results: elided,
                summarized_messages: 0,
                summary: None,
            });
        }
        let summarize = conv.summarize && (after > target || reason == Reason::Manual);
        if !summarize || tail <= 1 {
            return after;
        }

        // Stage 2: the model summarizes what precedes the tail.
        let max_chars = (conv.budget.usable().unwrap_or(before) as usize).saturating_mul(2);
        let request = summary_request(&conv.transcript, tail, focus, max_chars.max(8_000));
        match self.summarize(&request, usage, cancel).await {
            Some(summary) => {
                let from = after;
                let replaced = apply_summary(&mut conv.transcript, tail, &summary);
                // The list lives in the todo server; what the model knew of it was in the
                // results just summarized away, so the summary message carries it on.
                if let Some(list) = self.tools.todo().filter(|l| !l.todos.is_empty()) {
                    add_todo_note(&mut conv.transcript, &list);
                }
                conv.budget.forget_from(0);
                conv.compacted = true;
                after = conv.budget.estimate(system, tools, &conv.transcript);
                self.bus.emit(Event::Compaction {
                    reason,
                    stage: CompactionStage::Summarize,
                    before_tokens: from,
                    after_tokens: after,
                    elided_results: 0,
                    summarized_messages: replaced,
                    summary: Some(summary),
                });
            }
            None => self.bus.emit(Event::Notice {
                message: "the conversation could not be summarized; older tool output was \
                          elided instead"
                    .into(),
            }),
        }
        after
    }

    /// Asks the model for a summary; `None` when it fails (the caller goes on without one).
    async fn summarize(
        &self,
        request: &tern_model::ModelRequest,
        usage: &mut Usage,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let mut stream = self
            .model
            .stream(request, cancel.child_token())
            .await
            .ok()?;
        let mut text = String::new();
        while let Some(event) = stream.next().await {
            match event.ok()? {
                ModelEvent::TextDelta(t) => text.push_str(&t),
                ModelEvent::Usage(u) => usage.add(&u),
                ModelEvent::Retry {
                    discard_partial: true,
                    ..
                } => text.clear(),
                ModelEvent::Completed { .. } => break,
                _ => {}
            }
        }
        let text = text.trim().to_string();
        (!text.is_empty()).then_some(text)
    }
}
