//! What the loop does when the provider refuses a request as longer than its context window
//! (issue 23, item 3): learn the window and the provider's count from the refusal, compact, and —
//! because compaction keeps the newest turn verbatim — cut the newest tool results down to head
//! and tail (the whole of each kept in a file the model is told about) until the request fits.
//! The refused request is never sent again unchanged: when nothing could be made shorter the turn
//! ends with an error that says what to change.

use std::path::PathBuf;

use tern_gateway::cap::Spill;
use tern_model::{Message, ModelError, ToolSpec, UserContent};
use tern_protocol::{Event, Usage};
use tokio_util::sync::CancellationToken;

use super::{
    conversation::{Ask, Conversation, Reason},
    run_loop::Agent,
};

/// A result is never cut below this many characters: the model must still see what it was.
const MIN_KEPT_CHARS: usize = 400;

impl Agent {
    /// Makes the next request shorter than the one `refusal` refused. `Err` carries the message
    /// the turn ends with when it cannot.
    pub(super) async fn shrink_after_overflow(
        &self,
        conv: &mut Conversation,
        tools: &[ToolSpec],
        refusal: &ModelError,
        estimate: u64,
        usage: &mut Usage,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let overflow = refusal.overflow().copied();
        let window = overflow
            .and_then(|o| o.window)
            .or_else(|| tern_model::error::overflow_limit(&refusal.message()));
        if let Some(window) = window {
            // Learned for the rest of the session: the next requests are budgeted against it.
            conv.budget.set_window(window);
        }
        if let Some(prompt) = overflow.and_then(|o| o.prompt_tokens) {
            // The server's own count of what it refused: calibrates tern's counting.
            conv.budget.observe(prompt);
        }
        let before = fingerprint(&conv.transcript);
        let target = conv.budget.target().map(|t| t / 2).or(Some(estimate / 3));
        let ask = Ask {
            target,
            ..Ask::new(Reason::Overflow)
        };
        let after = self.compact(conv, tools, ask, usage, cancel).await;
        // What the retry must fit in: the window the refusal named, less a tenth for counting
        // error; a refusal naming none proves only that the window is smaller than what was sent,
        // so half of that.
        let usable = conv.budget.usable().map(|u| u - u / 10);
        let fit = match (window, usable) {
            (Some(_), Some(u)) => u,
            (_, Some(u)) => u.min(estimate / 2),
            (_, None) => estimate / 2,
        }
        .max(1);
        if after > fit || fingerprint(&conv.transcript) == before {
            let cut = self.cut_newest_results(conv, tools, fit);
            if cut > 0 {
                let now = conv
                    .budget
                    .estimate(&self.settings.system, tools, &conv.transcript);
                self.bus.emit(Event::Notice {
                    message: format!(
                        "the newest tool result{} did not fit the context window: cut to head \
                         and tail ({after} → {now} tokens estimated)",
                        if cut == 1 { "" } else { "s" }
                    ),
                });
            }
        }
        if fingerprint(&conv.transcript) == before {
            let window = conv
                .budget
                .limits()
                .window
                .map_or_else(|| "unknown".to_owned(), |w| w.to_string());
            return Err(format!(
                "model request failed: {refusal}\nThe request is longer than the model's context \
                 window ({window} tokens) and nothing in it can be shortened further.\nhint: \
                 start the server with a larger context (llama-server -c N, ollama num_ctx, vLLM \
                 --max-model-len) and set [model] context_window, or lower [model] max_tokens"
            ));
        }
        Ok(())
    }

    /// Cuts the tool results of the newest user turn, largest first, until the request is
    /// estimated at `fit` tokens or less (or each is at its floor). Returns how many were cut.
    fn cut_newest_results(&self, conv: &mut Conversation, tools: &[ToolSpec], fit: u64) -> usize {
        let system = &self.settings.system;
        let Some(last) = conv.transcript.len().checked_sub(1) else {
            return 0;
        };
        let tokenizer = conv.budget.tokenizer();
        let mut order: Vec<(usize, usize)> = match &conv.transcript[last] {
            Message::User { content } => content
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match c {
                    UserContent::ToolResult(r) if r.content.len() > MIN_KEPT_CHARS => {
                        Some((i, r.content.len()))
                    }
                    _ => None,
                })
                .collect(),
            Message::Assistant { .. } => return 0,
        };
        order.sort_by_key(|o| std::cmp::Reverse(o.1));
        let mut cut = 0;
        for (index, _) in order {
            let estimate = conv.budget.estimate(system, tools, &conv.transcript);
            if estimate <= fit {
                break;
            }
            let excess = estimate - fit;
            let Message::User { content } = &mut conv.transcript[last] else {
                break;
            };
            let UserContent::ToolResult(result) = &mut content[index] else {
                continue;
            };
            let chars = result.content.chars().count();
            let tokens = tokenizer.count(&result.content).max(1);
            // Characters per token of this very text, so the cut lands near the excess.
            let per_token = chars as f64 / tokens as f64;
            let keep_tokens = tokens.saturating_sub(excess + excess / 10);
            let keep = ((keep_tokens as f64 * per_token) as usize).max(MIN_KEPT_CHARS);
            if keep >= chars {
                continue;
            }
            let spill = self.settings.spill_dir.as_ref().map(|dir| {
                let path = spill_file(dir, &result.call_id);
                let written = tern_gateway::cap::write_spill(&path, &result.content);
                (path, written)
            });
            let error = match &spill {
                Some((_, Err(e))) => Some(e.to_string()),
                _ => None,
            };
            let where_ = match (&spill, &error) {
                (Some((path, Ok(()))), _) => {
                    Spill::of(Ok(path.as_path()), self.settings.spill_readable)
                }
                (_, Some(e)) => Spill::Failed(e),
                _ => Spill::None,
            };
            let capped = tern_gateway::cap::cap(&result.content, keep, where_);
            result.content = format!(
                "{}\n\n[tern: this result was cut to fit the model's context window]",
                capped.text
            );
            cut += 1;
            conv.budget.forget_from(last);
            conv.compacted = true;
        }
        cut
    }
}

/// `<spill dir>/<call id>.context.txt`: beside the gateway's own spill of the same call (which
/// holds the tool's whole output when the gateway capped it), never over it.
fn spill_file(dir: &std::path::Path, call_id: &str) -> PathBuf {
    let safe: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    dir.join(format!("{safe}.context.txt"))
}

/// Identity of a transcript's content, to know whether anything changed.
fn fingerprint(transcript: &[Message]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_vec(transcript)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}
